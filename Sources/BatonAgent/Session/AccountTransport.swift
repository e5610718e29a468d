import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A conversation with one peer: whole messages (property lists) in and out, and who the peer is.
///
/// The account flows (pairing, joining, syncing) are written against this, so they run the same over TLS and over
/// an in-memory pipe in tests. Used by one task at a time.
public protocol MessageChannel: AnyObject {
    /// Sends one message.
    func send(_ message: PropertyList) async throws
    /// The next message; throws `timedOut` after `timeout` seconds, `peerUnreachable` when the peer closed.
    func receive(timeout: Double) async throws -> PropertyList
    /// The certificate (DER) the peer presented, as verified during the handshake.
    var peerCertificate: Data? { get }
    /// The peer's IP address, when the channel has one.
    var peerHost: String? { get }
    /// Ends the conversation.
    func close() async
}

/// Which peer certificates a session accepts, decided during the TLS handshake.
public enum PeerPolicy: Sendable {
    /// Any certificate: pairing, where the person compares codes, and invites, where the secret decides.
    case anyDevice
    /// Only this device: a joiner pinning the inviter named in the token.
    case only(DeviceID)
    /// Active members of the roster as it is at handshake time.
    case members(@Sendable () -> Set<DeviceID>)

    /// The active members of `store`'s roster as it is at each handshake, so a removal takes effect at once (read
    /// again only when the file has changed: ``ActiveMembers``).
    public static func activeMembers(of store: AccountStore) -> PeerPolicy {
        let members = ActiveMembers(store: store)
        return .members { members.current() }
    }

    func allows(_ id: DeviceID) -> Bool {
        switch self {
        case .anyDevice: true
        case .only(let pinned): id == pinned
        case .members(let current): current().contains(id)
        }
    }
}

/// TLS 1.3 sessions between devices, both sides presenting their device certificate.
public enum AccountTransport {
    /// How long a TLS connection may take to establish.
    public static let connectTimeout = TimeAmount.seconds(5)

    /// Opens a session to `host:port`, accepting the server only if `policy` allows its certificate, runs `body`
    /// with it, and closes it whatever happens.
    /// - Throws: `peerUnreachable` when nothing answers, `peerRefused` when the handshake fails, or `body`'s error.
    public static func withSession<Result: Sendable>(
        host: String,
        port: Int,
        identity: DeviceIdentity,
        policy: PeerPolicy,
        _ body: (SessionConnection) async throws -> Result
    ) async throws -> Result {
        let name = Agent.joinHostPort(host, port)
        let tls = try TLSPipeline(identity: identity, role: .client)
        let channel: NIOAsyncChannel<InboundFrame, OutboundFrame>
        let connection: TLSPipeline.Connection
        do {
            (channel, connection) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(connectTimeout)
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let connection = try tls.configure(channel, policy: policy)
                        return (try NIOAsyncChannel<InboundFrame, OutboundFrame>(wrappingChannelSynchronously: channel), connection)
                    }
                }
        } catch {
            throw BatonAgentError(.peerUnreachable, "cannot reach \(name): \(error)")
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await TLSPipeline.waitForHandshake(connection.handshake, peer: name)
            return try await body(
                SessionConnection(inbound: inbound, outbound: outbound, channel: channel.channel, presented: connection.presented, peerName: name)
            )
        }
    }

    /// A listening socket that hands out one ``SessionConnection`` per accepted peer.
    public final class Listener: Sendable {
        let server: NIOAsyncChannel<NIOAsyncChannel<InboundFrame, OutboundFrame>, Never>
        let presented: NIOLockedValueBox<[ObjectIdentifier: NIOLockedValueBox<Data?>]>
        let handshakes: NIOLockedValueBox<[ObjectIdentifier: EventLoopFuture<Void>]>

        /// The port actually bound (useful when asked for port 0).
        public let port: Int

        init(
            server: NIOAsyncChannel<NIOAsyncChannel<InboundFrame, OutboundFrame>, Never>,
            presented: NIOLockedValueBox<[ObjectIdentifier: NIOLockedValueBox<Data?>]>,
            handshakes: NIOLockedValueBox<[ObjectIdentifier: EventLoopFuture<Void>]>
        ) {
            self.server = server
            self.presented = presented
            self.handshakes = handshakes
            self.port = server.channel.localAddress?.port ?? 0
        }

        func session(
            _ connection: NIOAsyncChannel<InboundFrame, OutboundFrame>,
            _ body: (SessionConnection) async throws -> Bool
        ) async -> Bool {
            let box = presented.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(connection.channel)) } ?? NIOLockedValueBox(nil)
            let handshake = handshakes.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(connection.channel)) }
            let name = connection.channel.remoteAddress.map { "\($0)" } ?? "peer"
            return (try? await connection.executeThenClose { inbound, outbound in
                try await TLSPipeline.waitForHandshake(handshake, peer: name)
                return try await body(SessionConnection(inbound: inbound, outbound: outbound, channel: connection.channel, presented: box, peerName: name))
            }) ?? false
        }

        /// Serves peers concurrently until the listener is closed.
        public func serve(_ handle: @escaping @Sendable (SessionConnection) async -> Void) async throws {
            try await server.executeThenClose { inbound in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in inbound {
                        group.addTask {
                            _ = await self.session(connection) { session in
                                await handle(session)
                                return true
                            }
                        }
                    }
                }
            }
        }

        /// Serves peers one at a time until `handle` returns true (done) or `timeout` seconds pass; then closes.
        /// - Throws: `timedOut` when no peer completed in time.
        public func serveUntilDone(timeout: Double, _ handle: (SessionConnection) async throws -> Bool) async throws {
            let deadline = server.channel.eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1000))) { [server] in
                server.channel.close(promise: nil)
            }
            defer { deadline.cancel() }
            let done = try await server.executeThenClose { inbound in
                for try await connection in inbound where await session(connection, handle) {
                    return true
                }
                return false
            }
            guard done else { throw BatonAgentError(.timedOut, "no device completed within \(Int(timeout)) s") }
        }

        /// Stops listening.
        public func close() async {
            try? await server.channel.close()
        }
    }

    /// Listens on `host:port` (port 0 picks a free one), accepting peers whose certificate `policy` allows.
    public static func listen(host: String, port: Int, identity: DeviceIdentity, policy: PeerPolicy) async throws -> Listener {
        let tls = try TLSPipeline(identity: identity, role: .server)
        let presented = NIOLockedValueBox<[ObjectIdentifier: NIOLockedValueBox<Data?>]>([:])
        let handshakes = NIOLockedValueBox<[ObjectIdentifier: EventLoopFuture<Void>]>([:])
        do {
            let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let connection = try tls.configure(channel, policy: policy)
                        presented.withLockedValue { $0[ObjectIdentifier(channel)] = connection.presented }
                        handshakes.withLockedValue { $0[ObjectIdentifier(channel)] = connection.handshake }
                        return try NIOAsyncChannel<InboundFrame, OutboundFrame>(wrappingChannelSynchronously: channel)
                    }
                }
            return Listener(server: server, presented: presented, handshakes: handshakes)
        } catch {
            throw BatonAgentError.cannotListen(on: Agent.joinHostPort(host, port), error)
        }
    }
}

/// One TLS session with a peer, valid inside the body it was handed to.
public final class SessionConnection: MessageChannel {
    var iterator: NIOAsyncChannelInboundStream<InboundFrame>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<OutboundFrame>
    let channel: Channel
    let presented: NIOLockedValueBox<Data?>
    /// Whether the peer has sent anything yet.
    var receivedAny = false
    /// Where the peer is, for messages.
    public let peerName: String

    init(
        inbound: NIOAsyncChannelInboundStream<InboundFrame>,
        outbound: NIOAsyncChannelOutboundWriter<OutboundFrame>,
        channel: Channel,
        presented: NIOLockedValueBox<Data?>,
        peerName: String
    ) {
        self.iterator = inbound.makeAsyncIterator()
        self.outbound = outbound
        self.channel = channel
        self.presented = presented
        self.peerName = peerName
    }

    public var peerCertificate: Data? { presented.withLockedValue { $0 } }

    public var peerHost: String? { channel.remoteAddress?.hostText }

    public func send(_ message: PropertyList) async throws {
        let bytes = try BinaryPropertyListEncoder.encode(message)
        do {
            try await outbound.write(.message(ByteBuffer(bytes: bytes)))
        } catch {
            // In TLS 1.3 a server judges the client's certificate after the client's handshake has finished, so a
            // refusal surfaces as a failed write or a reset, often before its alert can be read. A session that ends
            // before the peer has said anything is therefore reported as a refusal.
            guard receivedAny else {
                throw BatonAgentError(.peerRefused, "\(peerName) ended the session before answering: it does not accept this device (or it stopped)")
            }
            throw BatonAgentError(.peerUnreachable, "\(peerName) closed the session: \(error)")
        }
    }

    public func receive(timeout: Double) async throws -> PropertyList {
        let timedOut = NIOLockedValueBox(false)
        let deadline = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1000))) { [channel] in
            timedOut.withLockedValue { $0 = true }
            channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        let frame: InboundFrame?
        do {
            frame = try await iterator.next()
        } catch let error as BatonAgentError {
            throw error
        } catch let error as NIOSSLError {
            throw BatonAgentError(.peerRefused, "TLS with \(peerName) failed: \(error) (is this device a member of the peer's account?)")
        } catch {
            throw BatonAgentError(.peerRefused, "the session with \(peerName) failed: \(error)")
        }
        guard let frame else {
            if receivedAny, !timedOut.withLockedValue({ $0 }) {
                throw BatonAgentError(.peerUnreachable, "\(peerName) closed the session")
            }
            if timedOut.withLockedValue({ $0 }) {
                throw BatonAgentError(.timedOut, "\(peerName) sent nothing for \(Int(timeout)) s")
            }
            throw BatonAgentError(.peerRefused, "\(peerName) closed the session (it does not accept this device, or it declined)")
        }
        receivedAny = true
        guard case .message(let body) = frame else {
            // The account flows carry no continuation streams.
            throw BatonAgentError(.protocolViolation, "\(peerName) sent stream data on an account session")
        }
        do {
            return try BinaryPropertyListDecoder.decode(Data(body.readableBytesView), limits: PropertyListLimits(maximumDepth: 16))
        } catch {
            throw BatonAgentError(.protocolViolation, "\(peerName) sent a malformed message: \(error)")
        }
    }

    public func close() async {
        outbound.finish()
        try? await channel.close()
    }
}
