#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JSON document as plain values, read with `JSONDecoder` (FoundationEssentials has no `JSONSerialization`, and the
/// agent links no full Foundation). ``anyValue`` gives the shapes the association readers take apart: `[String: Any]`,
/// `[Any]`, `String`, `Double`, `Bool`, and `JSONTree.null` for `null` (so a `null` is never mistaken for a value).
enum JSONTree: Decodable, Sendable {
    case object([String: JSONTree])
    case array([JSONTree])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONTree].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONTree].self))
        }
    }

    var anyValue: Any {
        switch self {
        case .object(let fields): fields.mapValues(\.anyValue)
        case .array(let elements): elements.map(\.anyValue)
        case .string(let text): text
        case .number(let number): number
        case .bool(let flag): flag
        case .null: JSONTree.null
        }
    }
}
