import BatonClient
import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The resolved path of a file: what `/proc/PID/exe` shows for a process started from it.
func resolvedPath(_ url: URL) -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard realpath(url.path, &buffer) != nil else { return url.standardizedFileURL.path }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// What the agent does with its IPC connections.
protocol IPCHandler: AnyObject, Sendable {
    func ipcReceived(_ message: IPCMessage, on connection: IPCConnection)
    func ipcClosed(_ connection: IPCConnection)
    /// The agent refused `connection` with `code` (and closes it): the agent logs refusals of local processes once
    /// per kind (issue 25 item 12).
    func ipcRefused(_ connection: IPCConnection, code: IPCRefusal, message: String)
}

extension IPCHandler {
    func ipcRefused(_ connection: IPCConnection, code: IPCRefusal, message: String) {}
}

/// Where an app's stream connection sends what the app writes, once the stream is open (F3): the agent's splice.
protocol IPCStreamSink: AnyObject, Sendable {
    /// Bytes the app wrote (a data frame's, uncopied).
    func appData(_ bytes: ByteBuffer)
    /// A message the app sent on the stream connection (`eof`; anything else breaks the protocol).
    func appMessage(_ message: IPCMessage)
    /// The app's stream connection closed.
    func appClosed()
}

/// One process as the agent first saw it: its pid, when it started, and what it ran (ISSUE 10 item 4).
struct ProcessStamp: Sendable, Hashable {
    var pid: Int32
    var startTime: UInt64?
    var executable: String?

    /// The process behind `pid` now.
    static func of(_ pid: Int32) -> ProcessStamp {
        ProcessStamp(pid: pid, startTime: PeerCredentials.startTime(of: pid), executable: PeerCredentials.executable(of: pid))
    }

    /// Whether the same process (same pid and start time: not a recycled pid) still runs `executable`.
    func isStill(running executable: String) -> Bool {
        let now = ProcessStamp.of(pid)
        return startTime != nil && now.startTime == startTime && now.executable == executable
    }

    /// Whether the same process still runs, whatever its executable.
    var isAlive: Bool {
        startTime != nil && PeerCredentials.startTime(of: pid) == startTime
    }
}

/// One app (or command line) connected to the agent.
///
/// Nothing in it changes but `identity`, `streamSink` and `settled`, under their locks; the rest are `let`s (the
/// conduit: the Unix socket's channel or an end in memory, issue 26 item 3; the peer's credentials and process stamp;
/// the handler: the agent's ``AgentForwarder``, which holds the agent weakly), so the compiler checks it is Sendable.
final class IPCConnection: MessageSink, Sendable {
    let conduit: any AppConduit
    let credentials: PeerCredentials
    /// The connecting process as it was when the connection was accepted, before it could say anything. An app's
    /// identity is bound to this process for the connection's life.
    let process: ProcessStamp
    /// The connecting process pinned by its pidfd, where the kernel gives one (issue 25 item 8).
    let pinned: PinnedProcess?
    /// This end's socket cookie (`SO_COOKIE`), by which the kernel names the client's end (``SocketHolders``).
    let cookie: UInt64?
    let handler: IPCHandler
    /// The number the handoff broker knows this connection by.
    let appID: HandoffBroker.AppID = IPCConnection.nextID()
    /// Set once the hello is accepted: the app's bundle identifier, or nil for a control client.
    let identity = NIOLockedValueBox<Identity?>(nil)
    /// Once this connection carries a continuation stream (F3): where the app's bytes and `eof` go.
    let streamSink = NIOLockedValueBox<IPCStreamSink?>(nil)
    /// Called once, when the client has said who it is or has gone, whichever is first (the server counts the
    /// connections that have not said hello).
    let settled = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)

    enum Identity: Sendable, Hashable {
        case app(bundle: String, team: String)
        case control
        /// One end of a continuation stream, for the app `bundle` (F2, F3): not the app's main connection.
        case stream(bundle: String)
    }

    init(
        conduit: any AppConduit, credentials: PeerCredentials, handler: IPCHandler, process: ProcessStamp? = nil, pinned: PinnedProcess? = nil,
        cookie: UInt64? = nil
    ) {
        self.conduit = conduit
        self.credentials = credentials
        self.process = process ?? ProcessStamp.of(credentials.pid)
        self.pinned = pinned
        self.cookie = cookie
        self.handler = handler
    }

    /// A connection on `channel`, whose message handler was attached to it already.
    convenience init(channel: Channel, credentials: PeerCredentials, handler: IPCHandler) {
        self.init(conduit: ChannelAppConduit(channel, messages: nil), credentials: credentials, handler: handler)
    }

    static let counter = NIOLockedValueBox<UInt64>(0)

    static func nextID() -> HandoffBroker.AppID {
        HandoffBroker.AppID(counter.withLockedValue { count in
            count += 1
            return count
        })
    }

    /// Records who the client is, after its hello was accepted.
    func identify(_ who: Identity) {
        identity.withLockedValue { $0 = who }
        settle()
    }

    func settle() {
        settled.withLockedValue { settled in
            defer { settled = nil }
            return settled
        }?()
    }

    /// Removes and returns the stream's sink, once the connection has closed.
    func takeStreamSink() -> IPCStreamSink? {
        streamSink.withLockedValue { sink in
            defer { sink = nil }
            return sink
        }
    }

    /// Sends a message; a client that has stopped reading is disconnected instead (``Backpressure``).
    func send(_ message: IPCMessage) {
        // `baton bench handoff`'s stamps (issue 26 item 5), off but for the bench.
        var stamped = false
        if HopStamps.isOn, case .deliver = message { stamped = true }
        if stamped { HopStamps.stamp(.agentDeliverSending) }
        // As ``Backpressure/write(_:to:)``, on either conduit.
        if conduit.isWritable || !conduit.isActive {
            conduit.send(message.propertyList)
        } else {
            conduit.close()
        }
        if stamped { HopStamps.stamp(.agentDeliverSent) }
    }

    /// Sends a refusal and closes.
    func refuse(_ code: IPCRefusal, _ message: String) {
        handler.ipcRefused(self, code: code, message: message)
        send(.refused(code: code, message: message))
        conduit.close()
    }

    package func received(_ plist: PropertyList) {
        let message: IPCMessage
        do {
            message = try IPCMessage(plist)
        } catch {
            return refuse(.malformedMessage, "unreadable message: \(error)")
        }
        if let sink = streamSink.withLockedValue({ $0 }) {
            sink.appMessage(message)
        } else {
            if HopStamps.isOn {
                if case .saved = message { HopStamps.stamp(.agentSavedReceived) }
                if case .becomeCurrent = message { HopStamps.stamp(.agentCurrentReceived) }
            }
            handler.ipcReceived(message, on: self)
        }
    }

    package func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool {
        // Only a stream's connection, once open, carries data; anywhere else the connection closes.
        guard let sink = streamSink.withLockedValue({ $0 }) else { return false }
        sink.appData(bytes)
        return true
    }

    package func malformed(_ error: Error) {
        refuse(.malformedMessage, "unreadable frame: \(error)")
    }

    package func closed() {
        settle()
        // The sink (a StreamSplice) holds this connection: letting go of it here breaks the cycle, which otherwise
        // kept both, and the pidfd of the stream's process, for ever (issue 25 item 10, found with 100 streams).
        takeStreamSink()?.appClosed()
        handler.ipcClosed(self)
    }
}

/// The kernel's cookie for `channel`'s socket (`SO_COOKIE`), or nil where it gives none.
private func socketCookie(of channel: Channel) -> EventLoopFuture<UInt64?> {
    guard let provider = channel as? SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
    // SOL_SOCKET = 1 and SO_COOKIE = 57 on Linux.
    let cookie: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(level: SocketOptionLevel(1), name: SocketOptionName(57))
    return cookie.map { Optional($0) }.recover { _ in nil }
}

/// The agent's Unix socket (ISSUE 5 part 6): a folder only the user can enter, a socket only the user can open, and
/// each peer's credentials taken from the kernel before it may say anything.
enum IPCServer {
    /// Bounds on clients that have not said who they are.
    enum Limits {
        /// How long a client may take to send its hello after connecting. A real one sends it at once.
        static let helloDeadline = Duration.seconds(5)
        /// Connections that have not said hello yet, at once. Apps and command lines say hello within
        /// milliseconds, so a handful is normal; past this, new connections are closed at once.
        static let unauthenticatedConnections = 32
    }

    /// Listens at `path`, replacing a stale socket left by an agent that died; refuses when another agent answers
    /// there. A client's hello deadline is timed on `clock`, the agent's.
    static func listen(
        path: String, handler: IPCHandler, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton, clock: AgentClock = .system
    ) async throws -> Channel {
        let folder = FilePaths.parent(path)
        try RuntimeFolder.prepare(folder, below: AgentConfiguration.fallbackRuntimeFolder(containing: folder))
        guard path.utf8.count < 108 else {
            throw BatonAgentError(.stateUnwritable, "the socket path \(path) is longer than a Unix socket allows (107 bytes)")
        }
        if FileManager.default.fileExists(atPath: path) {
            if (try? await ClientBootstrap(group: group).connect(unixDomainSocketPath: path).get())?.close(promise: nil) != nil {
                throw BatonAgentError(.alreadyInitialized, "another agent is already running at \(path)")
            }
            unlink(path)
        }
        let admission = Admission(handler: handler, clock: clock)
        do {
            let channel = try await ServerBootstrap(group: group)
                .childChannelOption(.writeBufferWaterMark, value: Backpressure.waterMark)
                .childChannelOption(.recvAllocator, value: Backpressure.reads)
                .childChannelInitializer { channel in
                    guard admission.enter() else { return channel.close() }
                    let messages = MessageHandler()
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder(firstFrameLimit: Frame.maximumHelloLength, allowsData: true)))
                        try channel.pipeline.syncOperations.addHandler(FrameEncoder())
                        try channel.pipeline.syncOperations.addHandler(messages)
                    }.flatMap {
                        PeerCredentials.of(channel).flatMap { credentials in
                            // Issue 25 item 8: the connecting process pinned (its pidfd) and this end's cookie, by
                            // which the hello's check finds who holds the client's end.
                            PinnedProcess.of(channel, pid: credentials.pid).and(socketCookie(of: channel)).map { (credentials, $0.0, $0.1) }
                        }.map { credentials, pinned, cookie in
                            admission.admit(ChannelAppConduit(channel, messages: messages), credentials: credentials, pinned: pinned, cookie: cookie)
                        }
                    }.flatMapErrorThrowing { error in
                        admission.leave()
                        channel.close(promise: nil)
                        throw error
                    }
                }
                .bind(unixDomainSocketPath: path)
                .get()
            chmod(path, 0o600)
            return channel
        } catch {
            throw BatonAgentError.cannotListen(on: path, error)
        }
    }
}
