/// How apps reach an agent (issue 26 item 3): ``AgentConfiguration/appConnections``.
public enum AppConnections: Sendable, Hashable {
    /// A Unix socket at the agent's socket path, for any process of this user.
    case unixSocket
    /// At the agent's socket path in this process's memory (``MemoryAppTransport``), for apps in this process only:
    /// an embedded agent's apps, with no socket.
    case inMemory

    /// The transport that listens for them, timing the socket's hello deadline on `clock` (the agent's).
    func transport(clock: AgentClock) -> any AppTransport {
        switch self {
        case .unixSocket: UnixAppTransport(clock: clock)
        case .inMemory: MemoryAppTransport()
        }
    }
}
