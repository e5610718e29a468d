import NIOCore

/// How apps and command lines reach the agent (issue 26 item 3): it listens at a path and gives each client that
/// connects to the handler as an ``IPCConnection``, with the credentials of the process behind it, admitted as
/// ``IPCServer/Admission`` bounds clients that have not said hello. The Unix socket (``UnixAppTransport``, what agents
/// run), or the process's ``MemoryAppSockets`` (``MemoryAppTransport``: an app in the same process, with no socket).
/// What the agent checks of a client (its user, its executable: ISSUE 10 item 3) is the same over either.
protocol AppTransport: Sendable {
    /// Listens at `path`, each connection's end on `loop` (or on one of its group's loops, for the socket).
    /// - Throws: when another agent listens there already, or the path cannot be listened at.
    func listen(path: String, handler: IPCHandler, loop: EventLoop) async throws -> AppListener
}

/// A transport's listener: the path it holds, and what stops it.
struct AppListener: Sendable {
    let path: String
    let close: @Sendable () async -> Void
}
