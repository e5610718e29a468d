/// One continuation stream's flow control as an agent sees it (F3, docs/PROTOCOL.md §8), as a pure state machine:
/// bytes in, how many to send or credit out. No buffers, sockets or clocks: the agent keeps the bytes and does what
/// this says.
///
/// Credit-based, per stream and per direction: a side sends at most what the other has credited (its initial
/// `window`, then each `credit`), and credits bytes back only once its own app has taken them. So an agent holds at
/// most ``window`` bytes of a stream for a slow app to read, a fast writer waits (its agent stops reading its
/// socket) instead of filling memory, and a stalled stream takes nothing from the others or from fetches sharing the
/// connection.
public struct StreamFlow: Sendable, Hashable {
    /// The receive window an agent offers per stream unless configured: room for loopback's bandwidth-delay product
    /// at full speed, small enough that the most streams a link may carry stay far below the link's own limit.
    public static let defaultWindow = 512 << 10
    /// The largest window or credit a message may carry; more is a protocol violation.
    public static let maximumWindow = 16 << 20
    /// The most credit a side may have been given and not used: a peer crediting beyond it is broken.
    public static let maximumCredit = 64 << 20

    /// The window this side offers: what it may hold for its app at once.
    public let window: Int
    /// Bytes this side may still send before the peer credits more.
    public private(set) var sendCredit: Int
    /// Bytes the peer may still send before this side credits more.
    public private(set) var receiveAllowance: Int
    /// Bytes the app handed over that wait for credit (the agent holds them; it reads no more meanwhile).
    public private(set) var queued = 0
    /// Bytes the app has taken and not yet credited back.
    var taken = 0
    /// The app ended its side (half-close); the `eof` goes out once its queued bytes have.
    public private(set) var appEnded = false
    /// The `eof` went out: this side sends nothing more.
    public private(set) var endSent = false
    /// The peer's `eof` arrived: it sends nothing more.
    public private(set) var endReceived = false

    /// A stream offering `window` bytes to the peer, which offered `peerWindow`.
    public init(window: Int = StreamFlow.defaultWindow, peerWindow: Int) {
        self.window = window
        self.sendCredit = peerWindow
        self.receiveAllowance = window
    }

    /// What to send now: `bytes` from the head of the queue, then `eof` when `end`.
    public struct Send: Sendable, Hashable {
        public var bytes: Int
        public var end: Bool

        public static let nothing = Send(bytes: 0, end: false)
    }

    /// Whether the agent should read more from its app: nothing is waiting, credit is left, and the app has not ended.
    public var wantsAppData: Bool { queued == 0 && sendCredit > 0 && !appEnded }

    /// Whether both directions have ended: the stream is over (cleanly).
    public var isFinished: Bool { endSent && endReceived }

    /// The app handed over `count` bytes (they join the queue).
    /// - Throws: `flowViolation` when the app already ended its side: they would follow the `eof`.
    public mutating func appSent(_ count: Int) throws -> Send {
        guard !appEnded else {
            throw BatonProtocolError(.flowViolation, "the app sent \(count) bytes after ending its side of the stream")
        }
        queued += count
        return drain()
    }

    /// The app ended its side.
    public mutating func appFinished() -> Send {
        appEnded = true
        return drain()
    }

    /// The peer credited `count` bytes more.
    /// - Throws: `flowViolation` when `count` is not positive or takes the unused credit past ``maximumCredit``.
    public mutating func credited(_ count: Int) throws -> Send {
        // Compared without adding, so no count can overflow.
        guard count > 0, count <= Self.maximumCredit - sendCredit else {
            throw BatonProtocolError(.flowViolation, "the peer credited \(count) bytes on top of \(sendCredit) unused")
        }
        sendCredit += count
        return drain()
    }

    mutating func drain() -> Send {
        let bytes = min(queued, sendCredit)
        queued -= bytes
        sendCredit -= bytes
        let end = appEnded && queued == 0 && !endSent
        if end { endSent = true }
        return Send(bytes: bytes, end: end)
    }

    /// The peer sent `count` bytes, which go to the app.
    /// - Throws: `flowViolation` when they exceed what this side credited, or arrive after the peer's `eof`.
    public mutating func peerSent(_ count: Int) throws {
        guard !endReceived else {
            throw BatonProtocolError(.flowViolation, "the peer sent data after ending the stream")
        }
        guard count <= receiveAllowance else {
            throw BatonProtocolError(.flowViolation, "the peer sent \(count) bytes with only \(receiveAllowance) credited")
        }
        receiveAllowance -= count
    }

    /// The peer ended its side.
    public mutating func peerFinished() {
        endReceived = true
    }

    /// The app took `count` bytes; returns the credit to send the peer, if it is time: once a quarter of the window
    /// was taken (so credits do not cost a message per frame), or the peer has nothing left to send with.
    public mutating func appTook(_ count: Int) -> Int? {
        taken += count
        // Never a credit of 0 bytes (taking nothing, or an empty data frame): the peer would refuse it.
        guard taken > 0, !endReceived, taken >= window / 4 || receiveAllowance == 0 else { return nil }
        defer { taken = 0 }
        receiveAllowance += taken
        return taken
    }
}

/// The bounds on continuation streams (docs/PROTOCOL.md §8): what one device or app may open, and how long each
/// step may take.
public enum StreamLimits {
    /// Streams open at once over one session (one device pair, both directions together). Past it, `stream` is
    /// answered `fail`/`tooManyStreams`. With ``StreamFlow/defaultWindow`` this bounds what a session holds in
    /// flight to 8 MiB each way, half the point where a connection that stopped reading is dropped.
    public static let perSession = 16
    /// Streams one app may have open at once on its device (either end). Past it, `tooManyStreams`. An end counts
    /// until its agent has closed the app's connection for it, not only while the stream is open (issue 25 item 3).
    public static let perApp = 8
    /// Milliseconds an agent keeps an app's end of a stream that has ended (F3, PROTOCOL §8, issue 25 item 3): a
    /// reset stream's app has this long to take the `reset`, an app whose stream finished cleanly may take nothing
    /// of what is left for it for this long; then its connection is closed and what it had not read is dropped. An
    /// app that never reads cannot keep an end, its descriptor and its queued bytes past its stream.
    public static let releaseMilliseconds: UInt64 = 2_000
    /// Milliseconds the originating app has to take (or decline) a stream announced to it, else `appNotAnswering`.
    public static let acceptMilliseconds: UInt64 = 5_000
    /// Milliseconds the continuing agent waits for `opened` (including the originating app's acceptance).
    public static let openMilliseconds: UInt64 = 10_000
    /// While streams are open over a session that has been quiet this long (milliseconds), a `ping` goes out; a
    /// ping unanswered for as long again ends the session and its streams with `peerGone` (a dead peer, F3).
    public static let keepaliveMilliseconds: UInt64 = 2_000
    /// How often a session with streams open looks whether it has been quiet for ``keepaliveMilliseconds``: a
    /// quarter of it, so the ping leaves at most 0.5 s late and a dead peer is noticed 4-4.5 s after it fell silent
    /// (PROTOCOL §8, "about 4 s"). Looking only every 2 s made that up to 6 s (issue 25 item 7).
    public static let keepaliveCheckMilliseconds: UInt64 = keepaliveMilliseconds / 4

    /// Milliseconds from a peer falling silent to its streams being reset (`peerGone`), when the session's checks
    /// run every ``keepaliveCheckMilliseconds`` from `checkPhase` (the first check's time, modulo the interval):
    /// the first check that finds it quiet for ``keepaliveMilliseconds`` pings, and the ping waits as long again.
    public static func peerGoneMilliseconds(silentAt silence: UInt64, checkPhase: UInt64) -> UInt64 {
        let interval = keepaliveCheckMilliseconds
        let phase = checkPhase % interval
        let due = silence + keepaliveMilliseconds
        // The first check at or after `due`: phase + k * interval.
        let check = due <= phase ? phase : phase + (due - phase + interval - 1) / interval * interval
        return check + keepaliveMilliseconds - silence
    }
}
