/// What the advert sockets' troubles call for (issue 25 item 1), decided without a clock or a socket: the caller
/// passes the time (uptime milliseconds) and does what the answer says. Two machines:
///
/// - ``SendFailures``: a failed send never closes a socket (``AdvertSocket`` sends with `sendto` itself, so NIO's
///   close-on-write-error never runs); it is logged once when a destination starts failing, and once when every
///   send works again. A link that is down for a while fails every advert round; it is one warning, not one a second.
/// - ``ReopenBackoff``: a socket that closes anyway (a read error NIO deems fatal) is reopened after 1 s, then 2, 4,
///   8, 16 and every 30 s, with one warning when it closes and one line when it is back; never a loop that spins.
enum AdvertSocketHealth {
    /// Failed sends, by destination, since every send last worked.
    struct SendFailures: Equatable, Sendable {
        /// The destinations failing now (the group, or an address), with when each started.
        private(set) var failing: [String: UInt64] = [:]
        /// Sends that failed since every send last worked.
        private(set) var failedSends = 0
        /// When the first of them failed.
        private(set) var since: UInt64?

        /// What to log after a round of sends.
        enum Report: Equatable, Sendable {
            /// Destinations that began to fail in this round (warn, once), with why.
            case started([Failure])
            /// Every send of the round worked after `failedSends` had failed over `milliseconds` (say so, once).
            case recovered(failedSends: Int, milliseconds: UInt64)
        }

        struct Failure: Equatable, Sendable {
            let destination: String
            let error: String
        }

        /// Records one round of sends (an advert to every destination) at `now`: the ones that failed, if any.
        /// Returns what to log: nothing while the same destinations go on failing, or when all is well.
        mutating func round(failures: [Failure], at now: UInt64) -> Report? {
            guard !failures.isEmpty else {
                guard let since else { return nil }
                let report = Report.recovered(failedSends: failedSends, milliseconds: now > since ? now - since : 0)
                self = SendFailures()
                return report
            }
            if since == nil { since = now }
            failedSends += failures.count
            let new = failures.filter { failing[$0.destination] == nil }
            for failure in new { failing[failure.destination] = now }
            return new.isEmpty ? nil : .started(new)
        }
    }

    /// When to try again to open a socket that closed, and what to log about it.
    struct ReopenBackoff: Equatable, Sendable {
        /// The first wait, and the longest (milliseconds).
        static let firstDelay: UInt64 = 1_000
        static let longestDelay: UInt64 = 30_000

        enum State: Equatable, Sendable {
            case open
            /// Closed since `since`; `attempts` reopenings failed; the next is due at `nextTry`.
            case closed(since: UInt64, attempts: Int, nextTry: UInt64)
        }

        private(set) var state = State.open

        /// The wait after `attempts` failed reopenings: 1 s doubling, at most 30 s.
        static func delay(afterAttempts attempts: Int) -> UInt64 {
            guard attempts < 16 else { return longestDelay }
            return min(firstDelay << UInt64(attempts), longestDelay)
        }

        /// The socket closed at `now`. Returns when to try reopening it, or nil when it was known closed already (a
        /// second report of one closing: no second warning, no second timer). The caller warns when it is not nil.
        mutating func closed(at now: UInt64) -> UInt64? {
            guard state == .open else { return nil }
            let next = now + Self.delay(afterAttempts: 0)
            state = .closed(since: now, attempts: 0, nextTry: next)
            return next
        }

        /// A reopening failed at `now`: returns when to try next (logged by nobody: the warning was said).
        mutating func reopenFailed(at now: UInt64) -> UInt64? {
            guard case .closed(let since, let attempts, _) = state else { return nil }
            let next = now + Self.delay(afterAttempts: attempts + 1)
            state = .closed(since: since, attempts: attempts + 1, nextTry: next)
            return next
        }

        /// The socket is open again at `now`: returns how long it was closed (for the one line saying it is back),
        /// or nil when it was not closed.
        mutating func reopened(at now: UInt64) -> UInt64? {
            guard case .closed(let since, _, _) = state else { return nil }
            state = .open
            return now > since ? now - since : 0
        }
    }
}
