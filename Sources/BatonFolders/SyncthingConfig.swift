import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The bounds of ``SyncthingConfig/decode(_:limits:)``: a config file is local, but it is still input Baton did not
/// write (another program's, possibly damaged or replaced), so the reader is bounded like every decoder here.
public struct SyncthingConfigLimits: Sendable, Hashable {
    /// The largest file read. Real configs are a few KiB; one with hundreds of devices and folders stays far below.
    public var maximumBytes: Int
    /// The most `<folder>` elements taken: far above what a person syncs, low enough to list in a terminal.
    public var maximumFolders: Int
    /// The longest attribute value, after unescaping: above `PATH_MAX` (4096), so any real path fits.
    public var maximumAttributeLength: Int
    /// The most attributes on one element: Syncthing writes about 20 on a folder.
    public var maximumAttributes: Int
    /// The deepest nesting of elements: Syncthing's is 4; the bound keeps the reader's stack small.
    public var maximumDepth: Int

    /// The bounds `baton folders syncthing` uses.
    public static let `default` = SyncthingConfigLimits(
        maximumBytes: 4 << 20, maximumFolders: 1000, maximumAttributeLength: 8192, maximumAttributes: 128, maximumDepth: 32
    )

    /// Bounds of your own.
    public init(maximumBytes: Int, maximumFolders: Int, maximumAttributeLength: Int, maximumAttributes: Int, maximumDepth: Int) {
        self.maximumBytes = maximumBytes
        self.maximumFolders = maximumFolders
        self.maximumAttributeLength = maximumAttributeLength
        self.maximumAttributes = maximumAttributes
        self.maximumDepth = maximumDepth
    }
}

/// The folders of a Syncthing configuration (`config.xml`): what `baton folders syncthing` adds under Syncthing's own
/// folder ids, which are the same on every device sharing a folder (C9).
///
/// FoundationEssentials has no XML parser and the agent's modules do not link Foundation, so this is a small reader of
/// exactly what is needed: the `<folder id=… label=… path=…>` elements directly inside `<configuration>` (the
/// `<folder>` inside `<defaults>` is a template, not a folder), with XML's entity escapes in attribute values undone.
/// Everything else (text, comments, processing instructions, CDATA, a doctype) is skipped, but tags must nest.
public struct SyncthingConfig: Sendable, Hashable {
    /// One folder as Syncthing describes it.
    public struct Folder: Sendable, Hashable {
        /// Syncthing's folder id (`abcd1-xyz23`), shared by every device syncing it.
        public var id: String
        /// The label people see in Syncthing's interface; may be empty.
        public var label: String
        /// The path on this device as written: may start with `~`.
        public var path: String
        /// Whether Syncthing has it paused.
        public var paused: Bool
    }

    /// The folders, in the file's order.
    public var folders: [Folder]

    /// Reads the folders of a Syncthing `config.xml`.
    /// - Throws: ``SyncthingConfigError`` `syncthingConfigTooLarge` over one of `limits`, `syncthingConfigMalformed`
    ///   for anything that is not well-formed where it is read (the byte offset in the message).
    public static func decode(_ data: Data, limits: SyncthingConfigLimits = .default) throws -> SyncthingConfig {
        guard data.count <= limits.maximumBytes else {
            throw SyncthingConfigError(.tooLarge, "the Syncthing configuration is \(data.count) bytes, more than \(limits.maximumBytes)")
        }
        var reader = Reader(bytes: Array(data), limits: limits)
        return SyncthingConfig(folders: try reader.read())
    }

    /// The reader: one pass over the bytes, a stack of open element names.
    struct Reader {
        let bytes: [UInt8]
        let limits: SyncthingConfigLimits
        var offset = 0
        var open: [String] = []
        var sawRoot = false

        init(bytes: [UInt8], limits: SyncthingConfigLimits) {
            self.bytes = bytes
            self.limits = limits
        }

        mutating func read() throws -> [Folder] {
            var folders: [Folder] = []
            while let start = bytes[offset...].firstIndex(of: UInt8(ascii: "<")) {
                offset = start
                if starts(with: "<!--") {
                    try skip(past: "-->", what: "a comment")
                } else if starts(with: "<?") {
                    try skip(past: "?>", what: "a processing instruction")
                } else if starts(with: "<![CDATA[") {
                    try skip(past: "]]>", what: "a CDATA section")
                } else if starts(with: "<!") {
                    try skip(past: ">", what: "a declaration")
                } else if starts(with: "</") {
                    offset += 2
                    let name = try readName()
                    skipSpace()
                    try expect(">")
                    guard let last = open.popLast(), last == name else {
                        throw malformed("</\(name)> closes \(open.last.map { "<\($0)>" } ?? "nothing")")
                    }
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
                    if name == "folder", open == ["configuration"] {
                        guard folders.count < limits.maximumFolders else {
                            throw SyncthingConfigError(.tooLarge, "more than \(limits.maximumFolders) folders in the Syncthing configuration")
                        }
                        guard let id = attributes["id"], let path = attributes["path"] else {
                            throw malformed("a <folder> without its id or path")
                        }
                        folders.append(Folder(id: id, label: attributes["label"] ?? "", path: path, paused: attributes["paused"] == "true"))
                    }
                    if !empty {
                        guard open.count < limits.maximumDepth else {
                            throw SyncthingConfigError(.tooLarge, "elements nested deeper than \(limits.maximumDepth)")
                        }
                        open.append(name)
                    }
                }
            }
            guard open.isEmpty else { throw malformed("<\(open.last ?? "")> is never closed") }
            guard sawRoot else { throw malformed("no <configuration> element") }
            return folders
        }

        // MARK: Pieces

        func starts(with text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard offset + count <= bytes.count else { return false }
            return text.withUTF8Buffer { prefix in
                (0..<count).allSatisfy { bytes[offset + $0] == prefix[$0] }
            }
        }

        mutating func expect(_ text: StaticString) throws {
            guard starts(with: text) else { throw malformed("expected \"\(text)\"") }
            offset += text.utf8CodeUnitCount
        }

        mutating func skip(past end: StaticString, what: String) throws {
            let count = end.utf8CodeUnitCount
            var index = offset + 1
            while index + count <= bytes.count {
                let matches = end.withUTF8Buffer { suffix in (0..<count).allSatisfy { bytes[index + $0] == suffix[$0] } }
                if matches {
                    offset = index + count
                    return
                }
                index += 1
            }
            throw malformed("\(what) that never ends")
        }

        mutating func skipSpace() {
            while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
        }

        /// An element or attribute name: letters, digits, `_ - . :` (what Syncthing writes), not starting with a digit.
        mutating func readName() throws -> String {
            let start = offset
            while offset < bytes.count, offset - start < 256 {
                let byte = bytes[offset]
                let isLetter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
                let isOther = byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte >= 0x80
                let isLater = (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                guard isLetter || isOther || (offset > start && isLater) else { break }
                offset += 1
            }
            guard offset > start, let name = String(validating: bytes[start..<offset], as: UTF8.self) else { throw malformed("expected a name") }
            return name
        }

        /// `name="value"` or `name='value'` pairs up to `>` or `/>`, values unescaped.
        mutating func readAttributes() throws -> [String: String] {
            var attributes: [String: String] = [:]
            while true {
                let hadSpace = offset < bytes.count && [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset])
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
                // Checked again after unescaping; an escape is at most 10 bytes (`&#x10FFFF;`) for one character.
                guard end - offset <= limits.maximumAttributeLength * 10 else {
                    throw SyncthingConfigError(.tooLarge, "attribute \(name) is longer than \(limits.maximumAttributeLength) characters")
                }
                let value = try unescape(bytes[offset..<end], name: name)
                offset = end + 1
                guard attributes[name] == nil else { throw malformed("attribute \(name) twice") }
                guard attributes.count < limits.maximumAttributes else {
                    throw SyncthingConfigError(.tooLarge, "more than \(limits.maximumAttributes) attributes on one element")
                }
                attributes[name] = value
            }
        }

        /// An attribute value with `&lt; &gt; &amp; &quot; &apos; &#N; &#xH;` replaced; a bare `<` or `&` is malformed.
        func unescape(_ raw: ArraySlice<UInt8>, name: String) throws -> String {
            var output: [UInt8] = []
            output.reserveCapacity(raw.count)
            var index = raw.startIndex
            while index < raw.endIndex {
                let byte = raw[index]
                if byte == UInt8(ascii: "<") { throw malformed("a '<' in attribute \(name)") }
                guard byte == UInt8(ascii: "&") else {
                    output.append(byte)
                    index += 1
                    continue
                }
                guard let semicolon = raw[index...].prefix(12).firstIndex(of: UInt8(ascii: ";")),
                    let entity = String(validating: raw[(index + 1)..<semicolon], as: UTF8.self)
                else { throw malformed("an unfinished entity in attribute \(name)") }
                guard let character = XMLEntity.utf8(named: entity) else {
                    throw malformed("the entity &\(entity); in attribute \(name)")
                }
                output.append(contentsOf: character)
                index = semicolon + 1
            }
            guard let text = String(validating: output, as: UTF8.self) else { throw malformed("attribute \(name) is not UTF-8") }
            guard text.count <= limits.maximumAttributeLength else {
                throw SyncthingConfigError(.tooLarge, "attribute \(name) is longer than \(limits.maximumAttributeLength) characters")
            }
            return text
        }

        func malformed(_ what: String) -> SyncthingConfigError {
            SyncthingConfigError(.malformed, "the Syncthing configuration is not well-formed at byte \(offset): \(what)")
        }
    }
}
