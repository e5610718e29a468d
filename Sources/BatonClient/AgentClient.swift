import BatonCore
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A connection to the device's agent over its Unix socket, or in memory to an agent in the same process (issue 26
/// item 3): what the app library and the command line use.
///
/// Sendable, checked: everything is a `let` of a Sendable type or under a lock (`device` and `deviceName` are written
/// once, by ``connect(path:bundleIdentifier:timeout:)`` before it returns the client, and read rarely).
public final class AgentClient: MessageSink, Sendable {
    /// The agent's device id and name, from its welcome.
    public private(set) var device: String {
        get { agent.withLockedValue(\.device) }
        set { agent.withLockedValue { $0.device = newValue } }
    }
    public private(set) var deviceName: String {
        get { agent.withLockedValue(\.name) }
        set { agent.withLockedValue { $0.name = newValue } }
    }
    private let agent = NIOLockedValueBox((device: "", name: ""))
    /// Every message the agent sends after its welcome, in order; finishes when the connection ends. Empty for a
    /// client opened with a ``Receiver``, which gets them instead.
    public let messages: AsyncStream<IPCMessage>

    /// Takes each message the agent sends after its welcome, in order, on the connection's event loop, then `nil` once
    /// when the connection ends. What the app library uses instead of ``messages`` to hand a message to its main actor
    /// in one step: a task iterating an async stream is resumed on the global executor and only then hops to its
    /// actor, two wake-ups where one does (issue 26 item 5).
    package typealias Receiver = @Sendable (IPCMessage?) -> Void
    let receiver: Receiver?

    /// The socket's channel, or the end of a connection in memory.
    let conduit: any AppConduit
    let continuation: AsyncStream<IPCMessage>.Continuation
    let welcome = NIOLockedValueBox<CheckedContinuation<IPCMessage?, Never>?>(nil)
    let greeted = NIOLockedValueBox(false)

    init(conduit: any AppConduit, receiver: Receiver? = nil) {
        self.conduit = conduit
        self.receiver = receiver
        (messages, continuation) = AsyncStream.makeStream(of: IPCMessage.self)
    }

    /// The socket the agent of the state folder `stateFolder` announced (its `agent-socket` file), or the default one.
    public static func socketPath(stateFolder: URL, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let announced = FileManager.default.contents(atPath: stateFolder.appendingPathComponent("agent-socket").path) {
            let path = String(decoding: announced, as: UTF8.self).trimmingWhitespace()
            if !path.isEmpty { return path }
        }
        return AgentSocket.defaultPath(stateFolder: stateFolder, environment: environment)
    }

    /// Connects as ``connect(path:bundleIdentifier:timeout:)`` does to the socket at `location`; when no agent answers
    /// there, the error also says where the path came from (BATON_AGENT_SOCKET, an `agent-socket` announcement, the
    /// default) and how to reach an agent started with `--state` (issue 24 part 7).
    public static func connect(
        to location: AgentSocket.Location, bundleIdentifier: String?, timeout: Double = 5, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> AgentClient {
        try await connect(to: location, bundleIdentifier: bundleIdentifier, timeout: timeout, group: group, receiver: nil)
    }

    /// ``connect(to:bundleIdentifier:timeout:group:)`` with the messages going to `receiver`, from the first one on.
    package static func connect(
        to location: AgentSocket.Location, bundleIdentifier: String?, timeout: Double = 5, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        receiver: Receiver?
    ) async throws -> AgentClient {
        do {
            return try await connect(path: location.path, bundleIdentifier: bundleIdentifier, timeout: timeout, group: group, receiver: receiver)
        } catch let error as BatonClientError where error.code == .peerUnreachable {
            let why = AgentSocket.whyUnreachable(location.path)
            let others = AgentSocket.socketsBeside(location.path)
            let beside = others.isEmpty ? "" : "; other agents' sockets there: \(others.joined(separator: ", "))"
            throw BatonClientError(.peerUnreachable, "no agent answers at \(location.path) \(location.origin): \(why); \(location.advice)\(beside)")
        }
    }

    /// Connects and says hello: as the app `bundleIdentifier`, or as a control client when nil.
    /// - Throws: ``BatonClientError`` `peerUnreachable` when no agent listens at `path` (saying whether the socket is
    ///   missing or nothing listens on it),
    ///   `peerRefused` with the agent's reason when it refuses this process.
    /// An agent of this process listening at `path` in memory (``MemoryAppSockets``) is reached there, with no socket.
    /// - Parameter group: the event loops the connection runs on: the process's shared ones, unless an agent in the
    ///   same process should not share them (`baton bench handoff` plays apps beside embedded agents).
    public static func connect(
        path: String, bundleIdentifier: String?, timeout: Double = 5, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> AgentClient {
        try await connect(path: path, bundleIdentifier: bundleIdentifier, timeout: timeout, group: group, receiver: nil)
    }

    /// ``connect(path:bundleIdentifier:timeout:group:)`` with the messages going to `receiver`, from the first one on.
    package static func connect(
        path: String, bundleIdentifier: String?, timeout: Double = 5, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        receiver: Receiver?
    ) async throws -> AgentClient {
        if let conduit = MemoryAppSockets.process.connect(path: path, loop: group.next()) {
            return try await hello(over: conduit, path: path, bundleIdentifier: bundleIdentifier, timeout: timeout, receiver: receiver)
        }
        // ISSUE 10 item 3: talk only to an agent of this user. The socket's owner first, then, decisively, the
        // credentials of the process that listens on it.
        try AgentSocket.checkOwner(path)
        let handler = MessageHandler()
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder()))
                        try channel.pipeline.syncOperations.addHandler(FrameEncoder())
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
                .withConnectedSocket(try AgentSocket.connectedDescriptor(path))
                .get()
        } catch {
            // Where the path came from and what to do is the caller's to add (it knows: ``connect(to:bundleIdentifier:timeout:)``).
            throw BatonClientError(
                .peerUnreachable,
                "no agent answers at \(path): \(AgentSocket.whyUnreachable(path)) (is `baton agent` running, with the same --state?)"
            )
        }
        return try await hello(
            over: ChannelAppConduit(channel, messages: handler), path: path, bundleIdentifier: bundleIdentifier, timeout: timeout, receiver: receiver
        )
    }

    /// Checks that the agent at the other end of `conduit` is this user's, and says hello.
    static func hello(
        over conduit: any AppConduit, path: String, bundleIdentifier: String?, timeout: Double, receiver: Receiver? = nil
    ) async throws -> AgentClient {
        let owner = try? await conduit.peerCredentials().get()
        guard let owner, owner.uid == getuid() else {
            conduit.close()
            throw BatonClientError(
                .notOwned,
                "the process listening at \(path) belongs to user \(owner.map { String($0.uid) } ?? "unknown"), not to you (\(getuid())): it is not your agent"
            )
        }
        let client = AgentClient(conduit: conduit, receiver: receiver)
        let timer = conduit.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout * 1e9))) { client.greet(nil) }
        defer { timer.cancel() }
        let answer: IPCMessage? = await withCheckedContinuation { waiter in
            client.welcome.withLockedValue { $0 = waiter }
            conduit.eventLoop.execute { conduit.attach(client) }
            // This library reads `notCurrent` (issue 27 item 3): the agent may tell it its activity was superseded.
            client.send(.hello(bundleIdentifier: bundleIdentifier, version: IPCMessage.version, readsNotCurrent: true))
        }
        switch answer {
        case .welcome(let device, let name):
            client.device = device
            client.deviceName = name
            return client
        case .refused(let code, let message):
            conduit.close()
            throw BatonClientError(.peerRefused, "the agent refused: \(message) [\(code)]")
        default:
            conduit.close()
            throw BatonClientError(.timedOut, "the agent at \(path) did not answer the hello within \(Int(timeout)) s")
        }
    }

    func greet(_ message: IPCMessage?) {
        greeted.withLockedValue { $0 = true }
        welcome.withLockedValue { waiter in
            defer { waiter = nil }
            return waiter
        }?.resume(returning: message)
    }

    /// Sends a message; silently dropped when the connection has ended (the stream says so).
    public func send(_ message: IPCMessage) {
        conduit.send(message.propertyList)
        if HopStamps.isOn, case .becomeCurrent = message { HopStamps.stamp(.appCurrentSent) }
    }

    /// Ends the connection.
    public func close() {
        conduit.close()
    }

    package func received(_ plist: PropertyList) {
        guard let message = try? IPCMessage(plist) else {
            malformed(BatonProtocolError(.malformedMessage, "unreadable message from the agent"))
            return
        }
        if !greeted.withLockedValue({ $0 }) {
            greet(message)
        } else {
            if HopStamps.isOn, case .deliver = message { HopStamps.stamp(.clientDeliverReceived) }
            if let receiver { receiver(message) } else { continuation.yield(message) }
        }
    }

    package func malformed(_ error: Error) {
        conduit.close()
    }

    package func closed() {
        greet(nil)
        continuation.finish()
        receiver?(nil)
    }
}
