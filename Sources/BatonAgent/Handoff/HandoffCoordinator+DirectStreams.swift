import BatonClient
import BatonCore
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Direct continuation streams (issue 30; docs/PROTOCOL.md §8 "Direct streams"): the agents introduce the two apps
/// over their session and step out of the byte path.
///
/// 1. The continuing agent offers it in `stream` with a one-time token and the fingerprint of the certificate it made
///    for its app's end (``StreamCredential``).
/// 2. The originating agent, once its app took the stream (its hello said `direct`), makes its app end's credential,
///    remembers the token, and answers `opened` with that fingerprint.
/// 3. The continuing agent connects to the originating agent's session port and sends the ``StreamPreamble`` naming
///    the token; the originating agent finds the stream by it (``directConnectionArrived(_:on:)``).
/// 4. Each agent passes the connected TCP socket to its app over the app's stream connection (`SCM_RIGHTS`), with
///    the app end's key, certificate and the other end's fingerprint (IPC `direct`). The apps speak mutual TLS 1.3,
///    each accepting only the certificate pinned for it.
///
/// Either side falls back to the relayed path of ``HandoffCoordinator`` where it cannot do its part: an agent or app
/// library from before issue 30, an app whose connection is not a socket (a bus app's pipes, an app in memory), a
/// memory network, or ``AgentConfiguration/streamPath`` `relayed`. The app's stream connection to its agent stays
/// open for the stream's life: it is how the app's stream ends are counted (``StreamLimits/perApp``), and how the
/// pair's (``StreamLimits/perSession``, direct and relayed together).
extension HandoffCoordinator {
    /// The originating side's direct stream, waiting for the continuing agent's connection.
    struct PendingDirect {
        var connection: IPCConnection
        var credential: StreamCredential
        /// The continuing app end's certificate fingerprint.
        var peerFingerprint: Data
        var bundle: String
        var peer: DeviceID
        var timer: AgentClock.Timer
    }

    /// How long the continuing agent has to connect once it was told `opened` (as long as it waits for `opened`).
    static let directConnectMilliseconds = StreamLimits.openMilliseconds

    /// Whether an app connection's stream may take the direct path here: the agent's setting and transport allow it,
    /// the app said it can, and its connection is a socket a descriptor can be passed on.
    func mayGoDirect(_ connection: IPCConnection, appSaid direct: Bool) -> Bool {
        direct && directStreams && connection.conduit is ChannelAppConduit
    }

    /// Streams to or from `peer` on the direct path now (each counted until its app's stream connection closes).
    func directStreamCount(with peer: DeviceID) -> Int {
        withState { $0.directStreamsPerPeer[peer, default: 0] }
    }

    /// Counts a direct stream with `peer` until `connection` closes.
    func countDirect(with peer: DeviceID, until connection: IPCConnection) {
        withState { $0.directStreamsPerPeer[peer, default: 0] += 1 }
        connection.conduit.closeFuture.whenComplete { [self] _ in
            onLoop { [self] in
                withState { state in
                    state.directStreamsPerPeer[peer, default: 1] -= 1
                    if state.directStreamsPerPeer[peer] == 0 { state.directStreamsPerPeer[peer] = nil }
                }
            }
        }
    }

    // MARK: The originating side

    /// The originating app took a stream offered direct (its hello said so): answer `opened` with its end's
    /// fingerprint and wait for the continuing agent's connection. False when it cannot (the relayed path follows).
    func acceptDirect(_ incoming: IncomingStream, offer: DirectStreamOffer, on connection: IPCConnection) -> Bool {
        let token = offer.token
        // A token already waiting (the other device reused one) is not taken over: that stream keeps it, this one is
        // relayed.
        guard withState({ $0.pendingDirect[token] == nil }), let credential = try? StreamCredential() else { return false }
        let timer = clock.schedule(after: Self.directConnectMilliseconds, on: loop) { [self] in
            guard let pending = withState({ $0.pendingDirect.removeValue(forKey: token) }) else { return }
            pending.connection.refuse(
                .stream(.timedOut),
                "\(pending.peer.short) did not connect for the stream within \(Self.directConnectMilliseconds / 1000) s"
            )
        }
        withState { state in
            state.pendingDirect[token] = PendingDirect(
                connection: connection,
                credential: credential,
                peerFingerprint: offer.fingerprint,
                bundle: incoming.bundle,
                peer: incoming.link.peer,
                timer: timer
            )
        }
        connection.conduit.closeFuture.whenComplete { [self] _ in
            onLoop { [self] in
                // The app went before the connection came: nothing waits for it.
                guard let pending = withState({ $0.pendingDirect[token] }), pending.connection === connection else { return }
                withState { $0.pendingDirect[token] = nil }
                pending.timer.cancel()
            }
        }
        countDirect(with: incoming.link.peer, until: connection)
        incoming.reply(.streamOpened(window: UInt64(StreamFlow.defaultWindow), direct: credential.fingerprint))
        return true
    }

    /// A connection on the session port named a direct stream (on the channel's loop, reading stopped): its socket
    /// goes to the originating app waiting for it, or the connection is closed.
    func directConnectionArrived(_ preamble: StreamPreamble, on channel: Channel) {
        let token = Data(preamble.token)
        onLoop { [self] in
            guard let pending = withState({ $0.pendingDirect.removeValue(forKey: token) }) else {
                log("a direct stream connection from \(channel.remoteAddress.map { "\($0)" } ?? "?") named no stream waiting here: closed")
                return channel.close(promise: nil)
            }
            pending.timer.cancel()
            Self.takeSocket(of: channel).whenComplete { [self] result in
                onLoop { [self] in
                    switch result {
                    case .success(let socket):
                        pass(socket, end: pending.credential.end(.client, peer: pending.peerFingerprint), to: pending.connection) { [self] in
                            log("stream from \(pending.peer.short) to \(pending.bundle) opened, direct")
                        }
                    case .failure(let error):
                        pending.connection.refuse(.stream(.peerGone), "the stream's connection could not be taken over: \(error)")
                    }
                }
            }
        }
    }

    // MARK: The continuing side

    /// The stream went direct (`opened` carried the originating end's fingerprint): connect to the originating
    /// agent's session port, name the stream, and pass the socket to the app.
    func connectDirect(
        offer: DirectStreamOffer,
        credential: StreamCredential,
        peerFingerprint: Data,
        delivery: StreamDelivery,
        link: PeerLink,
        bundle: String,
        on connection: IPCConnection
    ) {
        countDirect(with: link.peer, until: connection)
        let host = delivery.host
        let port = delivery.port
        let token = Array(offer.token)
        NIOThreadPool.singleton.runIfActive(eventLoop: loop) { () throws -> Int32 in
            let preamble = try StreamPreamble(token: token)
            let socket = try StreamSocket.connect(host: host, port: port, timeout: .seconds(5))
            do {
                try StreamSocket.configureDirectStream(socket)
                try StreamSocket.write(preamble.bytes, to: socket, deadline: .now() + .seconds(5))
            } catch {
                Glibc.close(socket)
                throw error
            }
            return socket
        }.whenComplete { [self] result in
            switch result {
            case .success(let socket):
                pass(socket, end: credential.end(.server, peer: peerFingerprint), to: connection) { [self] in
                    log("stream to \(link.peer.short) for \(bundle) opened, direct")
                }
            case .failure(let error):
                connection.refuse(.stream(.peerGone), "cannot connect to the originating device for the stream (\(Agent.joinHostPort(host, port))): \(error)")
            }
        }
    }

    // MARK: Passing the socket

    /// The socket of `channel` (a connection accepted on the session port), taken over: a duplicate of its
    /// descriptor, found by the socket's cookie, after which the channel is closed (its own descriptor only; the
    /// socket lives on in the duplicate). On the channel's loop.
    static func takeSocket(of channel: Channel) -> EventLoopFuture<Int32> {
        StreamSocket.cookie(of: channel).flatMapThrowing { cookie -> Int32 in
            guard let socket = StreamSocket.duplicate(cookie: cookie) else {
                throw BatonAgentError(.protocolViolation, "the stream's socket is not among this process's descriptors")
            }
            return socket
        }.flatMap { socket in
            channel.close().map { socket }.flatMapErrorThrowing { _ in socket }
        }.flatMapError { error in
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }.flatMapThrowing { socket in
            do {
                try StreamSocket.configureDirectStream(socket)
            } catch {
                Glibc.close(socket)
                throw error
            }
            return socket
        }
    }

    /// Sends the app its end of a direct stream on its stream connection: the `direct` message with `socket`
    /// attached. The agent's copy of the socket is closed after, sent or not; the app's stream connection stays open
    /// (the stream's ends are counted by it) until the app closes it.
    func pass(_ socket: Int32, end: DirectStreamEnd, to connection: IPCConnection, sent: @escaping @Sendable () -> Void) {
        guard let channel = (connection.conduit as? ChannelAppConduit)?.channel, connection.conduit.isActive else {
            Glibc.close(socket)
            return connection.refuse(.stream(.appGone), "the app's stream connection closed before its socket could be passed")
        }
        let frame: [UInt8]
        do {
            let body = try BinaryPropertyListEncoder.encode(IPCMessage.directStream(end).propertyList)
            frame = withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init) + Array(body)
        } catch {
            Glibc.close(socket)
            return connection.refuse(.protocolViolation, "the stream's credentials could not be encoded: \(error)")
        }
        // On the connection's loop, where nothing else is written to it: the agent has sent nothing on a stream
        // connection before this, so the raw send cannot overtake a write of NIO's.
        StreamSocket.cookie(of: channel).whenComplete { [self] result in
            defer { Glibc.close(socket) }
            do {
                guard let unix = StreamSocket.duplicate(cookie: try result.get()) else {
                    throw BatonAgentError(.protocolViolation, "the app's stream connection is not among this process's descriptors")
                }
                defer { Glibc.close(unix) }
                try StreamSocket.send(frame, passing: socket, on: unix)
                sent()
            } catch {
                log("could not pass a direct stream's socket to its app: \(error)")
                connection.refuse(.stream(.appGone), "the stream's socket could not be passed: \(error)")
            }
        }
    }
}
