import BatonCore

/// The key-file syntax of desktop entries (the Desktop Entry Specification's "Basic format", which GLib's `GKeyFile`
/// and KDE's `KConfig` both read): `[Group]` headers, `Key=Value` and `Key[locale]=Value` lines, `#` comments.
///
/// Values are kept as written; ``string(_:in:)`` and ``strings(_:in:)`` undo the escapes. Bounded by ``Limits``;
/// hostile input gets ``ActivitySourceError``, never a trap.
public struct KeyFile: Sendable, Hashable {
    /// The bounds of one file.
    public struct Limits: Sendable, Hashable {
        /// The largest file read. An application's desktop file with a hundred translations is about 40 KiB.
        public var maximumBytes: Int
        /// The longest line, in bytes: a `MimeType` list or a translated `Keywords` fits in a few KiB.
        public var maximumLineLength: Int
        /// The most groups (`[Desktop Entry]` and its `[Desktop Action …]`s): a dozen is already many.
        public var maximumGroups: Int
        /// The most keys in the whole file, translations counted: a hundred locales times a few keys.
        public var maximumKeys: Int

        /// The bounds Baton uses for desktop files and KDE's recent documents.
        public static let `default` = Limits(maximumBytes: 1 << 20, maximumLineLength: 64 * 1024, maximumGroups: 64, maximumKeys: 8192)

        /// Bounds of your own.
        public init(maximumBytes: Int, maximumLineLength: Int, maximumGroups: Int, maximumKeys: Int) {
            self.maximumBytes = maximumBytes
            self.maximumLineLength = maximumLineLength
            self.maximumGroups = maximumGroups
            self.maximumKeys = maximumKeys
        }
    }

    /// Each group's keys (`Name`, `Name[de]`, KDE's `URL[$e]`) and raw values, by group name.
    public private(set) var groups: [String: [String: String]]
    /// The group names in the file's order.
    public private(set) var groupOrder: [String]

    /// Parses a key file (UTF-8; a byte-order mark is allowed).
    /// - Throws: ``ActivitySourceError`` `tooLarge` over a limit, `malformedDesktopEntry` for a line that is not a
    ///   comment, a group or a key, a key before any group, a group or key twice, text that is not UTF-8.
    public init(_ data: some Collection<UInt8>, limits: Limits = .default) throws {
        guard data.count <= limits.maximumBytes else {
            throw ActivitySourceError(.tooLarge, "the desktop file is \(Clipping.grouped(data.count)) bytes, more than \(Clipping.grouped(limits.maximumBytes))")
        }
        var bytes = Array(data)[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        groups = [:]
        groupOrder = []
        var current: String?
        var keys = 0
        var lineNumber = 0
        for rawLine in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            guard rawLine.count <= limits.maximumLineLength else {
                throw ActivitySourceError(.tooLarge, "line \(lineNumber) of the desktop file is longer than \(Clipping.grouped(limits.maximumLineLength)) bytes")
            }
            guard let text = String(validating: rawLine, as: UTF8.self) else {
                throw Self.malformed(lineNumber, "is not UTF-8")
            }
            let line = text.hasSuffix("\r") ? String(text.dropLast()) : text
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.hasPrefix("[") {
                guard trimmed.hasSuffix("]"), trimmed.count >= 3 else { throw Self.malformed(lineNumber, "is a group header without its ']'") }
                let name = String(trimmed.dropFirst().dropLast())
                guard name.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F && $0 != "[" && $0 != "]" }) else {
                    throw Self.malformed(lineNumber, "names a group with '[', ']' or control characters")
                }
                guard groups[name] == nil else { throw Self.malformed(lineNumber, "repeats the group [\(name.clipped(toBytes: 64))]") }
                guard groups.count < limits.maximumGroups else {
                    throw ActivitySourceError(.tooLarge, "more than \(limits.maximumGroups) groups in the desktop file")
                }
                groups[name] = [:]
                groupOrder.append(name)
                current = name
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { throw Self.malformed(lineNumber, "is neither a comment, a group nor Key=Value") }
            let key = line[..<equals].trimmingWhitespace()
            // Only the spaces GLib drops after '=': the value's own trailing ones are kept.
            let value = String(line[line.index(after: equals)...].drop { $0 == " " || $0 == "\t" })
            guard Self.isValidKey(key) else { throw Self.malformed(lineNumber, "has the key \(BatonCoreError.quoted(key)), which is not A-Za-z0-9- with an optional [locale]") }
            guard let group = current else { throw Self.malformed(lineNumber, "has a key before any [group]") }
            guard groups[group]?[key] == nil else { throw Self.malformed(lineNumber, "repeats the key \(key) in [\(group.clipped(toBytes: 64))]") }
            keys += 1
            guard keys <= limits.maximumKeys else {
                throw ActivitySourceError(.tooLarge, "more than \(Clipping.grouped(limits.maximumKeys)) keys in the desktop file")
            }
            groups[group]?[key] = value
        }
    }

    /// `Key`, `Key[locale]` (locale `lang_COUNTRY.ENCODING@MODIFIER`), and KConfig's flags after either (`URL[$e]`).
    static func isValidKey(_ key: String) -> Bool {
        var rest = Substring(key)
        let name = rest.prefix { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        guard !name.isEmpty else { return false }
        rest = rest.dropFirst(name.count)
        while rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return false }
            let inside = rest[rest.index(after: rest.startIndex)..<close]
            guard !inside.isEmpty, inside.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-.@$".contains($0)) }) else { return false }
            rest = rest[rest.index(after: close)...]
        }
        return rest.isEmpty
    }

    /// The raw value of `key` in `group`, as written.
    public func raw(_ key: String, in group: String) -> String? { groups[group]?[key] }

    /// The value of `key` in `group` with the escapes `\s \n \t \r \\` undone; nil when it is not there.
    /// - Throws: ``ActivitySourceError`` `malformedDesktopEntry` for any other escape.
    public func string(_ key: String, in group: String) throws -> String? {
        guard let raw = raw(key, in: group) else { return nil }
        return try Self.unescape(raw, key: key, list: false)
    }

    /// The `;`-separated list in `key` (`MimeType=text/plain;text/x-c;`), each item unescaped (`\;` is a `;`).
    public func strings(_ key: String, in group: String) throws -> [String]? {
        guard let raw = raw(key, in: group) else { return nil }
        var items: [String] = []
        var item = ""
        var escaped = false
        for character in raw {
            if escaped {
                item.append("\\")
                item.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ";" {
                items.append(try Self.unescape(item, key: key, list: true))
                item = ""
            } else {
                item.append(character)
            }
        }
        if escaped { item.append("\\") }
        if !item.isEmpty { items.append(try Self.unescape(item, key: key, list: true)) }
        return items
    }

    /// A `true`/`false` value; nil when absent.
    public func bool(_ key: String, in group: String) throws -> Bool? {
        switch raw(key, in: group)?.trimmingWhitespace() {
        case nil: return nil
        case "true": return true
        case "false": return false
        case let other?: throw ActivitySourceError(.malformedDesktopEntry, "\(key)=\(BatonCoreError.quoted(other)) is neither true nor false")
        }
    }

    static func unescape(_ raw: String, key: String, list: Bool) throws -> String {
        guard raw.contains("\\") else { return raw }
        var output = ""
        var iterator = raw.makeIterator()
        while let character = iterator.next() {
            guard character == "\\" else {
                output.append(character)
                continue
            }
            switch iterator.next() {
            case "s"?: output.append(" ")
            case "n"?: output.append("\n")
            case "t"?: output.append("\t")
            case "r"?: output.append("\r")
            case "\\"?: output.append("\\")
            case ";"? where list: output.append(";")
            case let other:
                throw ActivitySourceError(.malformedDesktopEntry, "\(key) holds the escape \\\(other.map(String.init) ?? "") at its end or that the specification does not define")
            }
        }
        return output
    }

    static func malformed(_ line: Int, _ what: String) -> ActivitySourceError {
        ActivitySourceError(.malformedDesktopEntry, "line \(line) of the desktop file \(what)")
    }
}
