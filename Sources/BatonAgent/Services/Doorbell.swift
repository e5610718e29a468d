import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// One task waits, any other rings: how a service's loop sleeps until there is something to do or its next
/// deadline, and no longer polls (issue 11 part 8). A ring while nobody waits is kept for the next wait; several
/// rings before it are one. One waiter at a time.
///
/// A wait's deadline is a timer on a NIO event loop, scheduled through the waiter's ``AgentClock`` (the agent's: a
/// virtual clock fires it by advancing, issue 26 item 3; the system's is the loop's own timer, to the nanosecond),
/// cancelled (and freed) as soon as the wait ends. It was a
/// `Task.sleep` raced against the ring: on Linux a cancelled sleep stays queued in libdispatch, with its task, until
/// its deadline, so every wait a ring ended left about 300 bytes behind for as long as its timeout. The search loop
/// waits up to an hour (its purge) and is rung several times per continuation (an app's save, its connection
/// closing): the originating agent grew by some 2.2 KB per continuation (issue 25 item 0).
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
        /// The number of the current (or last) timed wait: a timer ends only the wait it was armed for.
        var wait: UInt64 = 0
        /// The current timed wait's timer fired before its waiter was stored.
        var expired = false
    }

    private let state = NIOLockedValueBox(State())
    /// Where wait deadlines are timed.
    private let loop: EventLoop

    /// A doorbell whose timed waits are timed on `loop`.
    init(loop: EventLoop = MultiThreadedEventLoopGroup.singleton.next()) {
        self.loop = loop
    }

    /// Whether a task sleeps on it now (its timed wait's timer armed): a test on virtual time knows the loop has gone
    /// to sleep, not only scheduled a wait that a ring it had already got ends at once.
    var isWaiting: Bool {
        state.withLockedValue { $0.waiter != nil }
    }

    /// Wakes the waiter, or the next wait.
    func ring() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns when the bell rings (at once if it rang since the last wait), or when the task is cancelled.
    func wait() async {
        await waitForRing()
    }

    /// Returns when the bell rings (at once if it rang since the last wait), when `timeout` of `clock`'s uptime has
    /// passed (nil: never), or when the task is cancelled. Nothing of the wait is left once it returns: its timer is
    /// cancelled. The clock is the waiting service's, the agent's (``AgentConfiguration/clock``).
    func wait(timeout: Duration?, clock: AgentClock) async {
        await wait(timeout: timeout, from: clock.uptimeNanoseconds(), clock: clock)
    }

    /// As ``wait(timeout:clock:)``, the timeout counted from `start` (nanoseconds of `clock`'s uptime): the reading
    /// the service computed it from. It wakes at that instant, at once if the clock has passed it meanwhile (issue 26
    /// item 2: a virtual clock advanced while the service worked out its sleep, which counted from then on slept long).
    func wait(timeout: Duration?, from start: UInt64, clock: AgentClock) async {
        guard let timeout else { return await waitForRing() }
        let (deadline, overflow) = start.addingReportingOverflow(AgentClock.nanoseconds(timeout))
        let number = state.withLockedValue { state -> UInt64 in
            state.wait &+= 1
            state.expired = false
            return state.wait
        }
        let timer = clock.schedule(atUptime: overflow ? .max : deadline, on: loop) { [self] in expire(number) }
        await waitForRing()
        state.withLockedValue { state in
            // Over: a timer that fires late finds another number, and an expiry it left is not the next wait's.
            state.wait &+= 1
            state.expired = false
        }
        timer.cancel()
    }

    /// The deadline of timed wait `number` passed: it ends, unless it has ended already (a later wait is untouched).
    private func expire(_ number: UInt64) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard state.wait == number else { return nil }
            guard let waiter = state.waiter else {
                // Not stored yet (a timeout of about zero): the wait returns as soon as it is.
                state.expired = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    private func waitForRing() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLockedValue { state -> Bool in
                    precondition(state.waiter == nil, "a doorbell has one waiter at a time")
                    if state.rung {
                        state.rung = false
                        return true
                    }
                    if state.expired {
                        state.expired = false
                        return true
                    }
                    state.waiter = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            // Cancelled before or while waiting: the ring either resumes the waiter or is taken by it at once.
            ring()
        }
    }
}
