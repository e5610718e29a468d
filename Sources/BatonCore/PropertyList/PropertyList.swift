#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A property-list value: everything an activity's `userInfo` may hold (SEMANTICS A3).
///
/// The first eight cases are the classic property-list types that every reader (Foundation, Python's
/// `plistlib`, Apple's tools) understands. `null`, `set`, `url` and `uuid` are the extra types Handoff allows in
/// `userInfo`; the binary codec carries them (see docs/PROTOCOL.md), XML and JSON cannot and say so with an error.
///
/// Equality is by value: two reals that are both NaN are equal, and an integer compares equal across
/// ``integer(_:)`` and ``unsignedInteger(_:)`` when the numbers are the same.
public enum PropertyList: Sendable {
    case string(String)
    /// A signed 64-bit integer: the common integer case.
    case integer(Int64)
    /// An integer above `Int64.max`. Decoders produce this case only for such values; values that fit in
    /// `Int64` always come back as ``integer(_:)``.
    case unsignedInteger(UInt64)
    case real(Double)
    case bool(Bool)
    case data(Data)
    case date(Date)
    case array([PropertyList])
    /// A dictionary with string keys. Encoders write the keys sorted, so output is deterministic.
    case dictionary([String: PropertyList])
    case null
    case set(Set<PropertyList>)
    case url(URL)
    case uuid(UUID)
}

extension PropertyList {
    /// The name of this value's type as property-list documents spell it (`string`, `integer`, `dict`, ...).
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer, .unsignedInteger: "integer"
        case .real: "real"
        case .bool: "bool"
        case .data: "data"
        case .date: "date"
        case .array: "array"
        case .dictionary: "dict"
        case .null: "null"
        case .set: "set"
        case .url: "url"
        case .uuid: "uuid"
        }
    }

    /// An integer from any fixed-width integer type; `nil` when it does not fit in 64 bits.
    public init?<T: BinaryInteger>(integer value: T) {
        if let signed = Int64(exactly: value) {
            self = .integer(signed)
        } else if let unsigned = UInt64(exactly: value) {
            self = .unsignedInteger(unsigned)
        } else {
            return nil
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The integer, if this is an integer that fits in `Int64`.
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .unsignedInteger(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// The number, if this is a real or an integer.
    public var doubleValue: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        case .unsignedInteger(let value): Double(value)
        default: nil
        }
    }

    /// The boolean, if this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The bytes, if this is data.
    public var dataValue: Data? {
        if case .data(let value) = self { return value }
        return nil
    }

    /// The date, if this is a date.
    public var dateValue: Date? {
        if case .date(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [PropertyList]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The entries, if this is a dictionary.
    public var dictionaryValue: [String: PropertyList]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }

    /// The value under `key`, if this is a dictionary that has one.
    public subscript(key: String) -> PropertyList? {
        if case .dictionary(let value) = self { return value[key] }
        return nil
    }

    /// The number of values in this tree, itself included: what the codecs' object limits count.
    public var nodeCount: Int {
        switch self {
        case .array(let elements): elements.reduce(1) { $0 + $1.nodeCount }
        case .dictionary(let entries): entries.values.reduce(1 + entries.count) { $0 + $1.nodeCount }
        case .set(let members): members.reduce(1) { $0 + $1.nodeCount }
        default: 1
        }
    }

    /// How deeply containers nest: 0 for a scalar, 1 for a flat array or dictionary.
    public var nestingDepth: Int {
        switch self {
        case .array(let elements): 1 + (elements.lazy.map(\.nestingDepth).max() ?? 0)
        case .dictionary(let entries): 1 + (entries.values.lazy.map(\.nestingDepth).max() ?? 0)
        case .set(let members): 1 + (members.lazy.map(\.nestingDepth).max() ?? 0)
        default: 0
        }
    }
}

// MARK: - Equality by value

extension PropertyList: Hashable {
    public static func == (lhs: PropertyList, rhs: PropertyList) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.unsignedInteger(let a), .unsignedInteger(let b)): a == b
        case (.integer(let a), .unsignedInteger(let b)), (.unsignedInteger(let b), .integer(let a)):
            a >= 0 && UInt64(a) == b
        // Bit-for-bit NaN payloads are not part of a value; any NaN equals any NaN.
        case (.real(let a), .real(let b)): a == b || (a.isNaN && b.isNaN)
        case (.bool(let a), .bool(let b)): a == b
        case (.data(let a), .data(let b)): a == b
        case (.date(let a), .date(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.dictionary(let a), .dictionary(let b)): a == b
        case (.null, .null): true
        case (.set(let a), .set(let b)): a == b
        case (.url(let a), .url(let b)): a == b
        case (.uuid(let a), .uuid(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .string(let value): hasher.combine(value)
        case .integer(let value):
            hasher.combine(0 as UInt8)
            hasher.combine(value)
        case .unsignedInteger(let value):
            // Same hash as the equal `.integer` when the value fits in Int64.
            hasher.combine(0 as UInt8)
            if let signed = Int64(exactly: value) { hasher.combine(signed) } else { hasher.combine(value) }
        case .real(let value):
            hasher.combine(1 as UInt8)
            if value.isNaN { hasher.combine(Double.nan.bitPattern) } else { hasher.combine(value) }
        case .bool(let value): hasher.combine(value)
        case .data(let value): hasher.combine(value)
        case .date(let value): hasher.combine(value)
        case .array(let value): hasher.combine(value)
        case .dictionary(let value): hasher.combine(value)
        case .null: hasher.combine(2 as UInt8)
        case .set(let value): hasher.combine(value)
        case .url(let value): hasher.combine(value)
        case .uuid(let value): hasher.combine(value)
        }
    }
}

// MARK: - Literals

extension PropertyList: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension PropertyList: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension PropertyList: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension PropertyList: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PropertyList: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: PropertyList...) { self = .array(elements) }
}

extension PropertyList: ExpressibleByDictionaryLiteral {
    /// A dictionary literal; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, PropertyList)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension PropertyList: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}
