/// Bounds every property-list decoder enforces, so hostile input costs bounded time and memory.
///
/// The defaults are far above anything a real `Info.plist` or activity payload needs, and far below what would
/// hurt a device: a decode never allocates more than a small multiple of ``maximumInputBytes`` and never recurses
/// deeper than ``maximumDepth``.
public struct PropertyListLimits: Sendable, Hashable {
    /// The largest input accepted, in bytes. Default 64 MiB: Info.plist files are kilobytes, payloads are
    /// capped at 1 MiB by ``ActivityPayload/maximumEncodedSize``.
    public var maximumInputBytes: Int
    /// How deeply containers may nest. Default 256: real documents nest fewer than 20 levels; the bound keeps
    /// recursion within a thread's stack on every platform.
    public var maximumDepth: Int
    /// How many values a decoded document may contain, counting every element of every container. A binary file
    /// can reference one container from many places; this bound stops a small file from expanding into a huge
    /// tree ("billion laughs"). Default 4 million.
    public var maximumObjects: Int

    /// Limits with the given bounds; each defaults to the documented default.
    public init(maximumInputBytes: Int = 64 << 20, maximumDepth: Int = 256, maximumObjects: Int = 4_000_000) {
        self.maximumInputBytes = maximumInputBytes
        self.maximumDepth = maximumDepth
        self.maximumObjects = maximumObjects
    }

    /// The default limits.
    public static let `default` = PropertyListLimits()

    /// Throws `inputTooLarge` when `byteCount` is above ``maximumInputBytes``: decoders check before parsing.
    func checkInputSize(_ byteCount: Int) throws {
        guard byteCount <= maximumInputBytes else {
            throw BatonCoreError(.inputTooLarge, "input is \(byteCount) bytes, the limit is \(maximumInputBytes)")
        }
    }
}
