/// One complete D-Bus type: what a single type code, or an array, dictionary or structure of them, describes.
///
/// A dictionary is its own case (`a{kv}`) rather than an array of dict entries, so a dict entry outside an array, which
/// the D-Bus specification forbids, cannot be written. A value built by hand can still hold a type the specification
/// refuses (a dictionary keyed by a variant, an empty structure, 40 arrays deep): ``validated()`` checks it, and the
/// property-list mapping checks every type it meets, so such a type is an error, never a trap.
public indirect enum DBusType: Sendable, Hashable {
    /// `y`, an unsigned 8-bit integer.
    case byte
    /// `b`, a boolean (0 or 1 on the wire).
    case boolean
    /// `n`, a signed 16-bit integer.
    case int16
    /// `q`, an unsigned 16-bit integer.
    case uint16
    /// `i`, a signed 32-bit integer.
    case int32
    /// `u`, an unsigned 32-bit integer.
    case uint32
    /// `x`, a signed 64-bit integer.
    case int64
    /// `t`, an unsigned 64-bit integer.
    case uint64
    /// `d`, an IEEE 754 double.
    case double
    /// `s`, a UTF-8 string without NUL.
    case string
    /// `o`, an object path such as `/org/baton/Agent`.
    case objectPath
    /// `g`, a type signature.
    case signature
    /// `h`, an index into the message's array of Unix file descriptors.
    case unixFD
    /// `v`, a value that carries its own type.
    case variant
    /// `aT`, elements of one type.
    case array(DBusType)
    /// `a{KV}`, entries with a basic key type.
    case dictionary(key: DBusType, value: DBusType)
    /// `(T…)`, one or more fields.
    case structure([DBusType])

    /// The type code of each basic type, in the specification's order: what ``isBasic`` and the parser share.
    static let basicCodes: [(Character, DBusType)] = [
        ("y", .byte), ("b", .boolean), ("n", .int16), ("q", .uint16), ("i", .int32), ("u", .uint32), ("x", .int64),
        ("t", .uint64), ("d", .double), ("s", .string), ("o", .objectPath), ("g", .signature), ("h", .unixFD),
    ]

    /// Whether this is a basic type, the only kind a dictionary may be keyed by.
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: false
        default: true
        }
    }

    /// The type's signature, such as `a{sv}`. Unbounded: for a type that may be hostile, ``validated()`` first.
    public var signature: String {
        var text = ""
        _ = append(to: &text, limit: Int.max)
        return text
    }

    /// This type, after checking it against the D-Bus specification's rules for a single complete type (signature at
    /// most 255 bytes, at most 32 arrays and 32 structures nested, dictionaries keyed by a basic type, no empty
    /// structure).
    /// - Throws: ``DBusValueError`` `invalidSignature` or `signatureTooLong`. The walk stops after 256 type codes, so a
    ///   hostile type a million deep costs as little as a short one.
    @discardableResult
    public func validated() throws -> DBusType {
        var text = ""
        guard append(to: &text, limit: DBusSignature.maximumLength) else {
            throw DBusValueError(.signatureTooLong, "a type's signature is over \(DBusSignature.maximumLength) bytes")
        }
        let parsed = try DBusSignature(text)
        guard parsed.types.count == 1 else {
            throw DBusValueError(.invalidSignature, "\(text) is not a single complete type")
        }
        return self
    }

    /// Appends the signature to `text`; false, leaving `text` partial, as soon as it would pass `limit` bytes. Each
    /// level of recursion adds a byte first, so the recursion is never deeper than `limit`.
    private func append(to text: inout String, limit: Int) -> Bool {
        func add(_ code: Character) -> Bool {
            guard text.utf8.count < limit else { return false }
            text.append(code)
            return true
        }
        switch self {
        case .variant: return add("v")
        case .array(let element): return add("a") && element.append(to: &text, limit: limit)
        case .dictionary(let key, let value):
            return add("a") && add("{") && key.append(to: &text, limit: limit) && value.append(to: &text, limit: limit)
                && add("}")
        case .structure(let fields):
            guard add("(") else { return false }
            for field in fields where !field.append(to: &text, limit: limit) { return false }
            return add(")")
        default:
            guard let code = Self.basicCodes.first(where: { $0.1 == self })?.0 else { return false }
            return add(code)
        }
    }
}

extension DBusType: CustomStringConvertible {
    /// The signature, cut at 255 bytes with `…` for a type too long to be valid.
    public var description: String {
        var text = ""
        return append(to: &text, limit: DBusSignature.maximumLength) ? text : text + "…"
    }
}
