import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads GTK's `recently-used.xbel` (`$XDG_DATA_HOME/recently-used.xbel`, GLib's `GBookmarkFile` format, the
/// freedesktop Desktop Bookmark Spec) into ``RecentlyUsedEntry`` values (issue 27 item 2).
///
/// The file is written by every GTK application the person runs, so it is input from many programs: the reader is
/// strict and bounded (``Limits``), refuses a `DOCTYPE` and any entity but XML's five (no expansion at all), and
/// throws ``ActivitySourceError``, never traps (Fuzz/XbelFuzzer.swift). Elements it does not know are skipped.
public enum RecentlyUsedReader {
    /// The bounds of one file.
    public struct Limits: Sendable, Hashable {
        /// The largest file read. GTK drops entries older than `gtk-recent-files-max-age` (30 days), so real files are
        /// tens to hundreds of KiB; 8 MiB holds about 30,000 entries and reading it costs a few tens of MiB at most.
        public var maximumBytes: Int
        /// The most `<bookmark>` entries: far above a month of documents, and what 8 MiB can hold anyway.
        public var maximumEntries: Int
        /// The most applications on one entry: GTK adds one per program that opened it; a dozen is already many.
        public var maximumApplicationsPerEntry: Int
        /// The deepest nesting: GLib writes 6 levels (`xbel/bookmark/info/metadata/applications/application`).
        public var maximumDepth: Int
        /// The longest attribute value in bytes after unescaping: a URL of a path at `PATH_MAX`, percent-encoded, fits.
        public var maximumAttributeLength: Int
        /// The most attributes on one element: GLib writes at most 4 (plus namespace declarations on the root).
        public var maximumAttributes: Int
        /// The longest run of text (a `<title>`, `<desc>` or group name), in bytes.
        public var maximumTextLength: Int

        /// The bounds the agent uses.
        public static let `default` = Limits(
            maximumBytes: 8 << 20, maximumEntries: 20_000, maximumApplicationsPerEntry: 64, maximumDepth: 16,
            maximumAttributeLength: 16 * 1024, maximumAttributes: 32, maximumTextLength: 16 * 1024
        )

        /// Bounds of your own.
        public init(
            maximumBytes: Int, maximumEntries: Int, maximumApplicationsPerEntry: Int, maximumDepth: Int, maximumAttributeLength: Int,
            maximumAttributes: Int, maximumTextLength: Int
        ) {
            self.maximumBytes = maximumBytes
            self.maximumEntries = maximumEntries
            self.maximumApplicationsPerEntry = maximumApplicationsPerEntry
            self.maximumDepth = maximumDepth
            self.maximumAttributeLength = maximumAttributeLength
            self.maximumAttributes = maximumAttributes
            self.maximumTextLength = maximumTextLength
        }
    }

    /// The namespaces GLib writes the freedesktop metadata in (prefixes `bookmark:` and `mime:`, declared on `<xbel>`).
    static let bookmarkNamespace = "http://www.freedesktop.org/standards/desktop-bookmarks"
    static let mimeNamespace = "http://www.freedesktop.org/standards/shared-mime-info"
    /// The `owner` of the `<metadata>` that holds them.
    static let freedesktopOwner = "http://freedesktop.org"

    /// The entries of a `recently-used.xbel`, in the file's order.
    /// - Throws: ``ActivitySourceError``: `tooLarge` over a limit, `malformedXML`, `entityRefused` for a `DOCTYPE` or
    ///   an entity, `invalidBookmark` for a root other than `<xbel>`, a bookmark without `href` or a date GLib would
    ///   not write.
    public static func read(_ data: some Collection<UInt8>, limits: Limits = .default) throws -> [RecentlyUsedEntry] {
        guard data.count <= limits.maximumBytes else {
            throw ActivitySourceError(.tooLarge, "recently-used.xbel is \(Clipping.grouped(data.count)) bytes, more than \(Clipping.grouped(limits.maximumBytes))")
        }
        do {
            var xml = try XMLSubsetReader(
                Array(data),
                limits: .init(
                    maximumBytes: limits.maximumBytes, maximumDepth: limits.maximumDepth, maximumAttributes: limits.maximumAttributes,
                    maximumAttributeLength: limits.maximumAttributeLength, maximumTextLength: limits.maximumTextLength
                )
            )
            var builder = Builder(limits: limits)
            while let event = try xml.next() {
                switch event {
                case .start(let name, let attributes): try builder.start(name, attributes)
                case .end: builder.end()
                case .text(let text): builder.text(text)
                }
            }
            return builder.entries
        } catch let error as XMLReaderError {
            switch error.kind {
            case .tooLarge: throw ActivitySourceError(.tooLarge, error.message)
            case .malformed: throw ActivitySourceError(.malformedXML, error.message)
            case .entityRefused: throw ActivitySourceError(.entityRefused, error.message)
            }
        }
    }

    /// Turns the reader's events into entries: a stack of open elements, each with its namespace resolved.
    private struct Builder {
        /// One open element: its namespace (nil for none), local name, and the prefixes it declared.
        struct Element {
            var namespace: String?
            var local: String
            var prefixes: [String: String]
        }

        let limits: Limits
        var entries: [RecentlyUsedEntry] = []
        var stack: [Element] = []
        var current: RecentlyUsedEntry?
        var inFreedesktopMetadata = false

        init(limits: Limits) { self.limits = limits }

        func namespace(of prefix: String) -> String? {
            stack.reversed().lazy.compactMap { $0.prefixes[prefix] }.first
        }

        mutating func start(_ name: String, _ attributes: [String: String]) throws {
            var prefixes: [String: String] = [:]
            for (key, value) in attributes where key.hasPrefix("xmlns:") { prefixes[String(key.dropFirst(6))] = value }
            let parts = name.split(separator: ":", maxSplits: 1)
            var element = Element(namespace: nil, local: name, prefixes: prefixes)
            if parts.count == 2 {
                let prefix = String(parts[0])
                element.local = String(parts[1])
                element.namespace = prefixes[prefix] ?? namespace(of: prefix)
            }
            let path = stack.map(\.local)
            stack.append(element)
            switch (path, element.namespace, element.local) {
            case ([], nil, "xbel"):
                break
            case ([], _, _):
                throw ActivitySourceError(.invalidBookmark, "the root element is <\(name.clipped(toBytes: 64))>, not <xbel>: not a bookmark file")
            case (["xbel"], nil, "bookmark"):
                guard entries.count < limits.maximumEntries else {
                    throw ActivitySourceError(.tooLarge, "more than \(Clipping.grouped(limits.maximumEntries)) entries in recently-used.xbel")
                }
                guard let href = attributes["href"], !href.isEmpty else {
                    throw ActivitySourceError(.invalidBookmark, "a <bookmark> without its href (entry \(entries.count + 1))")
                }
                current = RecentlyUsedEntry(
                    url: href, mimeType: nil, title: nil, added: try date(attributes["added"], "added"),
                    modified: try date(attributes["modified"], "modified"), visited: try date(attributes["visited"], "visited"),
                    applications: [], groups: [], isPrivate: false
                )
            case (["xbel", "bookmark", "info"], nil, "metadata"):
                inFreedesktopMetadata = attributes["owner"] == RecentlyUsedReader.freedesktopOwner
            case (["xbel", "bookmark", "info", "metadata"], RecentlyUsedReader.mimeNamespace, "mime-type") where inFreedesktopMetadata:
                current?.mimeType = attributes["type"]
            case (["xbel", "bookmark", "info", "metadata", "applications"], RecentlyUsedReader.bookmarkNamespace, "application")
            where inFreedesktopMetadata:
                try application(attributes)
            case (["xbel", "bookmark", "info", "metadata"], RecentlyUsedReader.bookmarkNamespace, "private") where inFreedesktopMetadata:
                current?.isPrivate = true
            default:
                break
            }
        }

        mutating func application(_ attributes: [String: String]) throws {
            guard var entry = current else { return }
            guard entry.applications.count < limits.maximumApplicationsPerEntry else {
                throw ActivitySourceError(.tooLarge, "more than \(limits.maximumApplicationsPerEntry) applications on \(entry.url.clipped(toBytes: 128))")
            }
            guard let name = attributes["name"], !name.isEmpty, let quoted = attributes["exec"] else {
                throw ActivitySourceError(.invalidBookmark, "an application without its name or exec on \(entry.url.clipped(toBytes: 128))")
            }
            // GLib wrote g_shell_quote(exec) and reads back g_shell_unquote(stored).
            let exec = try ShellQuoting.unquote(quoted)
            var modified = try date(attributes["modified"], "modified")
            if modified == nil, let stamp = attributes["timestamp"] {
                // GLib before 2.12 wrote seconds since 1970.
                guard let seconds = Int64(stamp), seconds >= 0, seconds < 253_402_300_800 else {
                    throw ActivitySourceError(.invalidBookmark, "the timestamp \(BatonCoreError.quoted(stamp)) is not seconds since 1970")
                }
                modified = Date(timeIntervalSince1970: Double(seconds))
            }
            let count = attributes["count"].map { Int($0) ?? -1 } ?? 1
            guard count >= 0 else {
                throw ActivitySourceError(.invalidBookmark, "the count \(BatonCoreError.quoted(attributes["count"] ?? "")) is not a number")
            }
            entry.applications.append(.init(name: name, exec: exec, modified: modified, count: count))
            current = entry
        }

        mutating func end() {
            let closed = stack.popLast()
            let path = stack.map(\.local)
            if path == ["xbel"], closed?.local == "bookmark", let entry = current {
                entries.append(entry)
                current = nil
            } else if path == ["xbel", "bookmark", "info"], closed?.local == "metadata" {
                inFreedesktopMetadata = false
            }
        }

        mutating func text(_ text: String) {
            guard let top = stack.last else { return }
            let path = stack.dropLast().map(\.local)
            if path == ["xbel", "bookmark"], top.namespace == nil, top.local == "title" {
                let title = (current?.title ?? "") + text
                // Text may come in pieces (around a comment): the whole is bounded as one piece is.
                if title.utf8.count <= limits.maximumTextLength { current?.title = title }
            } else if inFreedesktopMetadata, top.namespace == RecentlyUsedReader.bookmarkNamespace, top.local == "group",
                path == ["xbel", "bookmark", "info", "metadata", "groups"], (current?.groups.count ?? 0) < limits.maximumApplicationsPerEntry
            {
                current?.groups.append(text)
            }
        }

        func date(_ text: String?, _ what: String) throws -> Date? {
            guard let text else { return nil }
            guard let date = ISO8601Time.date(text) else {
                throw ActivitySourceError(.invalidBookmark, "\(what)=\(BatonCoreError.quoted(text)) is not an ISO 8601 date as GLib writes one")
            }
            return date
        }
    }
}
