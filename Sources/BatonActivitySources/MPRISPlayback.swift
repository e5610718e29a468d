import BatonCore

/// Where a player is in its track, as read off the bus at one moment (issue 27 item 1): `PlaybackStatus`, `Position`
/// and `Rate`, and when they were read, so another device can compute where it is now (``position(at:length:)``).
///
/// Times are microseconds on the clock the caller names: the agent uses the wall clock (microseconds since 1970), so
/// the continuing device, whose clock agents compare, computes with its own.
public struct MPRISPlayback: Sendable, Hashable {
    /// `PlaybackStatus`.
    public enum Status: String, Sendable, Hashable {
        case playing = "Playing"
        case paused = "Paused"
        case stopped = "Stopped"
    }

    /// The fastest rate taken (mpv's own maximum is 100): past it a position "now" means nothing.
    public static let maximumRate = 100.0

    /// `PlaybackStatus`.
    public var status: Status
    /// `Position` in microseconds, within the track's length when one is known.
    public var position: Int64
    /// `Rate`: 1 is normal speed.
    public var rate: Double
    /// When they were read, in microseconds on the caller's clock.
    public var readAt: Int64

    /// Checks what a player said.
    /// - Parameters:
    ///   - status: `PlaybackStatus`, a string.
    ///   - position: `Position` (`x`; a `t` within range is taken too).
    ///   - rate: `Rate` (`d`); nil when the player does not have the property (MPRIS makes it optional): 1.
    ///   - readAt: when they were read.
    ///   - length: the track's `mpris:length`, if known: a position past it (players overshoot at the end) is clamped
    ///     to it.
    /// - Throws: ``ActivitySourceError`` `invalidMetadata` for a status that is not `Playing`, `Paused` or `Stopped`,
    ///   a negative position or one past ``MPRISMetadata/maximumMicroseconds`` (-1, 2^63), a rate that is not finite,
    ///   not positive (MPRIS forbids 0: a paused player says `Paused`) or above ``maximumRate``, wrong types.
    public init(status: MPRISValue, position: MPRISValue, rate: MPRISValue?, readAt: Int64, length: Int64? = nil) throws {
        guard case .string(let text) = status, let status = Status(rawValue: text) else {
            throw ActivitySourceError(.invalidMetadata, "the player's PlaybackStatus \(Self.shown(status)) is not Playing, Paused or Stopped")
        }
        let microseconds: Int64
        switch position {
        case .int64(let value) where value >= 0 && value <= MPRISMetadata.maximumMicroseconds:
            microseconds = value
        case .uint64(let value) where value <= UInt64(MPRISMetadata.maximumMicroseconds):
            microseconds = Int64(value)
        case .int64, .uint64:
            throw ActivitySourceError(.invalidMetadata, "the player's Position \(Self.shown(position)) µs is negative or more than ten years")
        default:
            throw ActivitySourceError(.invalidMetadata, "the player's Position is \(position.typeName), not an integer")
        }
        var speed = 1.0
        if let rate {
            guard case .double(let value) = rate else {
                throw ActivitySourceError(.invalidMetadata, "the player's Rate is \(rate.typeName), not a double")
            }
            guard value.isFinite, value > 0, value <= Self.maximumRate else {
                throw ActivitySourceError(.invalidMetadata, "the player's Rate \(value) is not above 0 and at most \(Self.maximumRate)")
            }
            speed = value
        }
        self.status = status
        self.position = length.map { min(microseconds, max(0, $0)) } ?? microseconds
        self.rate = speed
        self.readAt = readAt
    }

    /// Where the player is at `now` (microseconds on the clock of ``readAt``): the position read, plus the time since
    /// at its rate while playing; within 0 and `length` (or ``MPRISMetadata/maximumMicroseconds``). A `now` before
    /// ``readAt`` (clocks a little apart) counts as no time passed.
    public func position(at now: Int64, length: Int64? = nil) -> Int64 {
        guard status == .playing else { return position }
        let (elapsed, overflow) = now.subtractingReportingOverflow(readAt)
        let passed = overflow ? (now > readAt ? Double(Int64.max) : 0) : Double(max(0, elapsed))
        let end = Double(min(max(0, length ?? MPRISMetadata.maximumMicroseconds), MPRISMetadata.maximumMicroseconds))
        let reached = min(Double(position) + passed * rate, end)
        return Int64(max(0, reached).rounded(.down))
    }

    private static func shown(_ value: MPRISValue) -> String {
        switch value {
        case .string(let text): BatonCoreError.quoted(text, limit: 40)
        case .int64(let number): "\(number)"
        case .uint64(let number): "\(number)"
        default: value.typeName
        }
    }
}
