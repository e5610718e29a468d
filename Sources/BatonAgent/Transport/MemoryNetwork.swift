import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore

/// A network inside one process (issue 26 item 3, as grpc-swift-2's in-process transport): devices register by a
/// virtual address (`host:port`, the host an IP address) and reach each other's links through ``MemoryConduit``s and
/// each other's adverts as datagrams, with no socket, no TLS and no real time. The hub knows each registrant's device
/// as a TLS handshake would have proven it, and applies both sides' peer policies as the handshake would.
///
/// Sendable, checked: everything mutable is in `state`, under its lock.
public final class MemoryNetwork: Sendable {
    /// A device listening for links.
    struct Listener {
        let device: DeviceID
        let policy: PeerPolicy
        let loop: EventLoop
        let arrived: @Sendable (PeerArrival) -> Void
        let refused: @Sendable (SessionRefusal) -> Void
    }

    struct State {
        var listeners: [String: Listener] = [:]
        /// Advert transports by their address (`host:port`), in the order they registered.
        var adverts: [(address: String, transport: MemoryAdvertTransport)] = []
        /// The next port given to a listener that asked for any (0), or to a dialling side's end.
        var nextPort = 49_152
    }

    let state = NIOLockedValueBox(State())

    /// An empty network: agents join it through ``AgentConfiguration/peerConnections``.
    public init() {}

    /// A device's way onto this network: its links listen and dial from `host`, and are verified as `device`, accepting
    /// the peers `policy` allows. Its conduits run on `loop`.
    func peerTransport(host: String, device: DeviceID, policy: PeerPolicy, loop: EventLoop) -> MemoryPeerTransport {
        MemoryPeerTransport(network: self, host: host, device: device, policy: policy, loop: loop)
    }

    /// A device's adverts on this network, received at `host:port` (its discovery port) on `loop`; with
    /// `multicast`, what it sends reaches every other device registered too.
    /// - Throws: when an advert transport is registered there already.
    func advertTransport(
        host: String,
        port: Int,
        multicast: Bool = true,
        loop: EventLoop,
        receive: @escaping @Sendable (Data, SocketAddress) -> Void
    ) throws -> MemoryAdvertTransport {
        let name = Agent.joinHostPort(host, port)
        let transport = MemoryAdvertTransport(
            network: self,
            address: try SocketAddress(ipAddress: host, port: port),
            multicast: multicast,
            loop: loop,
            receive: receive
        )
        try state.withLockedValue { state in
            guard !state.adverts.contains(where: { $0.address == name }) else {
                throw BatonAgentError.cannotListen(on: name, BatonAgentError(.protocolViolation, "\(name) is taken on this memory network"))
            }
            state.adverts.append((name, transport))
        }
        return transport
    }

    /// Who receives a datagram `sender` sends to `addresses` (and to `everyone` else, for multicast): once each
    /// address, once more for multicast, as a socket would; never the sender itself.
    func advertReceivers(of addresses: [SocketAddress], everyone: Bool, from sender: MemoryAdvertTransport) -> [MemoryAdvertTransport] {
        let registered = state.withLockedValue(\.adverts)
        let names = addresses.map { address in address.hostText.map { Agent.joinHostPort($0, address.port ?? 0) } ?? "\(address)" }
        let unicast = names.compactMap { name in registered.first { $0.address == name }?.transport }
        let multicast = everyone ? registered.map(\.transport) : []
        return (unicast + multicast).filter { $0 !== sender }
    }

    func unregister(_ adverts: MemoryAdvertTransport) {
        state.withLockedValue { $0.adverts.removeAll { $0.transport === adverts } }
    }

    /// A port no one holds on this network.
    func freePort() -> Int {
        state.withLockedValue { state in
            defer { state.nextPort += 1 }
            return state.nextPort
        }
    }

    func register(_ listener: Listener, at address: String) throws {
        try state.withLockedValue { state in
            guard state.listeners[address] == nil else {
                throw BatonAgentError.cannotListen(on: address, BatonAgentError(.protocolViolation, "\(address) is taken on this memory network"))
            }
            state.listeners[address] = listener
        }
    }

    func unregister(_ address: String) {
        state.withLockedValue { $0.listeners[address] = nil }
    }

    /// Connects `dialler` (at `from`, as `device`) to whoever listens at `host:port`, requiring a device `policy`
    /// allows; the listener's own policy must allow the dialler too. The listener's end arrives on its loop before
    /// anything the dialler sends can reach it.
    func connect(
        from dialler: MemoryPeerTransport,
        to host: String,
        port: Int,
        policy: PeerPolicy
    ) -> EventLoopFuture<PeerArrival> {
        let name = Agent.joinHostPort(host, port)
        guard let listener = state.withLockedValue({ $0.listeners[name] }) else {
            return dialler.loop.makeFailedFuture(BatonAgentError(.peerUnreachable, "cannot reach \(name): no one listens there on this memory network"))
        }
        // The dialler judges the listener's certificate, then the listener the dialler's (as in TLS 1.3).
        guard policy.allows(listener.device) else {
            let error = BatonAgentError(.peerRefused, "\(name): its certificate is not one this device accepts")
            dialler.refused?(SessionRefusal(address: name, device: listener.device, dialled: true, error: error))
            return dialler.loop.makeFailedFuture(error)
        }
        let from = Agent.joinHostPort(dialler.host, freePort())
        guard listener.policy.allows(dialler.device) else {
            let error = BatonAgentError(.peerRefused, "\(name) refused this device's certificate")
            listener.loop.execute {
                listener.refused(SessionRefusal(address: from, device: dialler.device, dialled: false, error: error))
            }
            return dialler.loop.makeFailedFuture(error)
        }
        let (mine, theirs) = MemoryConduit.pair(
            (dialler.loop, try? SocketAddress(ipAddress: host, port: port)),
            (listener.loop, try? SocketAddress(ipAddress: dialler.host, port: 0))
        )
        listener.loop.execute {
            listener.arrived(PeerArrival(conduit: theirs, peer: dialler.device, name: from))
        }
        return dialler.loop.makeSucceededFuture(PeerArrival(conduit: mine, peer: listener.device, name: name))
    }
}

/// One device's ``PeerTransport`` on a ``MemoryNetwork``.
final class MemoryPeerTransport: PeerTransport {
    let network: MemoryNetwork
    let host: String
    let device: DeviceID
    /// The peers its listener accepts.
    let policy: PeerPolicy
    let loop: EventLoop
    var refused: (@Sendable (SessionRefusal) -> Void)? {
        get { hooks.withLockedValue { $0 } }
        set { hooks.withLockedValue { $0 = newValue } }
    }
    private let hooks = NIOLockedValueBox<(@Sendable (SessionRefusal) -> Void)?>(nil)

    init(network: MemoryNetwork, host: String, device: DeviceID, policy: PeerPolicy, loop: EventLoop) {
        self.network = network
        self.host = host
        self.device = device
        self.policy = policy
        self.loop = loop
    }

    func dial(host: String, port: Int, policy: PeerPolicy) -> EventLoopFuture<PeerArrival> {
        network.connect(from: self, to: host, port: port, policy: policy)
    }

    func listen(host: String, port: Int, arrived: @escaping @Sendable (PeerArrival) -> Void) async throws -> PeerListener {
        let port = port == 0 ? network.freePort() : port
        let address = Agent.joinHostPort(host, port)
        let listener = MemoryNetwork.Listener(device: device, policy: policy, loop: loop, arrived: arrived) { [weak self] refusal in
            self?.refused?(refusal)
        }
        try network.register(listener, at: address)
        return PeerListener(port: port) { [network] in network.unregister(address) }
    }

    /// Memory connections hold no memory worth giving back after a burst.
    var peak: Int { 0 }

    func takePeak() -> (peak: Int, open: Int) { (0, 0) }
}
