import BatonClient
import NIOConcurrencyHelpers
import NIOCore

extension IPCServer {
    /// Lets clients of one listener in, over either conduit (issue 26 item 3): ISSUE 10 item 6, a client that has not
    /// said hello costs at most one small frame, for at most ``Limits/helloDeadline``, and only
    /// ``Limits/unauthenticatedConnections`` may wait at once. The deadline is timed on the agent's clock (issue 26
    /// item 2): a virtual clock drops a silent client by advancing, with no real wait.
    ///
    /// Sendable, checked: the handler and the clock are Sendable and the count is under its lock.
    final class Admission: Sendable {
        let handler: IPCHandler
        /// Where hello deadlines are timed (``AgentConfiguration/clock``).
        let clock: AgentClock
        /// Connections that have not said hello yet.
        let waiting = NIOLockedValueBox(0)

        init(handler: IPCHandler, clock: AgentClock = .system) {
            self.handler = handler
            self.clock = clock
        }

        /// Counts one more client waiting to say hello; false (and it is closed) past the limit.
        func enter() -> Bool {
            waiting.withLockedValue { count -> Bool in
                guard count < Limits.unauthenticatedConnections else { return false }
                count += 1
                return true
            }
        }

        /// A client that entered went before it was admitted.
        func leave() {
            waiting.withLockedValue { $0 -= 1 }
        }

        /// Makes the connection of a client that entered, whose process the kernel (or the memory transport) named,
        /// and lets its frames reach the agent; it must say hello within `helloDeadline` when there is one.
        func admit(
            _ conduit: any AppConduit,
            credentials: PeerCredentials,
            pinned: PinnedProcess?,
            cookie: UInt64?,
            helloDeadline: Duration? = Limits.helloDeadline
        ) {
            let connection = IPCConnection(conduit: conduit, credentials: credentials, handler: handler, pinned: pinned, cookie: cookie)
            let deadline = helloDeadline.map { limit in
                clock.schedule(in: limit, on: conduit.eventLoop) {
                    connection.refuse(.timedOut, "no hello within \(limit.components.seconds) s of connecting")
                }
            }
            connection.settled.withLockedValue {
                $0 = { [waiting] in
                    deadline?.cancel()
                    waiting.withLockedValue { $0 -= 1 }
                }
            }
            conduit.attach(connection)
        }
    }
}
