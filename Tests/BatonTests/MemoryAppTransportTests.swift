@testable import BatonAgent
@testable import BatonClient
import BatonCore
import BatonEmbedded
import BatonProtocol
import BatonRegistry
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// The agent's side of an app connection, as a handler sees it: it welcomes every hello and tells the test, in order,
/// what it heard, so the test waits on what happened and never on the clock.
final class WelcomingIPCHandler: IPCHandler, Sendable {
    enum Event: Sendable, Equatable {
        case hello(bundle: String?)
        case received(IPCMessage)
        case closed
    }

    let events: AsyncStream<Event>
    let told: AsyncStream<Event>.Continuation
    /// The connections that said hello, in order.
    let connections = NIOLockedValueBox<[IPCConnection]>([])

    init() {
        (events, told) = AsyncStream.makeStream(of: Event.self)
    }

    func ipcReceived(_ message: IPCMessage, on connection: IPCConnection) {
        guard case .hello(let bundle, _, _) = message else {
            told.yield(.received(message))
            return
        }
        connection.identify(.control)
        connections.withLockedValue { $0.append(connection) }
        told.yield(.hello(bundle: bundle))
        connection.send(.welcome(device: "memory-device", deviceName: "Memory"))
    }

    func ipcClosed(_ connection: IPCConnection) {
        told.yield(.closed)
    }
}

/// Agents here run on the network transport on purpose (issue 26 item 3): the in-memory app transport is checked
/// beside peers on TLS and the system's clocks, as an embedder that keeps its agents on the network but its apps in
/// the process has them, and the bundle check of an agent as installed (not trusting this process).
@Suite("Issue 26 item 3: apps reach an agent in the same process in memory, with no socket")
struct MemoryAppTransportTests {
    /// A socket path where no socket is, nor could be: only the memory transport answers there.
    static func path() -> String {
        "/nonexistent-\(UUID().uuidString)/agent.sock"
    }

    static let loop = MultiThreadedEventLoopGroup.singleton.next()

    @Test("a client and the agent's side exchange messages both ways in memory, and each hears the other's close")
    func messagesBothWaysAndCloses() async throws {
        let handler = WelcomingIPCHandler()
        let path = Self.path()
        let listener = try await MemoryAppTransport().listen(path: path, handler: handler, loop: Self.loop)
        defer { Task { await listener.close() } }
        var events = handler.events.makeAsyncIterator()

        // The client says hello and is welcomed: the agent's identity reaches it.
        let client = try await AgentClient.connect(path: path, bundleIdentifier: nil)
        #expect(client.device == "memory-device" && client.deviceName == "Memory")
        #expect(await events.next() == .hello(bundle: nil))
        #expect(client.conduit is MemoryAppConduit, "no socket: the client's end is in memory")

        // App to agent, in order.
        client.send(.resignCurrent(activity: 7))
        client.send(.getStatus(request: 8))
        #expect(await events.next() == .received(.resignCurrent(activity: 7)))
        #expect(await events.next() == .received(.getStatus(request: 8)))

        // Agent to app, in order.
        let first = handler.connections.withLockedValue(\.first)
        let connection = try #require(first)
        #expect(connection.credentials == PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()), "the client is this process")
        connection.send(.continued(activity: 7))
        connection.send(.willContinue(continuation: 9, activityType: "org.example.note"))
        var messages = client.messages.makeAsyncIterator()
        #expect(await messages.next() == .continued(activity: 7))
        #expect(await messages.next() == .willContinue(continuation: 9, activityType: "org.example.note"))

        // The app leaves: the agent hears it once; the client's messages end.
        client.close()
        #expect(await events.next() == .closed)
        #expect(await messages.next() == nil)
        #expect(!connection.conduit.isActive)

        // The agent closes a second client: the client's messages end after what was sent before the close.
        let second = try await AgentClient.connect(path: path, bundleIdentifier: nil)
        #expect(await events.next() == .hello(bundle: nil))
        let secondOne = handler.connections.withLockedValue { $0.count == 2 ? $0[1] : nil }
        let secondConnection = try #require(secondOne)
        secondConnection.send(.continued(activity: 10))
        secondConnection.conduit.close()
        var secondMessages = second.messages.makeAsyncIterator()
        #expect(await secondMessages.next() == .continued(activity: 10))
        #expect(await secondMessages.next() == nil)
        #expect(await events.next() == .closed)
        try await second.conduit.closeFuture.get()
    }

    @Test("one agent listens at a path: a second is refused while it does, and once it stops, no one answers there")
    func onePathOneListener() async throws {
        let path = Self.path()
        let listener = try await MemoryAppTransport().listen(path: path, handler: WelcomingIPCHandler(), loop: Self.loop)
        await #expect(throws: BatonAgentError.self) {
            _ = try await MemoryAppTransport().listen(path: path, handler: WelcomingIPCHandler(), loop: Self.loop)
        }
        await listener.close()
        let error = await #expect(throws: BatonClientError.self) {
            _ = try await AgentClient.connect(path: path, bundleIdentifier: nil)
        }
        #expect(error?.code == .peerUnreachable, "the path falls back to the socket, and none is there")
    }

    @Test("ISSUE 10 item 3 in memory: an agent refuses a client that claims an app whose executable is not this process, and admits it as a control client")
    func impostorRefusedInMemory() async throws {
        let bundle = "org.example.notes"
        let app = AppRecord(
            bundleURL: URL(fileURLWithPath: "/apps/\(bundle).app"),
            bundleIdentifier: bundle,
            name: "Notes",
            executableURL: URL(fileURLWithPath: "/apps/\(bundle).app/run"),
            teamIdentifier: "TEAM000001",
            activityTypes: ["org.example.note"],
            documentActivityTypes: [],
            associatedDomains: [],
            warnings: [],
            isIdentityResolved: true
        )
        // Not the embedded mode: this process is checked against the app's executable as any other would be.
        let devices = try await LocalDevices.start(names: ["laptop"], apps: AppRegistry(apps: [app])) { $0.trustsThisProcess = false }
        defer { Task { await devices.shutdown() } }
        let agent = try #require(devices.agents.first)
        let path = Self.path()
        let listener = try await MemoryAppTransport().listen(path: path, handler: AgentForwarder(agent), loop: agent.loop)
        defer { Task { await listener.close() } }

        let error = await #expect(throws: BatonClientError.self) {
            _ = try await AgentClient.connect(path: path, bundleIdentifier: bundle)
        }
        #expect(error?.code == .peerRefused)
        #expect(error?.message.contains("[notPermitted]") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("process \(getpid()) runs") == true, "the check named this process: \(error?.message ?? "")")

        // The same process as a control client is this user's, and welcomed.
        let control = try await AgentClient.connect(path: path, bundleIdentifier: nil)
        #expect(!control.device.isEmpty)
        control.close()
    }
}

@Suite("Issue 26 item 3: an embedded agent's apps connect in memory")
@MainActor
struct EmbeddedAppsInMemoryTests {
    @Test("B4 with appConnections .inMemory: the laptop's activity is continued on the desktop, the apps of both talking to their agents with no socket")
    func continuesWithNoAppSocket() async throws {
        let world = try await TwoDevices(appConnections: .inMemory)
        for agent in world.devices.agents {
            #expect(!FileManager.default.fileExists(atPath: agent.socketPath), "no socket at \(agent.socketPath)")
            #expect(MemoryAppSockets.process.isListening(at: agent.socketPath))
        }
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: world.laptop)
        activity.title = "Groceries"
        activity.userInfo["body"] = "Milk"
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        let events = await world.continueOnDesktop()
        guard case .continued(let continued) = events.last else {
            Issue.record("not continued: \(events)")
            await world.stop()
            return
        }
        #expect(continued.activityType == "com.example.notes.edit" && continued.title == "Groceries")
        #expect(continued.userInfo == ["body": "Milk"])
        let paths = world.devices.agents.map(\.socketPath)
        await world.stop()
        for path in paths { #expect(!MemoryAppSockets.process.isListening(at: path), "the agent's shutdown stopped listening at \(path)") }
    }
}
