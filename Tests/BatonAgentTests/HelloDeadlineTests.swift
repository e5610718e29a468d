@testable import BatonAgent
@testable import BatonClient
import BatonCore
import BatonProtocol
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// ISSUE 10 item 6 on the agent's clock (issue 26 item 2): a client of the app socket that connects and says nothing
/// holds one of the waiting slots only until the hello deadline (5 s), timed on the agent's clock, so a virtual clock
/// drops it by advancing, with no real wait. The socket is real; what the clients hear is what a real client hears.
@Suite("ISSUE 10 item 6 on virtual time: the app socket's hello deadline")
struct HelloDeadlineTests {
    /// The agent's side: welcomes every hello as a control client, and tells the test each refusal.
    final class Handler: IPCHandler {
        let refusals: AsyncStream<String>
        let refused: AsyncStream<String>.Continuation

        init() {
            (refusals, refused) = AsyncStream.makeStream(of: String.self)
        }

        func ipcReceived(_ message: IPCMessage, on connection: IPCConnection) {
            guard case .hello = message else { return }
            connection.identify(.control)
            connection.send(.welcome(device: "virtual-device", deviceName: "Virtual"))
        }

        func ipcClosed(_ connection: IPCConnection) {}

        func ipcRefused(_ connection: IPCConnection, code: IPCRefusal, message: String) {
            refused.yield("\(code): \(message)")
        }
    }

    /// A client's end of the socket: what it heard, in order, and its close.
    final class Client: MessageSink {
        let heard: AsyncStream<String>
        let hear: AsyncStream<String>.Continuation

        init() {
            (heard, hear) = AsyncStream.makeStream(of: String.self)
        }

        func received(_ message: PropertyList) {
            switch try? IPCMessage(message) {
            case .welcome(let device, _): hear.yield("welcome \(device)")
            case .refused(let code, let message): hear.yield("refused \(code): \(message)")
            default: hear.yield("something else")
            }
        }

        func malformed(_ error: Error) { hear.yield("malformed") }

        func closed() {
            hear.yield("closed")
            hear.finish()
        }
    }

    /// A client connected to the socket at `path`, as an app's library connects (frames both ways), saying nothing.
    static func connect(_ path: String) async throws -> (Channel, AsyncStream<String>.AsyncIterator) {
        let client = Client()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(FrameEncoder())
                    try channel.pipeline.syncOperations.addHandler(MessageHandler(sink: client))
                }
            }
            .connect(unixDomainSocketPath: path)
            .get()
        return (channel, client.heard.makeAsyncIterator())
    }

    @Test("ISSUE 10 item 6 on virtual time (issue 26 item 2): a client that says nothing is refused (timedOut) and closed when the agent's clock passes 5 s, not at 4.999 s; one that says hello at 4.999 s is welcomed and stays")
    func silentClientIsDroppedAtTheDeadline() async throws {
        let clock = VirtualClock()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hello-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("agent.sock").path
        let handler = Handler()
        let listener = try await UnixAppTransport(clock: clock.clock).listen(path: path, handler: handler, loop: MultiThreadedEventLoopGroup.singleton.next())
        let (silentChannel, silent) = try await Self.connect(path)
        var silentHeard = silent
        let (politeChannel, polite) = try await Self.connect(path)
        var politeHeard = polite
        // Both admitted: each one's deadline armed on the agent's clock (nothing else schedules on it here).
        await clock.untilTimers(2)

        try await clock.advance(by: 4_999)
        #expect(clock.pending == 2, "4.999 s: neither client dropped")
        try politeChannel.writeMessage(IPCMessage.hello(bundleIdentifier: nil, version: IPCMessage.version).propertyList)
        #expect(await politeHeard.next() == "welcome virtual-device")
        #expect(clock.pending == 1, "the hello ended its client's deadline")

        try await clock.advance(by: 1)
        #expect(await silentHeard.next() == "refused timedOut: no hello within 5 s of connecting")
        #expect(await silentHeard.next() == "closed", "and its connection closed by the agent")
        var refusals = handler.refusals.makeAsyncIterator()
        #expect(await refusals.next() == "timedOut: no hello within 5 s of connecting", "the agent logs the refusal")
        try await silentChannel.closeFuture.get()

        try await clock.advance(by: .seconds(60))
        #expect(politeChannel.isActive, "a client that said hello has no deadline")
        try await politeChannel.close()
        await listener.close()
    }
}
