#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonClient
import BatonCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The agents' ``PeerTransport``: TCP with mutual TLS 1.3 (``TLSPipeline``), each peer checked against a policy in
/// the handshake, and a ``ChannelConduit`` for each connection once it is verified. It counts connections (both
/// directions, before and after their handshake) for the session service's burst sweep, and bounds the handshakes
/// in progress at once.
///
/// Sendable, checked: everything mutable is under a lock (`gauge`, and `hooks`: `refused`, set once before it
/// listens or dials).
final class NIOPeerTransport: PeerTransport {
    /// The peers accepted by ``listen(host:port:arrived:)``.
    let policy: PeerPolicy
    let clientTLS: TLSPipeline
    let serverTLS: TLSPipeline
    let group: EventLoopGroup
    var refused: (@Sendable (SessionRefusal) -> Void)? {
        get { hooks.withLockedValue { $0 } }
        set { hooks.withLockedValue { $0 = newValue } }
    }
    private let hooks = NIOLockedValueBox<(@Sendable (SessionRefusal) -> Void)?>(nil)
    /// Given each connection that opened with a direct stream's ``StreamPreamble`` rather than TLS (issue 30), on
    /// its event loop, with reading stopped; nil closes them. Set once, before listening.
    var directConnections: (@Sendable (StreamPreamble, Channel) -> Void)? {
        get { directHook.withLockedValue { $0 } }
        set { directHook.withLockedValue { $0 = newValue } }
    }
    private let directHook = NIOLockedValueBox<(@Sendable (StreamPreamble, Channel) -> Void)?>(nil)
    /// TCP connections accepted here that have not finished their TLS handshake, at once. Past this, new ones are
    /// closed at once: a stranger's connections cost at most this many handshakes' memory (ISSUE 10 item 7).
    static let pendingHandshakes = 128
    /// Connections open now (both directions, before and after their handshake), and the most since the last
    /// ``takePeak()``: how the agent knows a burst of connections has ended and memory can be given back.
    let gauge = NIOLockedValueBox((open: 0, peak: 0, handshaking: 0))
    /// Called when ``PeerLinks/burst`` connections have closed since the most open at once (it rings the session
    /// service's sweep).
    let burstEnding: @Sendable () -> Void

    init(
        identity: DeviceIdentity,
        policy: PeerPolicy,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        burstEnding: @escaping @Sendable () -> Void = {}
    ) throws {
        self.policy = policy
        self.group = group
        self.burstEnding = burstEnding
        clientTLS = try TLSPipeline(identity: identity, role: .client)
        serverTLS = try TLSPipeline(identity: identity, role: .server)
    }

    /// Connect, handshake and verification all happen on the connection's event loop, one after the other, with no
    /// task or other thread between them (issue 11: a cold continuation).
    func dial(host: String, port: Int, policy: PeerPolicy) -> EventLoopFuture<PeerArrival> {
        let name = Agent.joinHostPort(host, port)
        let handler = MessageHandler()
        let connection = NIOLockedValueBox<TLSPipeline.Connection?>(nil)
        return ClientBootstrap(group: group)
            .channelOption(.writeBufferWaterMark, value: Backpressure.waterMark)
            .channelOption(.recvAllocator, value: Backpressure.reads)
            .connectTimeout(AccountTransport.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [clientTLS] channel in
                channel.eventLoop.makeCompletedFuture {
                    let configured = try clientTLS.configure(channel, policy: policy)
                    connection.withLockedValue { $0 = configured }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: host, port: port)
            .flatMapErrorThrowing { error in throw BatonAgentError(.peerUnreachable, "cannot reach \(name): \(error)") }
            .flatMap { [self] channel in
                count(channel)
                guard let configured = connection.withLockedValue({ $0 }) else {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeFailedFuture(BatonAgentError(.protocolViolation, "no TLS handshake to wait for with \(name)"))
                }
                return configured.handshake.flatMapErrorThrowing { [refused] error in
                    channel.close(promise: nil)
                    // Only a certificate judged and refused is this side's refusal; a peer that refused us, or went,
                    // is the dialling code's to report.
                    if let der = configured.refused.withLockedValue({ $0 }) {
                        refused?(SessionRefusal(address: name, device: DeviceID(certificateDER: der), dialled: true, error: error))
                    }
                    guard let error = error as? BatonAgentError else { throw error }
                    throw BatonAgentError(error.code, "\(name): \(error.message)")
                }.flatMapThrowing {
                    try Self.arrival(channel, handler: handler, presented: configured.presented, name: name)
                }
            }
    }

    /// The verified connection as a conduit, on the channel's event loop (its message handler is attached to the
    /// link there).
    static func arrival(_ channel: Channel, handler: MessageHandler, presented: NIOLockedValueBox<Data?>, name: String) throws -> PeerArrival {
        channel.eventLoop.preconditionInEventLoop()
        guard let certificate = presented.withLockedValue({ $0 }) else {
            channel.close(promise: nil)
            throw BatonAgentError(.peerRefused, "\(name) presented no verified certificate")
        }
        return PeerArrival(conduit: ChannelConduit(channel, handler: handler), peer: DeviceID(certificateDER: certificate), name: name)
    }

    /// Counts `channel` among the open connections until it closes.
    func count(_ channel: Channel) {
        gauge.withLockedValue { gauge in
            gauge.open += 1
            gauge.peak = max(gauge.peak, gauge.open)
        }
        channel.closeFuture.whenComplete { [gauge, burstEnding] _ in
            let crossed = gauge.withLockedValue { gauge -> Bool in
                gauge.open -= 1
                return gauge.peak - gauge.open == PeerLinks.burst
            }
            // Every `burst` connections gone since the peak: the sweeper gives their memory back now, not at its
            // next deadline (issue 10 item 7, kept event-driven by issue 11).
            if crossed { burstEnding() }
        }
    }

    var peak: Int { gauge.withLockedValue(\.peak) }

    func takePeak() -> (peak: Int, open: Int) {
        gauge.withLockedValue { gauge in
            defer { gauge.peak = gauge.open }
            return (gauge.peak, gauge.open)
        }
    }

    func listen(host: String, port: Int, arrived: @escaping @Sendable (PeerArrival) -> Void) async throws -> PeerListener {
        let channel = try await listenChannel(host: host, port: port, arrived: arrived)
        return PeerListener(port: channel.localAddress?.port ?? port) { try? await channel.close() }
    }

    /// ``listen(host:port:arrived:)``, giving the listening channel (what the agent's session service holds).
    /// ``HandshakeWaiter`` disconnects a peer whose TLS handshake takes longer than its deadline.
    func listenChannel(host: String, port: Int, arrived: @escaping @Sendable (PeerArrival) -> Void) async throws -> Channel {
        do {
            return try await ServerBootstrap(group: group)
                .childChannelOption(.writeBufferWaterMark, value: Backpressure.waterMark)
                .childChannelOption(.recvAllocator, value: Backpressure.reads)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { [serverTLS, policy, gauge, refused] channel in
                    let admitted = gauge.withLockedValue { gauge -> Bool in
                        guard gauge.handshaking < Self.pendingHandshakes else { return false }
                        gauge.handshaking += 1
                        return true
                    }
                    guard admitted else { return channel.close() }
                    self.count(channel)
                    let direct = self.directConnections
                    let sniffer = SessionPortSniffer(
                        startTLS: { channel in
                            try Self.startSession(channel, tls: serverTLS, policy: policy, gauge: gauge, refused: refused, arrived: arrived)
                        },
                        arrived: { preamble, channel in
                            guard let direct else { return channel.close(promise: nil) }
                            direct(preamble, channel)
                        },
                        undecided: { gauge.withLockedValue { $0.handshaking -= 1 } }
                    )
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(sniffer)
                    }.flatMapErrorThrowing { error in
                        gauge.withLockedValue { $0.handshaking -= 1 }
                        channel.close(promise: nil)
                        throw error
                    }
                }
                .bind(host: host, port: port)
                .get()
        } catch {
            throw BatonAgentError.cannotListen(on: Agent.joinHostPort(host, port), error)
        }
    }

    /// The session half of an accepted connection, once its first byte said TLS: the handshake, the verified peer's
    /// arrival, a refused one's report.
    private static func startSession(
        _ channel: Channel,
        tls serverTLS: TLSPipeline,
        policy: PeerPolicy,
        gauge: NIOLockedValueBox<(open: Int, peak: Int, handshaking: Int)>,
        refused: (@Sendable (SessionRefusal) -> Void)?,
        arrived: @escaping @Sendable (PeerArrival) -> Void
    ) throws {
        let connection = try serverTLS.configure(channel, policy: policy)
        let handler = MessageHandler()
        try channel.pipeline.syncOperations.addHandler(handler)
        let name = channel.remoteAddress.map { "\($0)" } ?? "peer"
        // Completes on the channel's loop: the link is adopted there, before anything it carries
        // is read, with no task between (issue 11: a cold continuation's first fetch).
        connection.handshake.whenComplete { result in
            gauge.withLockedValue { $0.handshaking -= 1 }
            if case .failure(let error) = result {
                let device = connection.refused.withLockedValue { $0 }.map { DeviceID(certificateDER: $0) }
                refused?(SessionRefusal(address: name, device: device, dialled: false, error: error))
            }
            guard case .success = result,
                let arrival = try? Self.arrival(channel, handler: handler, presented: connection.presented, name: name)
            else { return }
            arrived(arrival)
        }
    }
}
