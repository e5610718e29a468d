import BatonClient
import NIOCore

/// The agent's app socket inside the process, as an ``AppTransport`` (issue 26 item 3): it listens at its path in
/// ``MemoryAppSockets``, where ``AgentClient/connect(path:bundleIdentifier:timeout:group:)`` finds it, and each
/// client is this process: its credentials are this process's pid, uid and gid, so the agent's check that an app speaks
/// only for its own bundle runs as on the socket.
struct MemoryAppTransport: AppTransport {
    let sockets: MemoryAppSockets

    init(sockets: MemoryAppSockets = .process) {
        self.sockets = sockets
    }

    func listen(path: String, handler: IPCHandler, loop: EventLoop) async throws -> AppListener {
        let admission = IPCServer.Admission(handler: handler)
        let listening = sockets.listen(path: path, loop: loop) { conduit in
            guard admission.enter() else { return conduit.close() }
            // No hello deadline: it bounds how long a stranger may hold one of the socket's waiting slots (ISSUE 10
            // item 6), and a client in memory is this process itself. On a loaded machine the process's loops can
            // stall for seconds (CI's parallel suite did), and the deadline then refused this process's own apps.
            conduit.peerCredentials().whenSuccess { credentials in
                admission.admit(conduit, credentials: credentials, pinned: nil, cookie: nil, helloDeadline: nil)
            }
        }
        guard listening else {
            throw BatonAgentError(.alreadyInitialized, "another agent is already running at \(path) (in this process)")
        }
        return AppListener(path: path) { [sockets] in sockets.close(path: path) }
    }
}
