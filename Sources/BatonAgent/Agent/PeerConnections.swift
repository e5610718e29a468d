#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// How an agent reaches other devices, its sessions and its adverts alike (issue 26 item 3):
/// ``AgentConfiguration/peerConnections``.
public enum PeerConnections: Sendable {
    /// TLS 1.3 over TCP for sessions, UDP datagrams for adverts: what agents run.
    case network
    /// On `network`, a ``MemoryNetwork`` in this process: sessions and adverts reach the other agents on it with no
    /// socket and no TLS, at virtual `host:port` addresses (a port asked as 0 is one the network hands out).
    case inMemory(MemoryNetwork)

    /// The links of device `identity` over these connections, accepting the peers `policy` allows; `burstEnding` is
    /// rung as ``PeerLinks/init(identity:policy:group:clock:burstEnding:)`` says (TLS only: memory holds nothing to
    /// give back).
    func links(
        identity: DeviceIdentity,
        policy: PeerPolicy,
        host: String,
        loop: EventLoop,
        clock: AgentClock,
        burstEnding: @escaping @Sendable () -> Void
    ) throws -> PeerLinks {
        switch self {
        case .network:
            return try PeerLinks(identity: identity, policy: policy, group: loop, clock: clock, burstEnding: burstEnding)
        case .inMemory(let network):
            let transport = network.peerTransport(host: host, device: identity.id, policy: policy, loop: loop)
            return PeerLinks(identity: identity, policy: policy, transport: transport, clock: clock)
        }
    }

    /// The adverts' transport, received at `host:port` (``AdvertSocket/open(host:port:discoveryPort:group:log:warn:clock:receive:)``
    /// on the network; in memory, multicast reaches every other agent on the network when `discoveryPort` is set).
    func adverts(
        host: String,
        port: Int,
        discoveryPort: Int?,
        loop: EventLoop,
        log: @escaping @Sendable (String) -> Void,
        warn: @escaping @Sendable (String) -> Void,
        clock: AgentClock,
        receive: @escaping @Sendable (Data, SocketAddress) -> Void
    ) async throws -> any AdvertTransport {
        switch self {
        case .network:
            try await AdvertSocket.open(
                host: host,
                port: port,
                discoveryPort: discoveryPort,
                group: loop,
                log: log,
                warn: warn,
                clock: clock,
                receive: receive
            )
        case .inMemory(let network):
            try network.advertTransport(host: host, port: port, multicast: discoveryPort != nil, loop: loop, receive: receive)
        }
    }
}
