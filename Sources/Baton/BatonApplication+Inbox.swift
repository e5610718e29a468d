import BatonProtocol
import Synchronization

/// One connection's messages on their way from its event loop to the app library's main actor (issue 26 item 5).
///
/// The connection's loop queues each message and starts one main-actor job when none is on its way; the job takes
/// everything queued, in order. An async stream iterated by a main-actor task did the same with two wake-ups: the
/// task is resumed on the global executor and only then hops to the main actor (28 µs against 6 µs for a job
/// started straight from another thread, on this machine, idle).
///
/// Messages wait until ``open()``: the agent may speak right after its welcome (a launched app's `willContinue` and
/// `deliver`), before the app's `connect` has made the connection its own.
final class AgentInbox: Sendable {
    private struct Queue {
        var messages: [IPCMessage] = []
        /// Whether the connection ended (after the messages queued).
        var ended = false
        /// Whether the app takes messages yet.
        var isOpen = false
        /// Whether a job to take them is on its way.
        var scheduled = false

        /// Whether the caller is to start a job to take the messages: there is something to take and no job will.
        mutating func schedule() -> Bool {
            guard isOpen, !scheduled, ended || !messages.isEmpty else { return false }
            scheduled = true
            return true
        }
    }

    private let queue = Mutex(Queue())

    /// On the connection's loop: queues `message`, or the connection's end when nil. True when the caller is to start a
    /// main-actor job that calls ``take()``.
    func put(_ message: IPCMessage?) -> Bool {
        queue.withLock { queue in
            if let message { queue.messages.append(message) } else { queue.ended = true }
            return queue.schedule()
        }
    }

    /// The app takes messages from now on. True when some wait, and the caller is to start a job that calls ``take()``.
    func open() -> Bool {
        queue.withLock { queue in
            queue.isOpen = true
            return queue.schedule()
        }
    }

    /// Everything queued, oldest first, and whether the connection has ended; the next message starts a job again.
    func take() -> (messages: [IPCMessage], ended: Bool) {
        queue.withLock { queue in
            queue.scheduled = false
            defer { queue.messages.removeAll(keepingCapacity: true) }
            return (queue.messages, queue.ended)
        }
    }
}
