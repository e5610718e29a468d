import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The agent's Unix socket as an ``AppTransport``: ``IPCServer/listen(path:handler:group:clock:)``, as agents run it.
struct UnixAppTransport: AppTransport {
    /// Where a client's hello deadline is timed: the agent's clock.
    var clock: AgentClock = .system

    func listen(path: String, handler: IPCHandler, loop: EventLoop) async throws -> AppListener {
        Self.listener(try await IPCServer.listen(path: path, handler: handler, group: loop, clock: clock), path: path)
    }

    /// The listener bound to `channel` at `path`: closing it closes the channel and removes the socket.
    static func listener(_ channel: Channel, path: String) -> AppListener {
        AppListener(path: path) {
            try? await channel.close()
            unlink(path)
        }
    }
}
