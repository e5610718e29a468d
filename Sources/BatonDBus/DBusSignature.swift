import BatonCore

/// A D-Bus type signature, parsed and checked against the specification: a sequence of complete types, such as `sa{sv}`.
///
/// Apps in any language send signatures (a variant's, a `g` value) that Baton did not write, so every rule the
/// specification gives is checked, and each broken rule is a ``DBusValueError`` naming it, never a trap: at most
/// ``maximumLength`` bytes, at most ``maximumArrayNesting`` arrays and ``maximumStructureNesting`` structures nested (a dict
/// entry counts as a structure, as libdbus counts it), dict entries only directly inside an array, with a basic key and
/// exactly one value type, no empty structure.
public struct DBusSignature: Sendable, Hashable, CustomStringConvertible {
    /// The specification's longest signature, in bytes.
    public static let maximumLength = 255
    /// The specification's deepest nesting of arrays in one signature.
    public static let maximumArrayNesting = 32
    /// The specification's deepest nesting of structures (and dict entries) in one signature.
    public static let maximumStructureNesting = 32

    /// The complete types, in order; empty for the empty signature (a message with no arguments).
    public let types: [DBusType]

    /// Parses and checks `text`.
    /// - Throws: ``DBusValueError`` `signatureTooLong` over 255 bytes, `invalidSignature` (naming the byte offset and
    ///   the rule) for anything else the specification refuses.
    public init(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maximumLength else {
            throw DBusValueError(.signatureTooLong, "a signature of \(bytes.count) bytes; the limit is \(Self.maximumLength)")
        }
        var parser = Parser(bytes: bytes)
        var types: [DBusType] = []
        while parser.offset < bytes.count {
            types.append(try parser.completeType(arrays: 0, structures: 0))
        }
        self.types = types
    }

    /// A signature of the given types, unchecked: for types Baton built itself.
    public init(types: [DBusType]) {
        self.types = types
    }

    /// The signature as D-Bus writes it.
    public var description: String { types.map(\.signature).joined() }

    /// A recursive-descent reader of one signature. Its recursion is bounded: each level is an array or a structure,
    /// and both are counted against the limits before going down.
    private struct Parser {
        let bytes: [UInt8]
        var offset = 0

        func failure(_ rule: String) -> DBusValueError {
            let text = String(decoding: bytes, as: UTF8.self)
            return DBusValueError(.invalidSignature, "signature \(quoted(text)), byte \(offset): \(rule)")
        }

        mutating func completeType(arrays: Int, structures: Int) throws -> DBusType {
            guard offset < bytes.count else { throw failure("a complete type was expected, the signature ended") }
            let code = bytes[offset]
            offset += 1
            switch code {
            case UInt8(ascii: "a"):
                guard arrays < DBusSignature.maximumArrayNesting else {
                    throw failure("more than \(DBusSignature.maximumArrayNesting) arrays nested")
                }
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "{") {
                    return try dictionaryEntry(arrays: arrays + 1, structures: structures)
                }
                return .array(try completeType(arrays: arrays + 1, structures: structures))
            case UInt8(ascii: "("):
                guard structures < DBusSignature.maximumStructureNesting else {
                    throw failure("more than \(DBusSignature.maximumStructureNesting) structures nested")
                }
                var fields: [DBusType] = []
                while offset < bytes.count, bytes[offset] != UInt8(ascii: ")") {
                    fields.append(try completeType(arrays: arrays, structures: structures + 1))
                }
                guard offset < bytes.count else { throw failure("a structure is not closed") }
                guard !fields.isEmpty else { throw failure("an empty structure '()'") }
                offset += 1
                return .structure(fields)
            case UInt8(ascii: "v"):
                return .variant
            case UInt8(ascii: "{"):
                offset -= 1
                throw failure("a dict entry '{' outside an array")
            case UInt8(ascii: ")"), UInt8(ascii: "}"):
                offset -= 1
                throw failure("'\(Character(Unicode.Scalar(code)))' closes nothing")
            default:
                if let basic = DBusType.basicCodes.first(where: { $0.0.asciiValue == code })?.1 { return basic }
                offset -= 1
                throw failure("\(quoted(String(decoding: [code], as: UTF8.self))) is not a D-Bus type code")
            }
        }

        /// `{KV}` after an `a`: `offset` is at the `{`.
        mutating func dictionaryEntry(arrays: Int, structures: Int) throws -> DBusType {
            guard structures < DBusSignature.maximumStructureNesting else {
                throw failure("more than \(DBusSignature.maximumStructureNesting) structures nested")
            }
            offset += 1
            let keyOffset = offset
            let key = try completeType(arrays: arrays, structures: structures + 1)
            guard key.isBasic else {
                offset = keyOffset
                throw failure("a dict entry's key must be a basic type, not \(key.description)")
            }
            guard offset < bytes.count, bytes[offset] != UInt8(ascii: "}") else {
                throw failure("a dict entry holds exactly a key and a value, then '}'")
            }
            let value = try completeType(arrays: arrays, structures: structures + 1)
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "}") else {
                throw failure("a dict entry holds exactly a key and a value, then '}'")
            }
            offset += 1
            return .dictionary(key: key, value: value)
        }
    }
}

/// `text` quoted for an error message, cut if long: BatonCore's quoting, so a hostile 1 MB string makes a short message.
func quoted(_ text: some StringProtocol) -> String {
    BatonCoreError.quoted(text)
}
