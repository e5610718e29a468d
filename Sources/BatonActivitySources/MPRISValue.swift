/// A value as it comes off the session bus in a media player's `Metadata` (`a{sv}`) or a property (issue 27 item 1):
/// the D-Bus types MPRIS uses, with object paths (`o`) as strings and every integer width widened.
public enum MPRISValue: Sendable, Hashable {
    /// `s` or `o`.
    case string(String)
    /// `as`.
    case strings([String])
    /// `x`, `i`, `n`, `y`.
    case int64(Int64)
    /// `t`, `u`, `q`.
    case uint64(UInt64)
    /// `d`.
    case double(Double)
    /// `b`.
    case bool(Bool)

    /// The D-Bus type as a message names it.
    var typeName: String {
        switch self {
        case .string: "a string"
        case .strings: "an array of strings"
        case .int64: "a signed integer"
        case .uint64: "an unsigned integer"
        case .double: "a double"
        case .bool: "a boolean"
        }
    }
}
