import NIOConcurrencyHelpers
import NIOCore

/// A clock that moves only when told (issue 26 item 3): its ``clock`` is an ``AgentClock`` whose wall time and uptime
/// stand still until ``advance(by:)-(UInt64)``, and whose timers (the broker's deadlines, a link's timeout and
/// keepalive, the services' sleeps) run when an advance passes them. Tests run the agent's parts on it with no real
/// wait: a deadline a minute away is a call, not a minute.
///
/// An advance runs each timer it passes on the timer's event loop, earliest first (in the order scheduled when due
/// together), one at a time, each awaited, with the readings at its due time; a timer a body schedules within the
/// advance runs in it too. What a timer wakes (a task waiting on a ``Doorbell``) goes on after the body returns, and
/// the advance does not wait for it: a loop that computes its next sleep while time moves on sleeps that much longer
/// (a sleep is scheduled relative to now). So a test advances to a wake-up, waits for the part to sleep again
/// (``untilTimers(_:)``, ``untilScheduled(_:)``, ``untilTimer(dueBy:)``), and only then advances further; or the part
/// sleeps until an instant (``AgentClock/schedule(atUptime:on:_:)``: the services' doorbells, issue 26 item 2), which,
/// once passed, wakes it at once, and one advance may pass many of its wake-ups.
package final class VirtualClock: Sendable {
    private struct Timer {
        var due: UInt64
        var loop: EventLoop
        var body: @Sendable () -> Void
    }

    private struct State {
        /// Uptime, nanoseconds.
        var uptime: UInt64
        /// Wall time, milliseconds since 1970.
        var wall: UInt64
        /// Nanoseconds of wall time not yet a whole millisecond (the wall clock keeps pace with uptime).
        var wallRemainder: UInt64 = 0
        /// Timers scheduled so far (the last one's number).
        var next: UInt64 = 0
        var timers: [UInt64: Timer] = [:]
        /// Advances running now: a timer due already waits for theirs to run it, in order; with none, it runs at once.
        var advancing = 0
        /// Those waiting for what they wait for to hold (``until(_:)``).
        var watchers: [(holds: @Sendable (State) -> Bool, waiter: CheckedContinuation<Void, Never>)] = []

        mutating func move(to uptime: UInt64) {
            let passed = wallRemainder + (uptime - self.uptime)
            wall += passed / 1_000_000
            wallRemainder = passed % 1_000_000
            self.uptime = uptime
        }
    }

    private let state: NIOLockedValueBox<State>

    /// A clock reading `uptime` milliseconds of uptime and `wall` milliseconds since 1970 (2027-01-15 by default).
    package init(uptime: UInt64 = 1_000, wall: UInt64 = 1_800_000_000_000) {
        state = NIOLockedValueBox(State(uptime: uptime * 1_000_000, wall: wall))
    }

    /// The agent's clock on this time: pass it wherever an ``AgentClock`` is taken.
    package var clock: AgentClock {
        AgentClock(
            wall: { self.state.withLockedValue(\.wall) },
            uptimeNanoseconds: { self.state.withLockedValue(\.uptime) },
            scheduler: { nanoseconds, loop, body in self.schedule(after: nanoseconds, on: loop, body) },
            deadlineScheduler: { uptime, loop, body in self.schedule(at: uptime, on: loop, body) }
        )
    }

    /// Milliseconds of uptime now.
    package var uptime: UInt64 { state.withLockedValue(\.uptime) / 1_000_000 }

    /// Milliseconds since 1970 now.
    package var wall: UInt64 { state.withLockedValue(\.wall) }

    /// Timers scheduled and not yet run or cancelled.
    package var pending: Int { state.withLockedValue(\.timers.count) }

    /// Moves time on by `milliseconds` (``advance(by:)-(Duration)``).
    package func advance(by milliseconds: UInt64) async throws {
        try await advance(to: state.withLockedValue(\.uptime) + milliseconds * 1_000_000)
    }

    /// Moves time on by `duration`, running each timer it passes.
    /// - Throws: when a timer's event loop has shut down (its body could not run).
    package func advance(by duration: Duration) async throws {
        try await advance(to: state.withLockedValue(\.uptime) + AgentClock.nanoseconds(duration))
    }

    /// The wall clock is set (by hand, by NTP): wall time reads `milliseconds` since 1970 from now on, and uptime and
    /// the timers stay where they were (a deadline is in uptime: AgentClock).
    package func setWall(_ milliseconds: UInt64) {
        state.withLockedValue { state in
            state.wall = milliseconds
            state.wallRemainder = 0
        }
    }

    /// Timers scheduled so far, run, cancelled or pending.
    package var scheduled: Int { Int(state.withLockedValue(\.next)) }

    /// Returns once at least `count` timers are pending: the parts under test have gone to sleep (a service's loop
    /// waits on its doorbell with a timer armed). Not cancellable, as ``untilScheduled(_:)``.
    package func untilTimers(_ count: Int = 1) async {
        await until { $0.timers.count >= count }
    }

    /// Returns once `total` timers have been scheduled since the clock was made (``scheduled``): a part rung awake
    /// has gone back to sleep. Not cancellable: a test waits for what it knows will come.
    package func untilScheduled(_ total: Int) async {
        await until { $0.next >= UInt64(clamping: total) }
    }

    /// Returns once a timer is pending that is due at or before `milliseconds` of uptime: the part under test has
    /// gone to sleep until then (a loop with other timers of its own armed meanwhile is told apart). Not cancellable.
    package func untilTimer(dueBy milliseconds: UInt64) async {
        let due = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        await until { state in state.timers.values.contains { $0.due <= (due.overflow ? .max : due.partialValue) } }
    }

    private func until(_ holds: @escaping @Sendable (State) -> Bool) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { state -> Bool in
                guard !holds(state) else { return true }
                state.watchers.append((holds, waiter))
                return false
            }
            if now { waiter.resume() }
        }
    }

    private func advance(to end: UInt64) async throws {
        state.withLockedValue { $0.advancing += 1 }
        do {
            while let due = state.withLockedValue({ state in Self.takeDue(&state, by: end) }) {
                try await due.loop.submit(due.body).get()
            }
        } catch {
            state.withLockedValue { $0.advancing -= 1 }
            throw error
        }
    }

    /// The earliest timer due by `end`, taken, with time moved to it; or nil with time moved to `end` and this
    /// advance over (in the same hold of the lock: a timer scheduled after it, due already, runs at once).
    private static func takeDue(_ state: inout State, by end: UInt64) -> Timer? {
        guard let (id, timer) = state.timers.filter({ $0.value.due <= end }).min(by: { ($0.value.due, $0.key) < ($1.value.due, $1.key) }) else {
            if end > state.uptime { state.move(to: end) }
            state.advancing -= 1
            return nil
        }
        state.timers[id] = nil
        if timer.due > state.uptime { state.move(to: timer.due) }
        return timer
    }

    private func schedule(after nanoseconds: UInt64, on loop: EventLoop, _ body: @escaping @Sendable () -> Void) -> AgentClock.Timer {
        schedule(on: loop, body) { state in
            let (due, overflow) = state.uptime.addingReportingOverflow(nanoseconds)
            return overflow ? .max : due
        }
    }

    /// A timer due when uptime reads `uptime` nanoseconds: one already due runs at once when no advance runs (an
    /// advance running runs it next, in order).
    private func schedule(at uptime: UInt64, on loop: EventLoop, _ body: @escaping @Sendable () -> Void) -> AgentClock.Timer {
        // Cancelling stops it even once handed to its loop to run at once.
        let cancelled = NIOLockedValueBox(false)
        let timer = schedule(on: loop, runsIfDue: true, { if !cancelled.withLockedValue({ $0 }) { body() } }) { _ in uptime }
        return AgentClock.Timer {
            cancelled.withLockedValue { $0 = true }
            timer.cancel()
        }
    }

    /// Schedules `body` at the uptime `due` reads from the state; one due already (only an instant can be) with no
    /// advance running runs on its loop at once when `runsIfDue`, else waits for the next advance.
    private func schedule(
        on loop: EventLoop,
        runsIfDue: Bool = false,
        _ body: @escaping @Sendable () -> Void,
        due: (State) -> UInt64
    ) -> AgentClock.Timer {
        let (id, runsNow, ready) = state.withLockedValue { state -> (UInt64, Bool, [CheckedContinuation<Void, Never>]) in
            state.next += 1
            let due = due(state)
            let runsNow = runsIfDue && due <= state.uptime && state.advancing == 0
            if !runsNow { state.timers[state.next] = Timer(due: due, loop: loop, body: body) }
            let reading = state
            let ready = state.watchers.filter { $0.holds(reading) }.map(\.waiter)
            state.watchers.removeAll { $0.holds(reading) }
            return (state.next, runsNow, ready)
        }
        for waiter in ready { waiter.resume() }
        if runsNow { loop.execute(body) }
        return AgentClock.Timer { self.state.withLockedValue { _ = $0.timers.removeValue(forKey: id) } }
    }
}
