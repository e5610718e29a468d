#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads XML property lists (Apple's `PropertyList-1.0.dtd`) into ``PropertyList`` values.
///
/// A small, strict reader of exactly what property lists use: the prolog (XML declaration, comments, processing
/// instructions, `DOCTYPE`), elements, the five predefined entities, character references and CDATA. It never
/// expands entities declared in a DTD (there is no way to declare one: an internal subset is skipped, and an unknown
/// entity is an error), so it is immune to entity-expansion attacks. Errors carry the line and byte offset.
///
/// Text follows XML's rules: line breaks in raw text read as `\n` (write `&#13;` to keep a carriage return).
public enum XMLPropertyListDecoder {
    /// Decodes a whole XML property list (UTF-8; a UTF-8 byte-order mark is allowed).
    /// - Throws: ``BatonCoreError`` for any malformed input or exceeded limit.
    public static func decode(_ data: Data, limits: PropertyListLimits = .default) throws -> PropertyList {
        try limits.checkInputSize(data.count)
        return try data.withUnsafeBytes { bytes in
            var reader = XMLReader(bytes: bytes, limits: limits)
            return try reader.document()
        }
    }
}

/// The element names a property list uses.
private enum ElementName: Equatable {
    case plist, dict, array, key, string, integer, real, date, data, `true`, `false`
    case other(String)

    init(_ bytes: UnsafeRawBufferPointer) {
        switch String(decoding: bytes, as: UTF8.self) {
        case "plist": self = .plist
        case "dict": self = .dict
        case "array": self = .array
        case "key": self = .key
        case "string": self = .string
        case "integer": self = .integer
        case "real": self = .real
        case "date": self = .date
        case "data": self = .data
        case "true": self = .true
        case "false": self = .false
        case let name: self = .other(name)
        }
    }

    var text: String {
        switch self {
        case .plist: "plist"
        case .dict: "dict"
        case .array: "array"
        case .key: "key"
        case .string: "string"
        case .integer: "integer"
        case .real: "real"
        case .date: "date"
        case .data: "data"
        case .true: "true"
        case .false: "false"
        case .other(let name): name
        }
    }

    /// The element as a message shows it: `<name>` or `</name>`, or `element "name…" (N bytes)` when the name
    /// is too long or odd to print as it is (issue 10: a 2 MB tag name must not make a 2 MB message).
    func shown(closing: Bool = false) -> String {
        let quoted = BatonCoreError.quoted(text)
        guard quoted == "\"\(text)\"" else { return "element \(quoted)" }
        return closing ? "</\(text)>" : "<\(text)>"
    }
}

private struct StartTag {
    var name: ElementName
    var isEmpty: Bool
    var offset: Int
}

private struct XMLReader {
    let bytes: UnsafeRawBufferPointer
    let limits: PropertyListLimits
    var position = 0
    var decodedObjects = 0

    init(bytes: UnsafeRawBufferPointer, limits: PropertyListLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    // MARK: Errors

    func error(_ code: BatonCoreError.Code, _ message: String, at offset: Int? = nil) -> BatonCoreError {
        let offset = min(offset ?? position, bytes.count)
        let line = 1 + bytes[0..<offset].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        return BatonCoreError(code, message, offset: offset, line: line)
    }

    // MARK: Scanning

    var atEnd: Bool { position >= bytes.count }

    func peek(_ offset: Int = 0) -> UInt8? {
        position + offset < bytes.count ? bytes[position + offset] : nil
    }

    func looking(at literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        let pointer = literal.utf8Start
        for index in 0..<count where bytes[position + index] != pointer[index] {
            return false
        }
        return true
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    mutating func skipSpace() {
        while let byte = peek(), Self.isSpace(byte) { position += 1 }
    }

    /// Advances past the next occurrence of `terminator`, or throws naming `what` was left open.
    mutating func skip(past terminator: StaticString, what: String) throws {
        let start = position
        while !atEnd {
            if looking(at: terminator) {
                position += terminator.utf8CodeUnitCount
                return
            }
            position += 1
        }
        throw error(.invalidXML, "\(what) is never closed", at: start)
    }

    /// Skips white space, comments and processing instructions between elements.
    mutating func skipMisc() throws {
        while true {
            skipSpace()
            if looking(at: "<!--") {
                try skip(past: "-->", what: "comment")
            } else if looking(at: "<?") {
                try skip(past: "?>", what: "processing instruction")
            } else {
                return
            }
        }
    }

    /// Skips a `<!DOCTYPE ...>` declaration, including an internal subset in brackets (never interpreted).
    mutating func skipDoctype() throws {
        let start = position
        var inSubset = false
        var quote: UInt8?
        while let byte = peek() {
            position += 1
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: "[") {
                inSubset = true
            } else if byte == UInt8(ascii: "]") {
                inSubset = false
            } else if byte == UInt8(ascii: ">"), !inSubset {
                return
            }
        }
        throw error(.invalidXML, "DOCTYPE declaration is never closed", at: start)
    }

    // MARK: Document

    mutating func document() throws -> PropertyList {
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            throw error(.unknownFormat, "UTF-16 XML is not supported; convert the file to UTF-8", at: 0)
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        try skipMisc()
        while looking(at: "<!DOCTYPE") {
            try skipDoctype()
            try skipMisc()
        }
        guard peek() == UInt8(ascii: "<") else {
            throw error(.unknownFormat, atEnd ? "empty document" : "not an XML property list (expected '<')")
        }
        let root = try startTag()
        let value: PropertyList
        if root.name == .plist {
            guard !root.isEmpty else { throw error(.unexpectedElement, "<plist/> holds no value", at: root.offset) }
            try skipMisc()
            value = try self.value(try startTag(), depth: 0)
            try skipMisc()
            try endTag(.plist, openedAt: root.offset)
        } else {
            value = try self.value(root, depth: 0)
        }
        try skipMisc()
        guard atEnd else { throw error(.invalidXML, "content after the end of the property list") }
        if case .dictionary(let top) = value, top["$archiver"] != nil, top["$objects"] != nil {
            throw error(
                .keyedArchiverNotSupported,
                "this is NSKeyedArchiver output (an archived object graph), not a property list",
                at: root.offset
            )
        }
        return value
    }

    // MARK: Tags

    /// Reads `<name attributes...>` or `<name .../>` at the current position.
    mutating func startTag() throws -> StartTag {
        let offset = position
        guard peek() == UInt8(ascii: "<") else {
            throw error(atEnd ? .truncated : .invalidXML, atEnd ? "document ends where a value should start" : "expected an element")
        }
        if peek(1) == UInt8(ascii: "/") {
            throw error(.unexpectedElement, "closing tag where a value should start")
        }
        position += 1
        let nameStart = position
        while let byte = peek(), !Self.isSpace(byte), byte != UInt8(ascii: ">"), byte != UInt8(ascii: "/") {
            position += 1
        }
        guard position > nameStart else { throw error(.invalidXML, "element without a name", at: offset) }
        let name = ElementName(UnsafeRawBufferPointer(rebasing: bytes[nameStart..<position]))
        // Attributes are skipped (plist's only one is `version`), honouring quotes so '>' inside them is safe.
        var quote: UInt8?
        while let byte = peek() {
            position += 1
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                let isEmpty = bytes[position - 2] == UInt8(ascii: "/")
                return StartTag(name: name, isEmpty: isEmpty, offset: offset)
            }
        }
        throw error(.truncated, "start tag \(name.shown()) is never closed", at: offset)
    }

    /// Reads `</name>` at the current position.
    mutating func endTag(_ name: ElementName, openedAt: Int) throws {
        guard looking(at: "</") else {
            throw error(atEnd ? .truncated : .invalidXML, "expected \(name.shown(closing: true)) to close the element opened at byte \(openedAt)")
        }
        let start = position
        position += 2
        let nameStart = position
        while let byte = peek(), !Self.isSpace(byte), byte != UInt8(ascii: ">") { position += 1 }
        let found = ElementName(UnsafeRawBufferPointer(rebasing: bytes[nameStart..<position]))
        skipSpace()
        guard peek() == UInt8(ascii: ">") else { throw error(.invalidXML, "closing tag is not closed", at: start) }
        position += 1
        guard found == name else {
            throw error(.invalidXML, "\(found.shown(closing: true)) closes \(name.shown()) opened at byte \(openedAt)", at: start)
        }
    }

    // MARK: Values

    mutating func countObject(at offset: Int) throws {
        decodedObjects += 1
        guard decodedObjects <= limits.maximumObjects else {
            throw error(.tooManyObjects, "more than \(limits.maximumObjects) values", at: offset)
        }
    }

    func checkDepth(_ depth: Int, at offset: Int) throws {
        guard depth < limits.maximumDepth else {
            throw error(.tooDeep, "containers nest deeper than \(limits.maximumDepth) levels", at: offset)
        }
    }

    mutating func value(_ tag: StartTag, depth: Int) throws -> PropertyList {
        try countObject(at: tag.offset)
        switch tag.name {
        case .dict:
            return try dictionary(tag, depth: depth)
        case .array:
            try checkDepth(depth, at: tag.offset)
            var elements: [PropertyList] = []
            if tag.isEmpty { return .array(elements) }
            while true {
                try skipMisc()
                if looking(at: "</") { break }
                elements.append(try value(try startTag(), depth: depth + 1))
            }
            try endTag(.array, openedAt: tag.offset)
            return .array(elements)
        case .string:
            return .string(try text(of: tag))
        case .integer:
            return try integer(trimmed(try text(of: tag)), at: tag.offset)
        case .real:
            let text = trimmed(try text(of: tag))
            guard !text.isEmpty, let number = Double(text) else {
                throw error(.invalidNumber, "<real> holds \(BatonCoreError.quoted(text)), not a number", at: tag.offset)
            }
            return .real(number)
        case .true, .false:
            if !tag.isEmpty {
                try skipMisc()
                try endTag(tag.name, openedAt: tag.offset)
            }
            return .bool(tag.name == .true)
        case .date:
            let text = trimmed(try text(of: tag))
            guard let (time, fraction) = CivilTime.parse(text[...]) else {
                throw error(.invalidDate, "<date> holds \(BatonCoreError.quoted(text)), not an ISO 8601 UTC date", at: tag.offset)
            }
            return .date(Date(timeIntervalSince1970: TimeInterval(time.secondsSince1970) + fraction))
        case .data:
            return .data(try base64(try text(of: tag), at: tag.offset))
        case .key:
            throw error(.unexpectedElement, "<key> outside a <dict>", at: tag.offset)
        case .plist:
            throw error(.unexpectedElement, "<plist> inside a property list", at: tag.offset)
        case .other:
            throw error(.unexpectedElement, "\(tag.name.shown()) is not a property-list element", at: tag.offset)
        }
    }

    mutating func dictionary(_ tag: StartTag, depth: Int) throws -> PropertyList {
        try checkDepth(depth, at: tag.offset)
        var entries: [String: PropertyList] = [:]
        if tag.isEmpty { return .dictionary(entries) }
        while true {
            try skipMisc()
            if looking(at: "</") { break }
            let keyTag = try startTag()
            guard keyTag.name == .key else {
                throw error(.unexpectedElement, "\(keyTag.name.shown()) in a <dict> where a <key> should be", at: keyTag.offset)
            }
            try countObject(at: keyTag.offset)
            let key = try text(of: keyTag)
            try skipMisc()
            if looking(at: "</") {
                throw error(.unexpectedElement, "<key> \(BatonCoreError.quoted(key)) has no value", at: keyTag.offset)
            }
            entries[key] = try value(try startTag(), depth: depth + 1)
        }
        try endTag(.dict, openedAt: tag.offset)
        return .dictionary(entries)
    }

    // MARK: Text

    /// The character data of a text element (after its start tag), with entities and CDATA resolved.
    mutating func text(of tag: StartTag) throws -> String {
        if tag.isEmpty { return "" }
        var pieces: [UInt8] = []
        var runStart = position
        // Fast path: plain text straight up to the closing tag.
        while let byte = peek(), byte != UInt8(ascii: "<"), byte != UInt8(ascii: "&"), byte != 0x0D {
            position += 1
        }
        if looking(at: "</") {
            let run = bytes[runStart..<position]
            try endTag(tag.name, openedAt: tag.offset)
            return try validatedString(run, at: runStart)
        }
        while true {
            guard let byte = peek() else {
                throw error(.truncated, "\(tag.name.shown()) is never closed", at: tag.offset)
            }
            switch byte {
            case UInt8(ascii: "<"):
                pieces.append(contentsOf: bytes[runStart..<position])
                if looking(at: "</") {
                    let text = try validatedString(pieces[...], at: tag.offset)
                    try endTag(tag.name, openedAt: tag.offset)
                    return text
                } else if looking(at: "<![CDATA[") {
                    position += 9
                    let start = position
                    try skip(past: "]]>", what: "CDATA section")
                    pieces.append(contentsOf: bytes[start..<(position - 3)])
                } else if looking(at: "<!--") {
                    try skip(past: "-->", what: "comment")
                } else if looking(at: "<?") {
                    try skip(past: "?>", what: "processing instruction")
                } else {
                    throw error(.unexpectedElement, "element inside \(tag.name.shown()), which holds only text")
                }
                runStart = position
            case UInt8(ascii: "&"):
                pieces.append(contentsOf: bytes[runStart..<position])
                try entity(into: &pieces)
                runStart = position
            case 0x0D:
                // XML line-end normalisation: CR LF and lone CR both read as LF.
                pieces.append(contentsOf: bytes[runStart..<position])
                pieces.append(0x0A)
                position += peek(1) == 0x0A ? 2 : 1
                runStart = position
            default:
                position += 1
            }
        }
    }

    func validatedString<C: Collection>(_ run: C, at offset: Int) throws -> String where C.Element == UInt8 {
        guard let text = String(validating: run, as: UTF8.self) else {
            throw error(.invalidString, "text is not valid UTF-8", at: offset)
        }
        return text
    }

    /// Resolves `&...;` at the current position.
    mutating func entity(into pieces: inout [UInt8]) throws {
        let start = position
        position += 1
        let nameStart = position
        // The longest reference is a character reference such as `&#x10FFFF;` or `&#1114111;`.
        while let byte = peek(), byte != UInt8(ascii: ";"), position - nameStart < 10 { position += 1 }
        guard peek() == UInt8(ascii: ";") else {
            throw error(.unknownEntity, "'&' does not start an entity reference (write &amp;)", at: start)
        }
        let name = String(decoding: bytes[nameStart..<position], as: UTF8.self)
        position += 1
        guard let character = XMLEntity.utf8(named: name) else {
            throw error(.unknownEntity, "unknown entity \(BatonCoreError.quoted("&" + name + ";"))", at: start)
        }
        pieces.append(contentsOf: character)
    }

    func trimmed(_ text: String) -> String {
        guard let first = text.utf8.first, let last = text.utf8.last, Self.isSpace(first) || Self.isSpace(last) else {
            return text
        }
        return String(text.drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
    }

    func integer(_ text: String, at offset: Int) throws -> PropertyList {
        var digits = Substring(text)
        var negative = false
        if digits.hasPrefix("-") {
            negative = true
            digits = digits.dropFirst()
        } else if digits.hasPrefix("+") {
            digits = digits.dropFirst()
        }
        var radix = 10
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") {
            radix = 16
            digits = digits.dropFirst(2)
        }
        guard !digits.isEmpty, let magnitude = UInt64(digits, radix: radix) else {
            throw error(.invalidNumber, "<integer> holds \(BatonCoreError.quoted(text)), not a 64-bit integer", at: offset)
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else {
                throw error(.invalidNumber, "<integer> \(BatonCoreError.quoted(text)) is below the 64-bit range", at: offset)
            }
            return .integer(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
        }
        return PropertyList(integer: magnitude) ?? .unsignedInteger(magnitude)
    }

    func base64(_ text: String, at offset: Int) throws -> Data {
        var compact = text.filter { !$0.isWhitespace }
        switch compact.utf8.count % 4 {
        case 2: compact += "=="
        case 3: compact += "="
        default: break
        }
        guard let data = Data(base64Encoded: compact) else {
            throw error(.invalidData, "<data> does not hold base64", at: offset)
        }
        return data
    }
}
