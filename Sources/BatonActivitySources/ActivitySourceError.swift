/// Why what an app published about itself (GTK's `recently-used.xbel`, KDE's `RecentDocuments/`, a desktop file's
/// `Exec`, a media player's MPRIS metadata) could not be used: BatonActivitySources' one error type (issue 27 item 4).
///
/// Every reader here takes input another program wrote, possibly a hostile one, so each gets this error, never a trap
/// (Fuzz/XbelFuzzer.swift and Fuzz/MPRISMetadataFuzzer.swift run them). Compare ``code``, not ``message``.
public struct ActivitySourceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as printed.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        /// Input over one of the reader's named limits (size, depth, count, length): read nothing rather than a part.
        public static let tooLarge = Code("activitySourceTooLarge")
        /// XML that is not well-formed where it is read (the byte offset in the message).
        public static let malformedXML = Code("activitySourceMalformedXML")
        /// A `DOCTYPE`, an entity declaration or an entity other than XML's five: never expanded, refused.
        public static let entityRefused = Code("activitySourceEntityRefused")
        /// Well-formed XML that is not a bookmark file as GLib writes it (a bookmark without `href`, a bad date).
        public static let invalidBookmark = Code("activitySourceInvalidBookmark")
        /// A desktop entry (a `.desktop` file) that breaks the Desktop Entry Specification's syntax.
        public static let malformedDesktopEntry = Code("activitySourceMalformedDesktopEntry")
        /// An `Exec` value whose quoting or field codes are invalid: nothing is launched from it.
        public static let invalidExec = Code("activitySourceInvalidExec")
        /// A URL Baton does not offer: a scheme other than http, https and file, `..` in a file path, control characters.
        public static let urlRefused = Code("activitySourceURLRefused")
        /// A media player's metadata or property of the wrong type or outside its range (a position of -1, a NaN rate).
        public static let invalidMetadata = Code("activitySourceInvalidMetadata")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, for a person.
    public var message: String

    /// An error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code)]" }
}
