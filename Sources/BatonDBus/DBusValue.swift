#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A D-Bus value of any type: the basic types, arrays (with their element type, so an empty one is typed), dictionaries,
/// structures and variants.
///
/// What an app sends over the session bus becomes one of these before Baton reads it (issue 28 item 1), and what Baton
/// sends is built as one. A value built by hand may break the specification (an `i` inside an array of `s`, an empty
/// structure, a NUL in a string): ``DBusPropertyListMapping`` checks every node it reads and throws
/// ``DBusValueError`` for such a value, so nothing here needs to be trusted.
///
/// Only the dictionary and variant cases are boxed: a number or a string is held inline, so an array of 65,536 of
/// them is one allocation, not 65,537.
public enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// An index into the message's file descriptors (`h`): a stream's end, never part of a userInfo.
    case unixFD(UInt32)
    /// An `ay` held as bytes: the compact form of `.array(.byte, …)`, which every binding special-cases too (GLib's
    /// bytestrings, dbus-python's `ByteArray`). One value for a megabyte of data, instead of a million.
    case bytes(Data)
    /// `aT`: elements that are all of type `T` (the first field), which an empty array needs to have a type at all.
    case array(DBusType, [DBusValue])
    /// `a{KV}`: entries in the order they came; a key may repeat on the wire, a property-list dictionary refuses that.
    indirect case dictionary(key: DBusType, value: DBusType, [DBusDictionaryEntry])
    /// `(…)`: one or more fields.
    case structure([DBusValue])
    /// `v`: a value that carries its own type.
    indirect case variant(DBusValue)

    /// The value's complete type. Recursive through structures: for a value that may be hostile, read it through
    /// ``DBusPropertyListMapping``, which bounds its depth, rather than asking this.
    public var type: DBusType {
        switch self {
        case .bytes: .array(.byte)
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        default: basicType ?? .variant
        }
    }

    /// The type of a basic value; nil for a container.
    var basicType: DBusType? {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .bytes, .array, .dictionary, .structure, .variant: nil
        }
    }

    /// Whether this value's outermost type is `expected`, without looking into its elements or fields (the mapping
    /// checks those as it reaches them). Bounded: equality of two types stops at the shallower one, and `expected`
    /// comes from a type already checked to be at most 255 codes.
    func isShallowly(_ expected: DBusType) -> Bool {
        switch self {
        case .bytes: expected == .array(.byte)
        case .array(let element, _): expected == .array(element)
        case .dictionary(let key, let value, _): expected == .dictionary(key: key, value: value)
        case .structure(let fields):
            if case .structure(let types) = expected { types.count == fields.count } else { false }
        case .variant: expected == .variant
        default: basicType == expected
        }
    }

    /// The outermost type, for an error message: a container's own declared type (cut at 255 bytes), `(…)` for a
    /// structure, whose fields are not looked into.
    var shallowDescription: String {
        switch self {
        case .structure: "(…)"
        default: type.description
        }
    }
}

/// One entry of a D-Bus dictionary (`{KV}`).
public struct DBusDictionaryEntry: Sendable, Hashable {
    /// The key: a basic value of the dictionary's key type.
    public var key: DBusValue
    /// The value, of the dictionary's value type.
    public var value: DBusValue

    /// An entry of `key` and `value`.
    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}
