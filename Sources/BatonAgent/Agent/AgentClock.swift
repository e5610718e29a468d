import Dispatch
import NIOCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one clock the agent reads (issue 26 item 2), held by ``AgentConfiguration/clock`` and passed to the services
/// that take a time: this is the one place that says which time is which.
/// - **Wall time** (milliseconds since 1970) for what is shown or compared with other devices: the time adverts
///   carry and the nearby table keeps (A-series), a peer's clock (issue 25 item 9), an activity's and an
///   association's dates.
/// - **Uptime** (monotonic, nanoseconds; ``uptime()`` in milliseconds) for deadlines and intervals: the broker's
///   timers (launch, fetch, save, documents still syncing), loops' sleeps, idle links, back-off, timings logged. A
///   wall clock that is set must not move a deadline.
///
/// Deadlines are scheduled through it too (``schedule(after:on:_:)``, ``schedule(in:on:_:)``): the handoff
/// coordinator's broker timers (launch, fetch, save, documents still syncing), a peer link's request timeout and
/// keepalive, and the services' sleeps (``Doorbell/wait(timeout:clock:)``) run when its uptime has passed them, so a
/// virtual clock fires them by advancing time, with no real wait.
///
/// Tests pass a ``VirtualClock``'s, whose time moves only when the test advances it; the default is the system's.
package struct AgentClock: Sendable {
    /// Milliseconds since 1970.
    package var wall: @Sendable () -> UInt64
    /// Nanoseconds of uptime (monotonic).
    package var uptimeNanoseconds: @Sendable () -> UInt64
    /// Runs a body on a loop once this many nanoseconds of uptime have passed (``schedule(after:on:_:)``).
    package var scheduler: Scheduler
    /// Runs a body on a loop once uptime reads this many nanoseconds, at once if it has passed
    /// (``schedule(atUptime:on:_:)``); nil: through ``scheduler``, the time left read from ``uptimeNanoseconds``.
    package var deadlineScheduler: Scheduler?

    /// What schedules a body on an event loop after some nanoseconds of this clock's uptime, and returns what
    /// cancels it.
    package typealias Scheduler = @Sendable (_ nanoseconds: UInt64, _ loop: EventLoop, _ body: @escaping @Sendable () -> Void) -> Timer

    /// A scheduled body: ``cancel()`` stops it unless it has run. Cancelling twice, or after it ran, does nothing.
    package struct Timer: Sendable {
        private let cancelling: @Sendable () -> Void

        package init(cancel: @escaping @Sendable () -> Void) {
            cancelling = cancel
        }

        package func cancel() {
            cancelling()
        }
    }

    package init(
        wall: @escaping @Sendable () -> UInt64,
        uptimeNanoseconds: @escaping @Sendable () -> UInt64,
        scheduler: @escaping Scheduler = AgentClock.loopScheduler,
        deadlineScheduler: Scheduler? = nil
    ) {
        self.wall = wall
        self.uptimeNanoseconds = uptimeNanoseconds
        self.scheduler = scheduler
        self.deadlineScheduler = deadlineScheduler
    }

    /// A clock whose uptime is given in milliseconds (the broker's and discovery's unit).
    package init(
        wall: @escaping @Sendable () -> UInt64,
        uptime: @escaping @Sendable () -> UInt64,
        scheduler: @escaping Scheduler = AgentClock.loopScheduler
    ) {
        self.init(wall: wall, uptimeNanoseconds: { uptime() &* 1_000_000 }, scheduler: scheduler)
    }

    /// Runs `body` on `loop` once `milliseconds` of this clock's uptime have passed; what is returned cancels it.
    package func schedule(after milliseconds: UInt64, on loop: EventLoop, _ body: @escaping @Sendable () -> Void) -> Timer {
        scheduler(milliseconds.multipliedReportingOverflow(by: 1_000_000).overflow ? .max : milliseconds * 1_000_000, loop, body)
    }

    /// Runs `body` on `loop` once `duration` of this clock's uptime has passed (at once for none or less), to the
    /// nanosecond: a service's sleep (``Doorbell/wait(timeout:clock:)``).
    package func schedule(in duration: Duration, on loop: EventLoop, _ body: @escaping @Sendable () -> Void) -> Timer {
        scheduler(Self.nanoseconds(duration), loop, body)
    }

    /// Runs `body` on `loop` once this clock's uptime reads `deadline` nanoseconds, at once when it has passed: an
    /// instant a service computed from one reading wakes it then even if the clock moved on while it computed (a
    /// virtual clock advanced past it meanwhile, issue 26 item 2), where a sleep counted from now would end late.
    package func schedule(atUptime deadline: UInt64, on loop: EventLoop, _ body: @escaping @Sendable () -> Void) -> Timer {
        if let deadlineScheduler { return deadlineScheduler(deadline, loop, body) }
        let now = uptimeNanoseconds()
        return scheduler(deadline > now ? deadline - now : 0, loop, body)
    }

    /// `duration` in whole nanoseconds, none when negative, at most `UInt64.max`.
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (total, carry) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow || carry ? .max : total
    }

    /// The system's way: the loop's own timer (its clock is the system's uptime).
    package static let loopScheduler: Scheduler = { nanoseconds, loop, body in
        let scheduled = loop.scheduleTask(in: .nanoseconds(Int64(clamping: nanoseconds)), body)
        return Timer { scheduled.cancel() }
    }

    /// Milliseconds of uptime: the clock the broker's deadlines and the loops' sleeps are in.
    package func uptime() -> UInt64 {
        uptimeNanoseconds() / 1_000_000
    }

    /// The wall time as a `Date` (for what keeps dates: associations, rosters).
    package func date() -> Date {
        Date(timeIntervalSince1970: Double(wall()) / 1000)
    }

    /// The system's clocks.
    package static let system = AgentClock(
        wall: { UInt64(Date().timeIntervalSince1970 * 1000) },
        uptimeNanoseconds: { DispatchTime.now().uptimeNanoseconds }
    )
}
