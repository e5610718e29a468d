import BatonCore
import Foundation

// In the app library, not BatonCore: NSNumber, NSData and NSNull are Foundation's (not FoundationEssentials'), and the
// agent links no Foundation (docs/ARCHITECTURE.md, "A lean agent").

extension PropertyList {
    /// Converts a plain Swift or Foundation value (what `[AnyHashable: Any]` userInfo dictionaries hold).
    ///
    /// Accepted (SEMANTICS A3): `String`, `Substring`, every fixed-width integer, `Double`, `Float`, `Bool`, `NSNumber`,
    /// `Data`, `[UInt8]`, `Date`, arrays, dictionaries with `String` keys, `NSNull` and `Optional.none`, sets, `URL`,
    /// `UUID`, and `PropertyList` itself.
    /// - Throws: ``BatonCoreError`` `unsupportedType` naming the key path and the Swift type of the first value that is
    ///   none of these, so the mistake is reported where the value is set, not dropped later.
    public init(any value: Any) throws {
        self = try Self.convert(value, path: [])
    }

    /// Converts a dictionary such as an `NSUserActivity`-style `userInfo`; every key must be a `String`.
    public static func dictionary(from values: [AnyHashable: Any]) throws -> [String: PropertyList] {
        guard case .dictionary(let entries) = try convert(values, path: []) else { return [:] }
        return entries
    }

    private static let booleanNumberClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    // Explicit type checks come before bridging casts: on Linux `NSNumber(1) as? Bool` succeeds, and a
    // Swift `Bool` casts to `NSNumber`, so the order decides what a value means.
    private static func convert(_ value: Any, path: [String]) throws -> PropertyList {
        // A real NSNumber (as Foundation's readers return) first: it would otherwise cast to Int or Bool by value.
        let dynamicType = type(of: value)
        if dynamicType is NSNumber.Type, let value = value as? NSNumber {
            return number(value)
        }
        switch value {
        case let value as PropertyList: return value
        case let value as String: return .string(value)
        case let value as Substring: return .string(String(value))
        case let value as Bool where dynamicType == Bool.self: return .bool(value)
        case let value as Int: return .integer(Int64(value))
        case let value as Int64: return .integer(value)
        case let value as Int32: return .integer(Int64(value))
        case let value as Int16: return .integer(Int64(value))
        case let value as Int8: return .integer(Int64(value))
        case let value as UInt: return PropertyList(integer: value) ?? .unsignedInteger(UInt64(value))
        case let value as UInt64: return PropertyList(integer: value) ?? .unsignedInteger(value)
        case let value as UInt32: return .integer(Int64(value))
        case let value as UInt16: return .integer(Int64(value))
        case let value as UInt8: return .integer(Int64(value))
        case let value as Double: return .real(value)
        case let value as Float: return .real(Double(value))
        // Exact types for bytes: an empty [Any] also casts to Data and to [UInt8], and it is an empty array.
        case let value as Data where dynamicType == Data.self: return .data(value)
        case let value as NSData where dynamicType is NSData.Type: return .data(Data(value))
        case let value as [UInt8] where dynamicType == [UInt8].self: return .data(Data(value))
        case let value as Date: return .date(value)
        case let value as URL: return .url(value)
        case let value as UUID: return .uuid(value)
        case is NSNull: return .null
        // `[String: Any]` and Foundation dictionaries arrive here too, as `[AnyHashable: Any]`.
        case let value as [AnyHashable: Any]:
            var entries = [String: PropertyList](minimumCapacity: value.count)
            for (key, element) in value {
                guard let name = key.base as? String else {
                    throw BatonCoreError(
                        .unsupportedType,
                        "\(describeKeyPath(path)): dictionary key of type \(type(of: key.base)) is not a String (A3)"
                    )
                }
                entries[name] = try convert(element, path: path + [path.isEmpty ? name : ".\(name)"])
            }
            return .dictionary(entries)
        case let value as [Any]:
            return .array(try value.enumerated().map { try convert($1, path: path + ["[\($0)]"]) })
        case let value as Set<AnyHashable>:
            return .set(Set(try value.map { try convert($0.base, path: path + ["{}"]) }))
        default:
            // `Optional.none` arrives wrapped in Any; anything else is not a property-list type.
            let mirror = Mirror(reflecting: value)
            if mirror.displayStyle == .optional {
                guard let wrapped = mirror.children.first?.value else { return .null }
                return try convert(wrapped, path: path)
            }
            throw BatonCoreError(
                .unsupportedType,
                "\(describeKeyPath(path)): a value of type \(type(of: value)) is not a property-list type (A3: "
                    + "string, number, bool, data, date, array, dictionary, null, set, URL, UUID)"
            )
        }
    }

    private static func number(_ number: NSNumber) -> PropertyList {
        if ObjectIdentifier(type(of: number)) == booleanNumberClass { return .bool(number.boolValue) }
        switch String(cString: number.objCType) {
        case "d", "f": return .real(number.doubleValue)
        case "Q", "L", "I": return PropertyList(integer: number.uint64Value) ?? .unsignedInteger(number.uint64Value)
        default: return .integer(number.int64Value)
        }
    }

    /// The value as Foundation gives property-list values on Apple's systems: `String`, `NSNumber` for every number
    /// and Boolean, `Data`, `Date`, `[Any]`, `[String: Any]`, `NSNull`, `Set<AnyHashable>`, `URL`, `UUID`. Numbers
    /// are `NSNumber`s so they bridge as they do there: a stored `3` reads back `as? Int` and `as? Double` (3.0) alike
    /// (issue 12). All but the last three are what Foundation's `PropertyListSerialization` accepts.
    public var anyValue: Any {
        switch self {
        case .string(let value): value
        case .integer(let value): NSNumber(value: value)
        case .unsignedInteger(let value): NSNumber(value: value)
        case .real(let value): NSNumber(value: value)
        case .bool(let value): NSNumber(value: value)
        case .data(let value): value
        case .date(let value): value
        case .array(let value): value.map(\.anyValue)
        case .dictionary(let value): value.mapValues(\.anyValue)
        case .null: NSNull()
        case .set(let value): Set(value.map { AnyHashable($0.hashableValue) })
        case .url(let value): value
        case .uuid(let value): value
        }
    }

    /// The value as `AnyHashable`, for set members; containers stay `PropertyList` (they are hashable as such).
    private var hashableValue: AnyHashable {
        switch self {
        case .string(let value): value
        case .integer(let value): Int(value)
        case .unsignedInteger(let value): value
        case .real(let value): value
        case .bool(let value): value
        case .data(let value): value
        case .date(let value): value
        case .url(let value): value
        case .uuid(let value): value
        case .null: NSNull()
        case .array, .dictionary, .set: self
        }
    }
}
