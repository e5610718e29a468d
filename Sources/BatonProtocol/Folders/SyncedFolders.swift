import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A folder a person keeps in step between their devices (Syncthing, Nextcloud, a network share): the same `id` on
/// every device, each device's own `path` to it (SEMANTICS C9).
public struct SyncedFolder: Sendable, Hashable {
    /// The folder's name, the same on every device: 1-64 of `A-Za-z0-9._-` (Syncthing's ids, `abcd1-xyz23`, pass).
    public let id: String
    /// Where the folder is on this device: absolute, without a trailing slash (`/` alone for the root).
    public let path: String

    /// The longest id: Syncthing's generated ids are 11 characters, labels people choose rarely reach 40.
    public static let maximumIDLength = 64

    /// A folder `id` at `path`.
    /// - Throws: ``BatonProtocolError`` `invalidFolder` for an id outside 1-64 of `A-Za-z0-9._-` or a path that is
    ///   not absolute.
    public init(id: String, path: String) throws {
        try Self.validate(id: id)
        guard path.hasPrefix("/"), !path.utf8.contains(0) else {
            throw BatonProtocolError(.invalidFolder, "the path of folder \(id) must be absolute: \"\(path)\"")
        }
        self.id = id
        self.path = SyncedFolders.lexicallyStandardized(path)
    }

    /// Checks a folder id: 1-64 characters, each a letter, a digit, `.`, `_` or `-`, and not `.` or `..`.
    /// - Throws: ``BatonProtocolError`` `invalidFolder`, naming what is wrong.
    public static func validate(id: String) throws {
        let allowed = id.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
        guard !id.isEmpty, id.utf8.count <= maximumIDLength, allowed, id != ".", id != ".." else {
            throw BatonProtocolError(
                .invalidFolder,
                "\"\(id)\" is not a folder id: use 1-\(maximumIDLength) letters, digits, '.', '_' or '-' (the same id on every device)"
            )
        }
    }
}

/// This device's synced folders, and the mapping of `file:` URLs to the form they travel in and back (C9).
///
/// A `file:` URL inside a folder travels as `baton-folder://ID/relative/path` (each segment percent-encoded:
/// docs/PROTOCOL.md §3.1); the continuing device turns it into its own path of folder `ID`. URLs outside every folder
/// travel unchanged. Pure: the file system is consulted only through the `resolve` function a caller passes.
public struct SyncedFolders: Sendable, Hashable {
    /// The folders by id.
    public private(set) var byID: [String: SyncedFolder]

    /// The travel form's scheme.
    public static let scheme = "baton-folder"

    /// A table of `folders`; a later folder with the same id replaces an earlier one.
    public init(_ folders: [SyncedFolder] = []) {
        byID = [:]
        for folder in folders { byID[folder.id] = folder }
    }

    /// The folders, sorted by id.
    public var folders: [SyncedFolder] { byID.values.sorted { $0.id < $1.id } }

    /// Whether there are no folders.
    public var isEmpty: Bool { byID.isEmpty }

    /// Adds `folder`, replacing one with its id.
    public mutating func add(_ folder: SyncedFolder) { byID[folder.id] = folder }

    /// Removes the folder `id`; false when there was none.
    @discardableResult
    public mutating func remove(id: String) -> Bool { byID.removeValue(forKey: id) != nil }

    // MARK: Paths

    /// The folder holding `path` (absolute, standardized) and the path relative to it ("" for the folder itself).
    /// When folders overlap, the longest matching path wins.
    public func folder(containing path: String) -> (folder: SyncedFolder, relativePath: String)? {
        var best: (folder: SyncedFolder, relativePath: String)?
        for folder in byID.values {
            guard let relative = Self.relativePath(of: path, inside: folder.path) else { continue }
            if let current = best, current.folder.path.utf8.count >= folder.path.utf8.count {
                // Equal paths under two ids: the smaller id, so the choice does not depend on hashing.
                if current.folder.path.utf8.count > folder.path.utf8.count || current.folder.id < folder.id { continue }
            }
            best = (folder, relative)
        }
        return best
    }

    /// `path` relative to `folder` ("" when equal), or nil when it is not inside. Both absolute and standardized.
    public static func relativePath(of path: String, inside folder: String) -> String? {
        // Bytes, as the kernel compares paths: as Characters, a '/' followed by a combining mark is one grapheme that
        // is not "/", and "é" matches "e\u{301}", so a file in the folder looked outside it and a folder of another
        // name looked like it (found by Fuzz/SyncthingConfigFuzzer.swift).
        let path = path.utf8, folder = folder.utf8
        if path.elementsEqual(folder) { return "" }
        guard path.starts(with: folder) else { return nil }
        var rest = path.dropFirst(folder.count)
        if !folder.elementsEqual("/".utf8) {
            guard rest.first == UInt8(ascii: "/") else { return nil }
            rest = rest.dropFirst()
        }
        return String(Substring(rest))
    }

    /// `path` with `.` and empty segments removed and `..` applied, without consulting the file system (a `..` at
    /// the root stays at the root, as the kernel does). A trailing slash is dropped. Segments are split at the byte
    /// `/`, as the kernel splits them, never at Characters.
    public static func lexicallyStandardized(_ path: String) -> String {
        var segments: [Substring] = []
        for segment in path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if segment.elementsEqual(".".utf8) { continue }
            if segment.elementsEqual("..".utf8) {
                _ = segments.popLast()
            } else {
                segments.append(Substring(segment))
            }
        }
        return "/" + segments.joined(separator: "/")
    }

    // MARK: Leaving this device

    /// How `url` travels: its travel form when it is a `file:` URL inside a folder, else `url` unchanged.
    ///
    /// The path is standardized first (so `..` cannot make a path outside a folder look inside it); when that is in
    /// no folder, `resolve` is asked for the path with symbolic links resolved (the agent resolves the parent
    /// folder, so a document reached through a link to a synced folder is found; a link inside a folder is kept).
    public func travelling(_ url: URL, resolve: (String) -> String? = { _ in nil }) -> URL {
        guard url.isFileURL, !byID.isEmpty else { return url }
        let path = Self.lexicallyStandardized(url.path(percentEncoded: false))
        guard let (folder, relative) = folder(containing: path) ?? resolve(path).flatMap({ folder(containing: Self.lexicallyStandardized($0)) }) else {
            return url
        }
        let segments = relative.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map { Self.percentEncoded(Substring($0)) }
        var text = "\(Self.scheme)://\(folder.id)/" + segments.joined(separator: "/")
        if url.hasDirectoryPath, !segments.isEmpty { text += "/" }
        return URL(string: text) ?? url
    }

    /// `value` with every `file:` URL inside a folder in its travel form, at any depth (arrays, dictionaries, sets).
    public func travelling(_ value: PropertyList, resolve: (String) -> String? = { _ in nil }) -> PropertyList {
        switch value {
        case .url(let url): .url(travelling(url, resolve: resolve))
        case .array(let items): .array(items.map { travelling($0, resolve: resolve) })
        case .dictionary(let entries): .dictionary(entries.mapValues { travelling($0, resolve: resolve) })
        case .set(let items): .set(Set(items.map { travelling($0, resolve: resolve) }))
        case .string, .integer, .unsignedInteger, .real, .bool, .data, .date, .null, .uuid: value
        }
    }

    /// `payload` with its `userInfo` (the document URL, B5, included) in travel form.
    public func travelling(_ payload: ActivityPayload, resolve: (String) -> String? = { _ in nil }) -> ActivityPayload {
        var payload = payload
        payload.userInfo = payload.userInfo.mapValues { travelling($0, resolve: resolve) }
        return payload
    }

    // MARK: Arriving here

    /// What a URL that arrived stands for here.
    public enum Arrival: Sendable, Hashable {
        /// Not in travel form: passed on unchanged (C9's "other file URLs").
        case unchanged
        /// In `folder`, at `relativePath`: `url` is the file here.
        case inFolder(url: URL, folder: SyncedFolder, relativePath: String)
        /// In a folder this device does not have (by that id).
        case unknownFolder(id: String, relativePath: String)
        /// In travel form but malformed, or with a path that would leave its folder (`..`, an encoded `/`): `why`.
        case invalid(why: String)
    }

    /// What `url`, as it arrived, stands for here.
    public func arriving(_ url: URL) -> Arrival {
        let text = url.absoluteString
        let prefix = Self.scheme + "://"
        // Exactly the lower-case scheme the originating agent writes (PROTOCOL §3.1): the continuing agent looks
        // for these bytes before it decodes a state at all, so a parser that also took `BATON-FOLDER://` would
        // read, as a file in a folder, a URL the agent never checked (issue 25 item 7; C9).
        guard text.utf8.count > prefix.utf8.count, text.utf8.starts(with: prefix.utf8) else { return .unchanged }
        let rest = text.dropFirst(prefix.count)
        let id = String(rest.prefix { $0 != "/" })
        guard (try? SyncedFolder.validate(id: id)) != nil else { return .invalid(why: "\"\(id)\" is not a folder id") }
        var segments: [String] = []
        var isDirectory = false
        let raw = rest.dropFirst(id.count)
        if !raw.isEmpty {
            // After the id: "/" and the segments, each percent-encoded; an empty last one means a folder.
            let parts = raw.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
            for (index, part) in parts.enumerated() {
                if part.isEmpty, index == parts.count - 1 {
                    isDirectory = index > 0
                    continue
                }
                guard let segment = part.percentDecoded else { return .invalid(why: "\"\(part)\" is not percent-encoded UTF-8") }
                guard Self.isPlainSegment(segment), !part.contains("?"), !part.contains("#") else {
                    return .invalid(why: "the path segment \"\(part)\" could leave folder \(id)")
                }
                segments.append(segment)
            }
        }
        let relative = segments.joined(separator: "/")
        guard let folder = byID[id] else { return .unknownFolder(id: id, relativePath: relative) }
        let path = relative.isEmpty ? folder.path : (folder.path == "/" ? "/" : folder.path + "/") + relative
        return .inFolder(url: URL(fileURLWithPath: path, isDirectory: isDirectory || relative.isEmpty), folder: folder, relativePath: relative)
    }

    /// A document URL that arrived into a folder of this device: the continuing agent waits for it (sync lag).
    public struct ArrivedDocument: Sendable, Hashable {
        /// The file here.
        public var url: URL
        /// Its folder.
        public var folder: SyncedFolder
        /// Its path inside the folder.
        public var relativePath: String
    }

    /// A value as it arrived, with its URLs turned into this device's.
    public struct ArrivedValue: Sendable, Hashable {
        /// The value, with every URL in travel form of a known folder made a `file:` URL here.
        public var value: PropertyList
        /// Those URLs: the files this device should have.
        public var documents: [ArrivedDocument] = []
        /// URLs in folders this device does not have; left in travel form in ``value``.
        public var unknown: [UnknownFolderURL] = []
        /// Why URLs were refused (malformed, or leaving their folder); left in travel form in ``value``.
        public var invalid: [String] = []
        /// `file:` URLs that came through unchanged (in no synced folder of the other device): files there, not
        /// here. In ``value`` in their foreign form (``foreignMarked(_:)``).
        public var foreign: [URL] = []
    }

    // MARK: Foreign file URLs (issue 25 item 2)

    /// The scheme of the form in which the continuing agent hands its app a `file:` URL that did not come through a
    /// synced folder: `baton-foreign:` followed by the URL as it arrived (`baton-foreign:file:///etc/app.conf`).
    /// The library turns it back into the `file:` URL and lists it in `UserActivity.foreignFileURLs`; only the agent
    /// writes it, so a `file:` URL an app receives is one its agent made from a synced folder (or an older agent).
    public static let foreignScheme = "baton-foreign"

    /// Whether `url` is a `file:` URL (any case of the scheme, as parsers accept it).
    public static func isFileURL(_ url: URL) -> Bool {
        url.isFileURL || url.scheme?.lowercased() == "file"
    }

    /// `url` in its foreign form, `baton-foreign:` + the URL's text; when that does not parse, the text as a string
    /// (never the `file:` URL itself).
    public static func foreignMarked(_ url: URL) -> PropertyList {
        let text = foreignScheme + ":" + url.absoluteString
        return URL(string: text).map(PropertyList.url) ?? .string(text)
    }

    /// The `file:` URL a URL in foreign form stands for, or nil when `url` is not in foreign form. A foreign form
    /// whose rest is not a `file:` URL is returned as it is: still marked, and no file API opens it.
    public static func unmarkedForeign(_ url: URL) -> URL? {
        let text = url.absoluteString
        let prefix = foreignScheme + ":"
        guard text.lowercased().hasPrefix(prefix) else { return nil }
        guard let original = URL(string: String(text.dropFirst(prefix.count))), isFileURL(original) else { return url }
        return original
    }

    /// `value` with each URL in foreign form turned back into its `file:` URL, at any depth, and those URLs: what
    /// the library does with a state its agent delivered.
    public static func unmarkingForeign(_ value: PropertyList) -> (value: PropertyList, foreign: Set<URL>) {
        // Most states hold no URL: nothing to rebuild then (issue 26 item 5: the walk below copies every container).
        guard containsURL(value) else { return (value, []) }
        var foreign: Set<URL> = []
        func walk(_ value: PropertyList) -> PropertyList {
            switch value {
            case .url(let url):
                guard let original = unmarkedForeign(url) else { return value }
                foreign.insert(original)
                return .url(original)
            case .array(let items): return .array(items.map(walk))
            case .dictionary(let entries): return .dictionary(entries.mapValues(walk))
            case .set(let items): return .set(Set(items.map(walk)))
            case .string, .integer, .unsignedInteger, .real, .bool, .data, .date, .null, .uuid: return value
            }
        }
        let unmarked = walk(value)
        return (unmarked, foreign)
    }

    /// A URL into a folder this device does not have.
    public struct UnknownFolderURL: Sendable, Hashable {
        /// The folder's id.
        public var id: String
        /// The path inside it.
        public var relativePath: String

        /// A URL into folder `id`, at `relativePath`.
        public init(id: String, relativePath: String) {
            self.id = id
            self.relativePath = relativePath
        }
    }

    /// `value` as it arrived, with each URL in travel form turned into this device's `file:` URL, at any depth.
    public func arriving(_ value: PropertyList) -> ArrivedValue {
        var result = ArrivedValue(value: value)
        // Only URLs change (C9): a state without one arrives as it is, without the walk below, which copies every
        // container and sorts every dictionary's keys (issue 26 item 5: most of the continuing agent's work on a
        // 3 KB state). It is still decoded and looked through, to the last value.
        guard Self.containsURL(value) else { return result }
        result.value = arriving(value, into: &result)
        return result
    }

    /// Whether `value` holds a URL at any depth; reads without copying anything. For whatever only rewrites URLs
    /// (here, and the originating agent's credentials check) to skip a state that has none.
    package static func containsURL(_ value: PropertyList) -> Bool {
        switch value {
        case .url: true
        case .array(let items): items.contains(where: containsURL)
        case .dictionary(let entries): entries.values.contains(where: containsURL)
        case .set(let items): items.contains(where: containsURL)
        case .string, .integer, .unsignedInteger, .real, .bool, .data, .date, .null, .uuid: false
        }
    }

    func arriving(_ value: PropertyList, into result: inout ArrivedValue) -> PropertyList {
        switch value {
        case .url(let url):
            switch arriving(url) {
            case .unchanged:
                // C9, B6 (issue 25 item 2): a file URL that did not come through a synced folder names a file on
                // the other device; marked, so the library never takes it for a file here.
                guard Self.isFileURL(url) else { return value }
                result.foreign.append(url)
                return Self.foreignMarked(url)
            case .inFolder(let here, let folder, let relative):
                result.documents.append(ArrivedDocument(url: here, folder: folder, relativePath: relative))
                return .url(here)
            case .unknownFolder(let id, let relative):
                result.unknown.append(UnknownFolderURL(id: id, relativePath: relative))
                return value
            case .invalid(let why):
                result.invalid.append(why)
                return value
            }
        case .array(let items):
            return .array(items.map { arriving($0, into: &result) })
        case .dictionary(let entries):
            // Sorted, so documents are listed in the same order every time.
            var mapped: [String: PropertyList] = [:]
            for key in entries.keys.sorted() { mapped[key] = entries[key].map { arriving($0, into: &result) } }
            return .dictionary(mapped)
        case .set(let items):
            return .set(Set(items.map { arriving($0, into: &result) }))
        case .string, .integer, .unsignedInteger, .real, .bool, .data, .date, .null, .uuid:
            return value
        }
    }

    // MARK: Helpers

    /// Whether `segment` is one path segment that stays where it is: not empty, `.` or `..`, no `/` or NUL.
    static func isPlainSegment(_ segment: String) -> Bool {
        !segment.isEmpty && !segment.utf8.elementsEqual(".".utf8) && !segment.utf8.elementsEqual("..".utf8) && !segment.utf8.contains(UInt8(ascii: "/")) && !segment.utf8.contains(0)
    }

    /// `segment` percent-encoded: RFC 3986's unreserved characters stay, every other byte of its UTF-8 is `%XX`.
    static func percentEncoded(_ segment: Substring) -> String {
        var text = ""
        text.reserveCapacity(segment.utf8.count)
        for byte in segment.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                text.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                text.unicodeScalars.append("%")
                text.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                text.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0xF)]))
            }
        }
        return text
    }
}
