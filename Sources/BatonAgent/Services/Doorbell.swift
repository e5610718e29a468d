import NIOConcurrencyHelpers

/// One task waits, any other rings: how a service's loop sleeps until there is something to do or its next
/// deadline, and no longer polls (issue 11 part 8). A ring while nobody waits is kept for the next wait; several
/// rings before it are one. One waiter at a time.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = NIOLockedValueBox(State())

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

    /// Returns when the bell rings (at once if it rang since the last wait), when `timeout` has passed, or when the
    /// task is cancelled.
    func wait(timeout: Duration? = nil) async {
        guard let timeout else { return await waitForRing() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForRing() }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForRing() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLockedValue { state -> Bool in
                    precondition(state.waiter == nil, "a doorbell has one waiter at a time")
                    guard !state.rung else {
                        state.rung = false
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
