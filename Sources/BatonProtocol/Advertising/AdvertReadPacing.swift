/// When the agent reads its advert sockets (issue 25 item 10): at once, a wake-up per datagram, while adverts come
/// at the rate devices send them; every ``tickNanoseconds`` in batches while they come faster than
/// ``enterRate`` a second (a flood: hundreds of foreign advertisers, or a hostile sender).
///
/// Waking for each datagram is what a flood costs most: 500 advertisers at 10 a second cost about 5 % of a core in
/// wake-ups and reads alone, before any advert is looked at. Read in batches (`recvmmsg`), the same 5,000 datagrams
/// cost a hundred wake-ups. An advert is re-sent every second, so the 10 ms it may wait is not seen by anyone; at the
/// rates a household's devices advertise, nothing changes.
///
/// A pure state machine (time passed in, in nanoseconds of any monotonic clock): the socket's handler reports each
/// datagram and each tick, and does what the answer says.
public struct AdvertReadPacing: Sendable {
    /// How the socket is read.
    public enum Mode: Sendable, Equatable {
        /// Read when a datagram arrives (the kernel wakes the agent for each).
        case immediate
        /// Read every ``AdvertReadPacing/tickNanoseconds``, whatever is waiting, in one go.
        case paced
    }

    /// What the socket's handler does.
    public enum Action: Sendable, Equatable {
        case none
        /// Stop reading on arrival; read at each tick from now on.
        case startPacing
        /// Read on arrival again; stop the ticks.
        case stopPacing
    }

    /// Datagrams within one window that switch to paced reads.
    public static let enterRate = 250
    /// Datagrams in a whole window of paced reads below which reads go back to immediate (lower than
    /// ``enterRate``, so a rate near it does not flip the mode every second).
    public static let leaveRate = 100
    /// How often a paced socket is read: 10 ms.
    public static let tickNanoseconds: UInt64 = 10_000_000
    /// The window rates are counted over: 1 s.
    public static let windowNanoseconds: UInt64 = 1_000_000_000

    public private(set) var mode = Mode.immediate
    /// When the current window began (nil before the first datagram).
    var windowStart: UInt64?
    /// Datagrams in the current window.
    var count = 0

    public init() {}

    /// `datagrams` were read at `now`.
    public mutating func received(_ datagrams: Int = 1, at now: UInt64) -> Action {
        let rolled = roll(at: now)
        count += datagrams
        if rolled == .stopPacing { return .stopPacing }
        guard mode == .immediate, count >= Self.enterRate else { return .none }
        mode = .paced
        return .startPacing
    }

    /// A tick of paced reads at `now` (the handler reads the socket at each): back to immediate reads once a whole
    /// window passed with fewer than ``leaveRate`` datagrams.
    public mutating func tick(at now: UInt64) -> Action {
        roll(at: now)
    }

    /// Starts a new window when the current one is over, judging the one that ended.
    private mutating func roll(at now: UInt64) -> Action {
        guard let start = windowStart, now >= start else {
            // A first datagram, or a clock that went back: a window starts now, and the unfinished one is not judged.
            windowStart = now
            count = 0
            return .none
        }
        guard now - start >= Self.windowNanoseconds else { return .none }
        let quiet = count < Self.leaveRate
        windowStart = now
        count = 0
        guard mode == .paced, quiet else { return .none }
        mode = .immediate
        return .stopPacing
    }
}
