import BatonClient
import BatonCore
import BatonProtocol
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

#if canImport(Glibc)
import Glibc
#endif

/// Direct streams, the app's side (issue 30; docs/PROTOCOL.md §8 "Direct streams"): the hello offers the direct
/// path; the agent answers `direct` with the stream's TCP socket attached (`SCM_RIGHTS`), or `welcome` when the
/// stream is relayed after all, or `refused`. On the direct path the app speaks TLS 1.3 with the other app, with the
/// key and certificate its agent made for this stream and accepting only the certificate pinned for the other end,
/// and then the same frames as on a relayed stream's connection: data, `eof`.
extension StreamEnd {
    /// The agent's answer to a hello offering the direct path, as read off the socket.
    enum Answer {
        case direct(DirectStreamEnd, socket: Int32)
        case relayed
    }

    /// Whether this app offers the direct path: unless `BATON_STREAMS=relayed` is set (to compare the two, or to
    /// keep streams inside the agents' sessions).
    static var offersDirect: Bool {
        ProcessInfo.processInfo.environment["BATON_STREAMS"] != StreamPath.relayed.rawValue
    }

    /// How long the TLS handshake between the two apps may take.
    static let directHandshakeTimeout = TimeAmount.seconds(10)
    /// The largest answer to a stream's hello (a `direct` message is under 1 KiB).
    static let maximumAnswerLength = 64 << 10

    /// Says the hello on a raw connection to the agent at `path`, reads the answer with any descriptor passed with
    /// it, and goes on direct or relayed as it says.
    static func openOfferingDirect(path: String, hello: IPCMessage, timeout: TimeAmount) async throws(ContinuationError) -> StreamEnd {
        do {
            try AgentSocket.checkOwner(path)
        } catch {
            throw ContinuationError(.notPermitted, "\(error)")
        }
        let agent: Int32
        do {
            agent = try AgentSocket.connectedDescriptor(path)
        } catch {
            throw ContinuationError(.agentGone, "no agent answers at \(path) (start one with `baton agent`): \(String(cString: strerror(error.code)))")
        }
        let answer: Answer
        do {
            answer = try await onThread { () throws(ContinuationError) -> Answer in
                try sayHello(hello, on: agent, path: path, deadline: .now() + timeout)
            }
        } catch {
            Glibc.close(agent)
            throw error
        }
        switch answer {
        case .relayed:
            return try await relayed(agent)
        case .direct(let end, let socket):
            do {
                return try await direct(end, socket: socket, agent: agent)
            } catch {
                Glibc.close(agent)
                throw error
            }
        }
    }

    /// Runs blocking socket work on a thread of its own (never a cooperative thread: it waits up to the timeout).
    private static func onThread<Value: Sendable>(_ work: @escaping @Sendable () throws(ContinuationError) -> Value) async throws(ContinuationError) -> Value {
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<Value, ContinuationError>, Never>) in
            Thread.detachNewThread {
                do throws(ContinuationError) {
                    done.resume(returning: .success(try work()))
                } catch {
                    done.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// The hello and its answer, blocking, on the raw connection `agent`.
    private static func sayHello(_ hello: IPCMessage, on agent: Int32, path: String, deadline: NIODeadline) throws(ContinuationError) -> Answer {
        var credentials = PeerCredentials(pid: 0, uid: UInt32.max, gid: 0)
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        // SOL_SOCKET = 1 and SO_PEERCRED = 17 on Linux; PeerCredentials has struct ucred's layout.
        guard getsockopt(agent, 1, 17, &credentials, &length) == 0 else {
            throw ContinuationError(.agentGone, "the agent at \(path) closed the stream's connection at once")
        }
        guard credentials.uid == getuid() else {
            throw ContinuationError(
                .notPermitted,
                "the process listening at \(path) belongs to user \(credentials.uid), not to you (\(getuid())): it is not your agent"
            )
        }
        var descriptors: [Int32] = []
        defer { for descriptor in descriptors { Glibc.close(descriptor) } }
        let message: IPCMessage
        do {
            let body = try BinaryPropertyListEncoder.encode(hello.propertyList)
            try StreamSocket.write(withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init) + Array(body), to: agent, deadline: deadline)
            let header = try StreamSocket.receive(exactly: 4, on: agent, deadline: deadline)
            descriptors += header.descriptors
            let count = header.bytes.reduce(0) { $0 << 8 | Int($1) }
            guard count <= maximumAnswerLength else {
                throw ContinuationError(.protocolViolation, "the agent's answer to the stream's hello announced \(count) bytes (at most \(maximumAnswerLength))")
            }
            let body2 = try StreamSocket.receive(exactly: count, on: agent, deadline: deadline)
            descriptors += body2.descriptors
            message = try IPCMessage(BinaryPropertyListDecoder.decode(Data(body2.bytes), limits: MessageHandler.limits))
        } catch let error as ContinuationError {
            throw error
        } catch let error as StreamSocketError {
            switch error.code {
            case .timedOut: throw ContinuationError(.timedOut, "the agent did not answer the stream's hello in time")
            case .closed: throw ContinuationError(.agentGone, "the agent closed the stream's connection before answering")
            default: throw ContinuationError(.agentGone, "the stream's connection to the agent failed: \(error)")
            }
        } catch {
            throw ContinuationError(.protocolViolation, "the agent's answer to the stream's hello cannot be read: \(error)")
        }
        switch message {
        case .welcome:
            return .relayed
        case .refused(let code, let text):
            throw StreamEndStateMachine.refusal(code: code, message: text)
        case .directStream(let end):
            guard descriptors.count == 1, let socket = descriptors.popLast() else {
                throw ContinuationError(.protocolViolation, "the agent's direct answer carried \(descriptors.count) sockets, not one")
            }
            return .direct(end, socket: socket)
        default:
            throw ContinuationError(.protocolViolation, "the agent answered the stream's hello with '\(message.kind)'")
        }
    }

    /// The agent relays the stream: the connection the hello went on becomes the stream's, as on a hello without
    /// `direct`. Nothing past the welcome was read, so what the agent sent after it waits in the socket.
    private static func relayed(_ agent: Int32) async throws(ContinuationError) -> StreamEnd {
        let conduit: ChannelAppConduit
        do {
            conduit = try await agentConduit(agent)
        } catch {
            throw ContinuationError(.agentGone, "the stream's connection to the agent could not be used: \(error)")
        }
        let channel = conduit.channel
        let end = StreamEnd(conduit: conduit)
        do {
            try await channel.eventLoop.submit {
                end.update { $0.received(.welcome(device: "", deviceName: "")) }
                end.conduit.attach(end)
            }.get()
        } catch {
            channel.close(promise: nil)
            throw ContinuationError(.agentGone, "\(error)")
        }
        return end
    }

    /// The direct path: TLS 1.3 with the other app over `socket`, each end accepting only the certificate pinned
    /// for the other; open once the handshake is done.
    private static func direct(_ end: DirectStreamEnd, socket: Int32, agent: Int32) async throws(ContinuationError) -> StreamEnd {
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: try tlsConfiguration(end))
        } catch {
            Glibc.close(socket)
            throw ContinuationError(.protocolViolation, "the stream's credentials from the agent are not usable: \(error)")
        }
        let pinned = end.peerFingerprint
        let verify: @Sendable ([NIOSSLCertificate], EventLoopPromise<NIOSSLVerificationResult>) -> Void = { certificates, promise in
            guard let leaf = try? certificates.first?.toDERBytes(), DirectStreamEnd.fingerprint(of: leaf) == pinned else {
                return promise.succeed(.failed)
            }
            promise.succeed(.certificateVerified)
        }
        let watch = DirectStreamWatch()
        let messages = MessageHandler()
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                // One read of at most 256 KiB a turn: NIOSSL decrypts a turn's reads into one buffer, so this bounds
                // what a reader that stopped still takes in before its pause bites.
                .channelOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64 << 10, initial: 256 << 10, maximum: 256 << 10))
                .channelOption(ChannelOptions.maxMessagesPerRead, value: 1)
                .withConnectedSocket(socket) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        switch end.role {
                        case .client: try pipeline.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil, customVerificationCallback: verify))
                        case .server: try pipeline.addHandler(NIOSSLServerHandler(context: context, customVerificationCallback: verify))
                        }
                        try pipeline.addHandler(watch)
                        // Data frames' bytes as they come, copied once out of NIOSSL's buffer (issue 30's profile).
                        try pipeline.addHandler(StreamFrameSplitterHandler())
                        try pipeline.addHandler(FrameEncoder())
                        try pipeline.addHandler(messages)
                        return channel
                    }
                }
        } catch {
            Glibc.close(socket)
            throw ContinuationError(.peerGone, "the stream's connection could not be used: \(error)")
        }
        let timer = channel.eventLoop.scheduleTask(in: directHandshakeTimeout) {
            watch.handshakeFailed(ContinuationError(.timedOut, "the other app did not finish the stream's TLS handshake within \(directHandshakeTimeout.nanoseconds / 1_000_000_000) s"))
            channel.close(promise: nil)
        }
        do {
            try await watch.handshake.get()
            timer.cancel()
        } catch let error as ContinuationError where error.code == .appGone {
            // The other app closed its end as soon as it had it: as on the relayed path, the stream opened (the
            // agents said so) and is over at once, with the reason.
            timer.cancel()
        } catch {
            timer.cancel()
            channel.close(promise: nil)
            throw error as? ContinuationError ?? ContinuationError(.peerGone, "the stream's TLS handshake failed: \(error)")
        }
        DirectStreamLiveness.watch(channel, watch)
        let stream = StreamEnd(conduit: ChannelAppConduit(channel, messages: messages), watch: watch, agentConnection: agent)
        do {
            try await channel.eventLoop.submit {
                stream.update { $0.openedDirect() }
                stream.conduit.attach(stream)
            }.get()
        } catch {
            channel.close(promise: nil)
            throw ContinuationError(.peerGone, "the stream's connection closed as it opened: \(error)")
        }
        return stream
    }

    /// Mutual TLS 1.3 with the stream's own key and certificate; no trust store, no host name (the callback pins).
    static func tlsConfiguration(_ end: DirectStreamEnd) throws -> TLSConfiguration {
        let certificate = try NIOSSLCertificate(bytes: Array(end.certificate), format: .der)
        let key = try NIOSSLPrivateKey(bytes: Array(end.key), format: .der)
        var configuration =
            switch end.role {
            case .server: TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
            case .client: TLSConfiguration.makeClientConfiguration()
            }
        configuration.certificateChain = [.certificate(certificate)]
        configuration.privateKey = .privateKey(key)
        configuration.minimumTLSVersion = .tlsv13
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates([])
        configuration.shutdownTimeout = .seconds(1)
        return configuration
    }
}

/// Watches a direct stream's TLS connection (issue 30): the handshake's end, and why the connection failed (a
/// timeout or reset of its TCP connection is the other device gone; a refused certificate is a broken
/// introduction), for the stream's error when it closes.
final class DirectStreamWatch: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let state = NIOLockedValueBox<(promise: EventLoopPromise<Void>?, failure: ContinuationError?)>((nil, nil))
    private let handshakeDone = NIOLockedValueBox<EventLoopFuture<Void>?>(nil)

    /// Completes when the TLS handshake does; fails when it fails or the connection closes first.
    var handshake: EventLoopFuture<Void> {
        handshakeDone.withLockedValue { $0 } ?? MultiThreadedEventLoopGroup.singleton.any().makeFailedFuture(ContinuationError(.peerGone, "the stream's connection never opened"))
    }

    /// Why the connection failed, if it did.
    var failure: ContinuationError? {
        state.withLockedValue { $0.failure }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let promise = context.eventLoop.makePromise(of: Void.self)
        state.withLockedValue { $0.promise = promise }
        handshakeDone.withLockedValue { $0 = promise.futureResult }
    }

    func handshakeFailed(_ error: ContinuationError) {
        let promise = state.withLockedValue { state -> EventLoopPromise<Void>? in
            if state.failure == nil { state.failure = error }
            defer { state.promise = nil }
            return state.promise
        }
        promise?.fail(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent {
            let promise = state.withLockedValue { state -> EventLoopPromise<Void>? in
                defer { state.promise = nil }
                return state.promise
            }
            promise?.succeed()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        handshakeFailed(Self.failure(for: error))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Closed cleanly (no error came first): the other app let go of its end.
        handshakeFailed(ContinuationError(.appGone, "the other app closed the stream (or quit) as it opened"))
        context.fireChannelInactive()
    }

    /// The stream's error for a connection error.
    static func failure(for error: Error) -> ContinuationError {
        if let io = error as? IOError, [ETIMEDOUT, ECONNRESET, EHOSTUNREACH, ENETUNREACH, EPIPE].contains(io.errnoCode) {
            return ContinuationError(.peerGone, "the other device stopped answering on the stream's connection: \(io)")
        }
        if error is NIOSSLError || error is BoringSSLError {
            return ContinuationError(.protocolViolation, "the stream's TLS failed (a certificate other than the one pinned?): \(error)")
        }
        return ContinuationError(.peerGone, "the stream's connection failed: \(error)")
    }
}

extension IPCMessage {
    /// Whether this is a stream's hello that offers the direct path.
    var offersDirectPath: Bool {
        switch self {
        case .openStream(_, _, _, let direct), .acceptStream(_, _, _, let direct): direct
        default: false
        }
    }
}

/// Whether a direct stream's peer is still there while bytes to it are in flight (issue 30; docs/PROTOCOL.md §8
/// "Direct streams"). TCP keepalive probes only a quiet connection; `TCP_USER_TIMEOUT` would also drop a peer that is
/// there and only stopped reading (its window probes answered), which is backpressure, not a dead peer. So every
/// ``checkSeconds`` the library reads the socket's `TCP_INFO`: bytes unacknowledged, nothing acknowledged for
/// ``StreamSocket/deadPeerMilliseconds``, and at least ``unansweredLimit`` retransmissions or window probes in a row
/// unanswered (the kernel resets both counts at any acknowledgement, which a reader that only paused still sends).
/// Pure: the decision is ``isDead(_:)``, tested with the kernel's numbers.
enum DirectStreamLiveness {
    static let checkSeconds: Int64 = 1
    static let unansweredLimit: UInt8 = 3

    /// The start of the kernel's `struct tcp_info` (`<linux/tcp.h>`), as far as `tcpi_last_ack_recv`: eight bytes, then
    /// 32-bit fields, so Swift lays it out as C does. `getsockopt` fills as much as is asked for.
    struct TCPInfo: Sendable, Equatable {
        var state: UInt8 = 0
        var congestionState: UInt8 = 0
        /// Retransmission timeouts in a row without an acknowledgement.
        var retransmits: UInt8 = 0
        /// Zero-window probes in a row without an acknowledgement.
        var probes: UInt8 = 0
        var backoff: UInt8 = 0
        var options: UInt8 = 0
        var windowScales: UInt8 = 0
        var flags: UInt8 = 0
        var rto: UInt32 = 0
        var ato: UInt32 = 0
        var sendMSS: UInt32 = 0
        var receiveMSS: UInt32 = 0
        /// Segments sent and not acknowledged.
        var unacked: UInt32 = 0
        var sacked: UInt32 = 0
        var lost: UInt32 = 0
        var retransmitted: UInt32 = 0
        var fackets: UInt32 = 0
        var lastDataSent: UInt32 = 0
        var lastAckSent: UInt32 = 0
        var lastDataReceived: UInt32 = 0
        /// Milliseconds since the last acknowledgement came.
        var lastAckReceived: UInt32 = 0
    }

    static func isDead(_ info: TCPInfo) -> Bool {
        info.unacked > 0 && info.lastAckReceived >= StreamSocket.deadPeerMilliseconds
            && (info.retransmits >= unansweredLimit || info.probes >= unansweredLimit)
    }

    /// Checks `channel`'s socket every ``checkSeconds`` until it closes; a dead peer closes it with `peerGone`.
    static func watch(_ channel: Channel, _ watch: DirectStreamWatch) {
        guard let socket = channel as? SocketOptionProvider else { return }
        let task = channel.eventLoop.scheduleRepeatedAsyncTask(initialDelay: .seconds(checkSeconds), delay: .seconds(checkSeconds)) { task in
            socket.unsafeGetSocketOption(level: SocketOptionLevel(IPPROTO_TCP), name: SocketOptionName(StreamSocket.tcpInfoOption)).map { (info: TCPInfo) in
                guard isDead(info) else { return }
                watch.handshakeFailed(
                    ContinuationError(.peerGone, "the other device stopped acknowledging the stream's bytes \(info.lastAckReceived / 1000) s ago")
                )
                channel.close(promise: nil)
                task.cancel()
            }.recover { _ in task.cancel() }
        }
        channel.closeFuture.whenComplete { _ in task.cancel() }
    }
}
