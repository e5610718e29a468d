import NIOCore

/// The agent's Unix socket as an ``AppTransport``: ``IPCServer/listen(path:handler:group:)``, as agents run it.
struct UnixAppTransport: AppTransport {
    func listen(path: String, handler: IPCHandler, loop: EventLoop) async throws -> AppListener {
        let channel = try await IPCServer.listen(path: path, handler: handler, group: loop)
        return AppListener(path: path) { try? await channel.close() }
    }
}
