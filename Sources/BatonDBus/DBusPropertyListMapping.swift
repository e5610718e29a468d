import BatonCore

/// Property lists to D-Bus values and back (issue 28 item 1): what an app on the session bus sends as a userInfo
/// (`a{sv}`) becomes the userInfo an activity carries (SEMANTICS A3), and a continued activity's userInfo becomes an
/// `a{sv}` for the app. docs/PROTOCOL.md §10 has the table both ways.
///
/// Property-list types with a D-Bus type map to it (string `s`, integer `x`, real `d`, data `ay`, array `av`,
/// dictionary `a{sv}`...). The five that D-Bus has no type for (date, URL, UUID, set, null) map to a tagged structure
/// `(sv)`: a tag naming the type and the value in a variant, e.g. `("date", <d 7.5e8>)`. A structure is what every
/// binding builds in one line, the tag says what the value is, so an app in any language can read and write them, and
/// they come back as the same property-list type. Arriving, every D-Bus integer type widens to an integer, `o` and `g`
/// become strings, other structures become arrays of their fields, variants are unwrapped; `h` (a file descriptor)
/// and dictionaries not keyed by strings have no property-list type.
///
/// Every error is a ``DBusValueError`` whose message starts with the key path of what did not map
/// (`userInfo.photos[3].when: …`). The ``limits`` are checked as the mapping goes, so it stops at the first value over
/// one, having spent time and memory in proportion to what it read up to there.
public struct DBusPropertyListMapping: Sendable {
    /// The bounds checked while mapping.
    public var limits: DBusMappingLimits

    /// A mapping within `limits`.
    public init(limits: DBusMappingLimits = .default) {
        self.limits = limits
    }

    /// A userInfo as an `a{sv}`, its keys in sorted order so the same userInfo makes the same message.
    /// - Throws: ``DBusValueError`` naming the key path: `invalidString` for a string or key with a NUL (D-Bus strings
    ///   cannot hold one), `invalidTaggedValue` for a date that is not finite, or a limit's code.
    public func dbusValue(userInfo: [String: PropertyList], root: String = "userInfo") throws -> DBusValue {
        var writer = Writer(budget: MappingBudget(limits: limits, root: root))
        return try writer.dictionary(userInfo, depth: 0)
    }

    /// One property-list value as the D-Bus value a variant holds for it (a string as `s`, a date as `(sv)`...).
    /// - Throws: as ``dbusValue(userInfo:root:)``.
    public func dbusValue(_ value: PropertyList, root: String = "value") throws -> DBusValue {
        var writer = Writer(budget: MappingBudget(limits: limits, root: root))
        return try writer.value(value, depth: 0)
    }

    /// The userInfo an `a{sv}` (or any dictionary keyed by strings) carries.
    /// - Throws: ``DBusValueError`` naming the key path: `unmappable` for a value that is not such a dictionary or
    ///   holds an `h` or a dictionary keyed by numbers, `duplicateKey`, `invalidTaggedValue`, `typeMismatch`,
    ///   `invalidString`, `invalidSignature` for a value no D-Bus message could carry, or a limit's code.
    public func userInfo(from value: DBusValue, root: String = "userInfo") throws -> [String: PropertyList] {
        var reader = Reader(budget: MappingBudget(limits: limits, root: root))
        guard case .dictionary = value else {
            throw reader.budget.error(.unmappable, "a userInfo is an 'a{sv}', not a '\(value.shallowDescription)'")
        }
        guard case .dictionary(let entries) = try reader.propertyList(value, expected: nil, nesting: .init()) else {
            throw reader.budget.error(.unmappable, "a userInfo is an 'a{sv}'")
        }
        return entries
    }

    /// The property-list value of any D-Bus value (what a variant holds).
    /// - Throws: as ``userInfo(from:root:)``.
    public func propertyList(from value: DBusValue, root: String = "value") throws -> PropertyList {
        var reader = Reader(budget: MappingBudget(limits: limits, root: root))
        return try reader.propertyList(value, expected: nil, nesting: .init())
    }

    /// The tags of the structures `(sv)` that carry the property-list types D-Bus has none for.
    public enum Tag {
        /// A date: a `d`, seconds since 2001-01-01T00:00:00Z, the property lists' own epoch, so it comes back bit for
        /// bit (seconds since 1970 would round through the 978,307,200 s between the two).
        public static let date = "date"
        /// A URL: an `s`, its absolute string.
        public static let url = "url"
        /// A UUID: an `s`, its 36 characters (written in lower case, read in either).
        public static let uuid = "uuid"
        /// A set: an `av` of its members, in no particular order.
        public static let set = "set"
        /// Null: an `s` that is empty when Baton writes it, whatever it is when read.
        public static let null = "null"
        /// All of them, for messages.
        static let all = [date, url, uuid, set, null]
    }
}
