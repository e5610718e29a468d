/// A small, strict pull reader of the XML that other programs' files of record use (GLib's bookmark files,
/// Syncthing's config.xml): elements, attributes, text, CDATA, comments and processing instructions, XML's five
/// entities and character references.
///
/// FoundationEssentials has no XML parser and the agent links no full Foundation (docs/ARCHITECTURE.md, "A lean
/// agent"), so this reads the subset itself, once for every format (issue 27: the xbel and Syncthing readers had two
/// copies). It refuses a `DOCTYPE` outright (issue 27 item 4): neither format has one, and with no DTD there is no
/// entity to expand, so no billion laughs and no external entity. Every count and length is bounded by ``Limits``;
/// each format's reader turns ``XMLReaderError`` into its own typed error.
package struct XMLSubsetReader {
    /// The bounds of one document (set by the format's reader, which knows its sizes).
    package struct Limits: Sendable {
        package var maximumBytes: Int
        package var maximumDepth: Int
        package var maximumAttributes: Int
        /// In UTF-8 bytes after unescaping.
        package var maximumAttributeLength: Int
        /// One run of text (between two tags), in UTF-8 bytes after unescaping.
        package var maximumTextLength: Int
        /// Names of elements and attributes, in bytes: real ones are short.
        package var maximumNameLength = 256
        /// Whether a `DOCTYPE` (up to its first `>`) is skipped rather than refused. Skipped, it is still never read:
        /// an entity it declares stays unknown, so using one is refused as any other.
        package var skipsDoctype = false

        package init(maximumBytes: Int, maximumDepth: Int, maximumAttributes: Int, maximumAttributeLength: Int, maximumTextLength: Int) {
            self.maximumBytes = maximumBytes
            self.maximumDepth = maximumDepth
            self.maximumAttributes = maximumAttributes
            self.maximumAttributeLength = maximumAttributeLength
            self.maximumTextLength = maximumTextLength
        }
    }

    /// What the reader found next.
    package enum Event: Equatable {
        /// A start tag (`<a>` or `<a/>`, then an ``end(_:)`` follows at once), attributes unescaped.
        case start(String, [String: String])
        /// An end tag, or the end of an empty element.
        case end(String)
        /// Text with something besides white space in it, entities and CDATA undone.
        case text(String)
    }

    private let bytes: [UInt8]
    private let limits: Limits
    private var offset = 0
    private var open: [String] = []
    private var sawRoot = false
    private var pendingEnd: String?

    /// A reader of `bytes`, which must be at most `limits.maximumBytes` long (checked here).
    package init(_ bytes: [UInt8], limits: Limits) throws {
        guard bytes.count <= limits.maximumBytes else {
            throw XMLReaderError(.tooLarge, "the file is \(Clipping.grouped(bytes.count)) bytes, more than \(Clipping.grouped(limits.maximumBytes))")
        }
        self.bytes = bytes
        self.limits = limits
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { offset = 3 }
    }

    /// How deep the reader is: 1 inside the root element.
    package var depth: Int { open.count }

    /// The next event, or nil at the end of a well-formed document.
    package mutating func next() throws -> Event? {
        if let name = pendingEnd {
            pendingEnd = nil
            return .end(name)
        }
        while offset < bytes.count {
            if bytes[offset] != UInt8(ascii: "<") {
                if let text = try readText() { return .text(text) }
                continue
            }
            if starts(with: "<!--") {
                try skip(past: "-->", what: "a comment")
            } else if starts(with: "<?") {
                try skip(past: "?>", what: "a processing instruction")
            } else if starts(with: "<![CDATA[") {
                guard !open.isEmpty else { throw malformed("a CDATA section outside the root element") }
                let start = offset + 9
                try skip(past: "]]>", what: "a CDATA section")
                let raw = bytes[start..<(offset - 3)]
                guard raw.count <= limits.maximumTextLength else { throw tooLong("text") }
                guard let text = String(validating: raw, as: UTF8.self) else { throw malformed("text that is not UTF-8") }
                if text.contains(where: { !$0.isWhitespace }) { return .text(text) }
            } else if starts(with: "<!DOCTYPE"), limits.skipsDoctype, open.isEmpty, !sawRoot {
                try skip(past: ">", what: "a DOCTYPE")
            } else if starts(with: "<!DOCTYPE") || starts(with: "<!ENTITY") {
                throw XMLReaderError(.entityRefused, "a DOCTYPE or entity declaration at byte \(offset): never read, so no entity is expanded; the format has none")
            } else if starts(with: "<!") {
                throw malformed("a declaration that XML does not allow here")
            } else if starts(with: "</") {
                offset += 2
                let name = try readName()
                skipSpace()
                try expect(">")
                guard let last = open.popLast(), last == name else {
                    throw malformed("</\(name.clipped(toBytes: 64))> closes \(open.last.map { "<\($0)>" } ?? "nothing")")
                }
                return .end(name)
            } else {
                offset += 1
                let name = try readName()
                let attributes = try readAttributes()
                let empty = starts(with: "/>")
                try expect(empty ? "/>" : ">")
                if open.isEmpty {
                    guard !sawRoot else { throw malformed("a second root element <\(name)>") }
                    sawRoot = true
                }
                if empty {
                    pendingEnd = name
                } else {
                    guard open.count < limits.maximumDepth else {
                        throw XMLReaderError(.tooLarge, "elements nested deeper than \(limits.maximumDepth) at byte \(offset)")
                    }
                    open.append(name)
                }
                return .start(name, attributes)
            }
        }
        guard open.isEmpty else { throw malformed("<\(open.last ?? "")> is never closed") }
        guard sawRoot else { throw malformed("no root element") }
        return nil
    }

    // MARK: Text

    /// Raw text up to the next `<`, unescaped; nil when it is only white space. Outside the root only white space may be.
    private mutating func readText() throws -> String? {
        let start = offset
        let end = bytes[offset...].firstIndex(of: UInt8(ascii: "<")) ?? bytes.count
        offset = end
        let raw = bytes[start..<end]
        if raw.allSatisfy(Self.isSpace) { return nil }
        guard !open.isEmpty else { throw malformed("text outside the root element") }
        // An escape is at most 10 bytes (`&#x10FFFF;`) for one character of at most 4: checked again after unescaping.
        guard raw.count <= limits.maximumTextLength * 10 else { throw tooLong("text") }
        let text = try unescape(raw, what: "text")
        guard text.utf8.count <= limits.maximumTextLength else { throw tooLong("text") }
        return text
    }

    // MARK: Pieces

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    private func starts(with text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard offset + count <= bytes.count else { return false }
        return text.withUTF8Buffer { prefix in (0..<count).allSatisfy { bytes[offset + $0] == prefix[$0] } }
    }

    private mutating func expect(_ text: StaticString) throws {
        guard starts(with: text) else { throw malformed("expected \"\(text)\"") }
        offset += text.utf8CodeUnitCount
    }

    private mutating func skip(past end: StaticString, what: String) throws {
        let count = end.utf8CodeUnitCount
        var index = offset + 1
        let first = end.utf8Start.pointee
        while index + count <= bytes.count {
            if bytes[index] == first, end.withUTF8Buffer({ suffix in (0..<count).allSatisfy { bytes[index + $0] == suffix[$0] } }) {
                offset = index + count
                return
            }
            index += 1
        }
        throw malformed("\(what) that never ends")
    }

    private mutating func skipSpace() {
        while offset < bytes.count, Self.isSpace(bytes[offset]) { offset += 1 }
    }

    /// An element or attribute name: letters, digits, `_ - . :` and any non-ASCII byte, not starting with a digit,
    /// `-` or `.`.
    private mutating func readName() throws -> String {
        let start = offset
        while offset < bytes.count {
            let byte = bytes[offset]
            let isLetter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            let isOther = byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte >= 0x80
            let isLater = (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            guard isLetter || isOther || (offset > start && isLater) else { break }
            offset += 1
            guard offset - start <= limits.maximumNameLength else {
                throw XMLReaderError(.tooLarge, "a name longer than \(limits.maximumNameLength) bytes at byte \(start)")
            }
        }
        guard offset > start, let name = String(validating: bytes[start..<offset], as: UTF8.self) else { throw malformed("expected a name") }
        return name
    }

    /// `name="value"` or `name='value'` pairs up to `>` or `/>`, values unescaped.
    private mutating func readAttributes() throws -> [String: String] {
        var attributes: [String: String] = [:]
        while true {
            let hadSpace = offset < bytes.count && Self.isSpace(bytes[offset])
            skipSpace()
            if starts(with: ">") || starts(with: "/>") { return attributes }
            guard hadSpace else { throw malformed("expected a space before an attribute") }
            let name = try readName()
            skipSpace()
            try expect("=")
            skipSpace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") || bytes[offset] == UInt8(ascii: "'") else {
                throw malformed("attribute \(name) without a quoted value")
            }
            let quote = bytes[offset]
            offset += 1
            guard let end = bytes[offset...].firstIndex(of: quote) else { throw malformed("attribute \(name)'s value never ends") }
            guard end - offset <= limits.maximumAttributeLength * 10 else { throw tooLong("attribute \(name)") }
            let value = try unescape(bytes[offset..<end], what: "attribute \(name)")
            guard value.utf8.count <= limits.maximumAttributeLength else { throw tooLong("attribute \(name)") }
            offset = end + 1
            guard attributes[name] == nil else { throw malformed("attribute \(name) twice") }
            guard attributes.count < limits.maximumAttributes else {
                throw XMLReaderError(.tooLarge, "more than \(limits.maximumAttributes) attributes on one element at byte \(offset)")
            }
            attributes[name] = value
        }
    }

    /// `raw` with `&lt; &gt; &amp; &quot; &apos; &#N; &#xH;` replaced. Any other entity is refused, never looked up:
    /// there is no DTD to declare one. A bare `<` is malformed.
    private func unescape(_ raw: ArraySlice<UInt8>, what: String) throws -> String {
        guard raw.contains(UInt8(ascii: "&")) || raw.contains(UInt8(ascii: "<")) else {
            guard let text = String(validating: raw, as: UTF8.self) else { throw malformed("\(what) is not UTF-8") }
            return text
        }
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            if byte == UInt8(ascii: "<") { throw malformed("a '<' in \(what)") }
            guard byte == UInt8(ascii: "&") else {
                output.append(byte)
                index += 1
                continue
            }
            guard let semicolon = raw[index...].prefix(12).firstIndex(of: UInt8(ascii: ";")),
                let entity = String(validating: raw[(index + 1)..<semicolon], as: UTF8.self)
            else { throw malformed("an unfinished entity in \(what)") }
            guard let character = XMLEntity.utf8(named: entity) else {
                if entity.hasPrefix("#") { throw malformed("the character reference &\(entity.clipped(toBytes: 16)); in \(what) names no character") }
                throw XMLReaderError(.entityRefused, "the entity &\(entity.clipped(toBytes: 16)); in \(what) at byte \(offset): only XML's five and character references are read")
            }
            output.append(contentsOf: character)
            index = semicolon + 1
        }
        guard let text = String(validating: output, as: UTF8.self) else { throw malformed("\(what) is not UTF-8") }
        return text
    }

    private func tooLong(_ what: String) -> XMLReaderError {
        XMLReaderError(.tooLarge, "\(what) near byte \(offset) is longer than the limit (\(what == "text" ? limits.maximumTextLength : limits.maximumAttributeLength) bytes)")
    }

    private func malformed(_ what: String) -> XMLReaderError {
        XMLReaderError(.malformed, "not well-formed XML at byte \(offset): \(what)")
    }
}

/// Why ``XMLSubsetReader`` stopped: each format's reader maps the kind to its own error's code and keeps the message.
package struct XMLReaderError: Error, Sendable, Hashable {
    package enum Kind: Sendable, Hashable {
        /// Over one of the reader's ``XMLSubsetReader/Limits``.
        case tooLarge
        /// Not well-formed where it is read.
        case malformed
        /// A `DOCTYPE`, an entity declaration or an entity other than XML's five.
        case entityRefused
    }

    package var kind: Kind
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}
