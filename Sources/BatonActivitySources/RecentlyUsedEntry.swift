#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One document in GTK's `recently-used.xbel` (issue 27 item 2): a `<bookmark>` with the freedesktop metadata GTK
/// writes, as ``RecentlyUsedReader`` read it.
public struct RecentlyUsedEntry: Sendable, Hashable {
    /// One application that opened or saved the document (`<bookmark:application>`).
    public struct Application: Sendable, Hashable {
        /// The name the application registered with: its desktop file id when it has one (`org.gnome.TextEditor`),
        /// else its program name (`gedit`) or display name (`LibreOffice Writer`).
        public var name: String
        /// The command line it registered, as GLib reads it back (`g_shell_unquote` of the stored text): a desktop
        /// entry `Exec`-like line with `%u` or `%f` (`gedit %u`). Information only: Baton launches through the desktop
        /// file (``DesktopEntry``, ``ExecLine``), never this text, which any program can write.
        public var exec: String
        /// When this application last used the document; nil when the file does not say.
        public var modified: Date?
        /// How many times it did.
        public var count: Int

        /// An application's record, as the reader makes one.
        public init(name: String, exec: String, modified: Date?, count: Int) {
            self.name = name
            self.exec = exec
            self.modified = modified
            self.count = count
        }
    }

    /// The document's URL as written (percent-encoded): `file:///home/me/Sync/report.odt`, or any other scheme.
    public var url: String
    /// Its MIME type (`application/vnd.oasis.opendocument.text`); nil when none is recorded.
    public var mimeType: String?
    /// The display name an application gave it (`<title>`); nil for most entries.
    public var title: String?
    /// When it was first added, last modified and last visited; nil when the file does not say.
    public var added: Date?
    public var modified: Date?
    public var visited: Date?
    /// The applications that used it, in the file's order.
    public var applications: [Application]
    /// GTK's groups (`<bookmark:group>`).
    public var groups: [String]
    /// Whether it is private to the applications listed (`<bookmark:private/>`): GTK shows it to no other.
    public var isPrivate: Bool

    /// The application that used it last (the latest `modified`; the first listed on a tie or none at all).
    public var lastApplication: Application? {
        applications.enumerated().max { left, right in
            let (a, b) = (left.element.modified ?? .distantPast, right.element.modified ?? .distantPast)
            return a != b ? a < b : left.offset > right.offset
        }?.element
    }

    /// When it was last touched: the latest of its own dates and its applications'.
    public var lastUsed: Date? {
        ([modified, visited, added] + applications.map(\.modified)).compactMap { $0 }.max()
    }

    /// Its URL checked as an activity URL.
    /// - Throws: ``ActivitySourceError`` `urlRefused` (see ``ActivityURL``).
    public func activityURL() throws -> ActivityURL { try ActivityURL(url) }
}
