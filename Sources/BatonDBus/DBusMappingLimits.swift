import BatonCore

/// Bounds on a value mapped between D-Bus and property lists, checked while mapping, so a hostile value from an app
/// costs bounded time and memory: the mapping stops at the first value over a limit, with an error naming it.
///
/// The defaults are those of an activity payload (SEMANTICS A11): a userInfo that maps within them can be carried to
/// another device, one that does not could not have been anyway.
public struct DBusMappingLimits: Sendable, Hashable {
    /// How many containers (arrays, dict entries, structures, variants) a value may be inside, counted as on the
    /// wire: a property-list dictionary inside a userInfo is three deeper (`a`, `{`, `v`), an array two (`a`, `v`).
    /// Default 64, the D-Bus specification's limit (32 arrays and 32 structures; libdbus refuses a message that nests
    /// variants deeper in all), so a userInfo nests at most 21 dictionaries.
    public var maximumDepth: Int
    /// How many property-list values the whole value may hold, containers and their elements all counted. Default
    /// 65,536: the most a payload's 1 MiB (``ActivityPayload/maximumEncodedSize``) holds at 16 bytes a value, the
    /// least one `v` holding an `x` costs in a D-Bus message.
    public var maximumValues: Int
    /// The longest string, dictionary key, URL or data, in bytes. Default 1 MiB: a longer one cannot fit in a payload.
    public var maximumStringBytes: Int
    /// The whole value's size, counted as 8 bytes a value plus the bytes of its strings, keys and data. Default 1 MiB,
    /// the hard limit on an encoded payload (A11).
    public var maximumTotalBytes: Int

    /// Limits with the given bounds; each defaults to the documented default.
    public init(
        maximumDepth: Int = 64,
        maximumValues: Int = 65_536,
        maximumStringBytes: Int = ActivityPayload.maximumEncodedSize,
        maximumTotalBytes: Int = ActivityPayload.maximumEncodedSize
    ) {
        self.maximumDepth = maximumDepth
        self.maximumValues = maximumValues
        self.maximumStringBytes = maximumStringBytes
        self.maximumTotalBytes = maximumTotalBytes
    }

    /// The default limits.
    public static let `default` = DBusMappingLimits()
}
