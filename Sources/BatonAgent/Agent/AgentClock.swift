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
/// Deadlines are scheduled through it too (``schedule(after:on:_:)``): the handoff coordinator's broker timers
/// (launch, fetch, save, documents still syncing) run when its uptime has passed them, so a virtual clock fires them
/// by advancing time, with no real wait.
///
/// Tests may pass their own (a virtual clock); the default is the system's.
package struct AgentClock: Sendable {
    /// Milliseconds since 1970.
    package var wall: @Sendable () -> UInt64
    /// Nanoseconds of uptime (monotonic).
    package var uptimeNanoseconds: @Sendable () -> UInt64
    /// Runs a body on a loop once this many milliseconds of uptime have passed (``schedule(after:on:_:)``).
    package var scheduler: Scheduler

    /// What schedules a body on an event loop after some milliseconds of this clock's uptime, and returns what
    /// cancels it.
    package typealias Scheduler = @Sendable (_ milliseconds: UInt64, _ loop: EventLoop, _ body: @escaping @Sendable () -> Void) -> Timer

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
        scheduler: @escaping Scheduler = AgentClock.loopScheduler
    ) {
        self.wall = wall
        self.uptimeNanoseconds = uptimeNanoseconds
        self.scheduler = scheduler
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
        scheduler(milliseconds, loop, body)
    }

    /// The system's way: the loop's own timer (its clock is the system's uptime).
    package static let loopScheduler: Scheduler = { milliseconds, loop, body in
        let scheduled = loop.scheduleTask(in: .milliseconds(Int64(clamping: milliseconds)), body)
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
