@testable import BatonAgent
import BatonClient
import BatonCore
import BatonEmbedded
import BatonInMemory
import BatonProtocol
import BatonRegistry
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A continuation stream's connection as an app makes it, speaking the app-socket protocol directly
/// (docs/PROTOCOL.md §8): the agents' side of F2/F3, without the library. Over the agent's Unix socket, or in memory
/// when the agent listens at the path on the memory transport (issue 26 item 3), as the library's own ends do.
final class RawStreamEnd: MessageSink, Sendable {
    enum Event: Sendable {
        case message(IPCMessage)
        case data(ByteBuffer)
        case closed
    }

    let events: AsyncStream<Event>
    let sink: AsyncStream<Event>.Continuation
    let conduit: any AppConduit
    /// The agent's first answer (welcome, or why not): nothing is written before it (the protocol's rule).
    let answered = NIOLockedValueBox<(IPCMessage?, [CheckedContinuation<Void, Never>])>((nil, []))

    init(conduit: any AppConduit) {
        self.conduit = conduit
        (events, sink) = AsyncStream.makeStream(of: Event.self)
    }

    func received(_ plist: PropertyList) {
        guard let message = try? IPCMessage(plist) else { return }
        sink.yield(.message(message))
        answer(message)
    }

    func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool {
        sink.yield(.data(bytes))
        return true
    }

    func malformed(_ error: Error) {}

    func closed() {
        sink.yield(.closed)
        sink.finish()
        answer(.endOfStream)
    }

    func answer(_ message: IPCMessage) {
        let waiting = answered.withLockedValue { answered -> [CheckedContinuation<Void, Never>] in
            guard answered.0 == nil else { return [] }
            answered.0 = message
            defer { answered.1 = [] }
            return answered.1
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Waits for the agent's first answer to the hello.
    func waitForAnswer() async {
        await withCheckedContinuation { waiter in
            let now = answered.withLockedValue { answered -> Bool in
                guard answered.0 == nil else { return true }
                answered.1.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }

    static func connect(_ path: String, hello: IPCMessage) async throws -> RawStreamEnd {
        let group = MultiThreadedEventLoopGroup.singleton
        let conduit: any AppConduit
        if let memory = MemoryAppSockets.process.connect(path: path, loop: group.next()) {
            conduit = memory
        } else {
            let messages = MessageHandler()
            let channel = try await ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder(allowsData: true)))
                        try channel.pipeline.syncOperations.addHandler(FrameEncoder())
                        try channel.pipeline.syncOperations.addHandler(messages)
                    }
                }
                .connect(unixDomainSocketPath: path).get()
            conduit = ChannelAppConduit(channel, messages: messages)
        }
        let end = RawStreamEnd(conduit: conduit)
        try await conduit.eventLoop.submit { conduit.attach(end) }.get()
        conduit.send(hello.propertyList)
        return end
    }

    /// Stops or resumes reading what the agent sends; returns once the connection's loop has applied it.
    func reading(_ on: Bool) async throws {
        conduit.setReading(on)
        try await conduit.eventLoop.submit {}.get()
    }

    /// Closes the connection; returns once it is closed.
    func close() async {
        conduit.close()
        try? await conduit.closeFuture.get()
    }

    func send(_ bytes: [UInt8]) async throws {
        try await send(ByteBuffer(bytes: bytes))
    }

    func send(_ bytes: ByteBuffer) async throws {
        await waitForAnswer()
        var rest = bytes
        while rest.readableBytes > 0, let part = rest.readSlice(length: min(Frame.maximumData, rest.readableBytes)) {
            try await conduit.write(OutboundFrame.data(stream: 0, opener: false, part)).get()
        }
    }

    /// `count` bytes of a pattern that differs with `seed`, made with memcpy, not byte by byte: the tests run in
    /// debug builds beside the whole suite, and a per-byte loop over megabytes starves the others' tasks.
    static func pattern(_ count: Int, seed: UInt8) -> ByteBuffer {
        let unit = (0..<251).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(count)
        while buffer.readableBytes + unit.count <= count { buffer.writeBytes(unit) }
        buffer.writeBytes(unit.prefix(count - buffer.readableBytes))
        return buffer
    }

    func finish() async throws {
        await waitForAnswer()
        conduit.send(IPCMessage.endOfStream.propertyList)
    }
}

// Serialized: each test runs two agents, and some move tens of megabytes; side by side with the rest of the suite on
// two cores they starve other tests' agents of their event loops.
//
// The suite that keeps the real path (issue 26 item 3): its agents talk TLS over loopback TCP and their apps' streams
// go over the Unix app socket, because what it tests is the agents' splice between those sockets (the kernel's
// buffers on both app sockets, autoRead on them, a TLS session that stops being read in deadPeer). The test of
// backpressure alone (slowReader) runs in memory, where a held writer is shown by the loops going idle rather than a
// window of real time; the library's end is tested both ways in StreamEndTests, and with two agents in memory in
// ContinuationStreamsTests.
@Suite("Continuation streams through two agents, at the app-socket protocol (F1–F3)", .serialized)
struct StreamSpliceTests {
    static let info = """
        <plist version="1.0"><dict>
        <key>CFBundleIdentifier</key><string>com.example.Notes</string>
        <key>CFBundleExecutable</key><string>notes</string>
        <key>BatonTeamIdentifier</key><string>NOTESTEAM1</string>
        <key>NSUserActivityTypes</key><array><string>com.example.notes.edit</string></array>
        </dict></plist>
        """
    static let other = """
        <plist version="1.0"><dict>
        <key>CFBundleIdentifier</key><string>com.example.Other</string>
        <key>CFBundleExecutable</key><string>other</string>
        <key>BatonTeamIdentifier</key><string>NOTESTEAM1</string>
        <key>NSUserActivityTypes</key><array><string>com.example.other.view</string></array>
        </dict></plist>
        """

    /// Two devices; the laptop's app offers an activity with streams (or not) and the desktop's app continues it.
    /// Returns the devices, both apps' main connections and the continuation number on the desktop. `streamRelease`
    /// sets the agents' bound on an ended stream's app end (``AgentConfiguration/streamRelease``).
    static func continued(streams: Bool, streamRelease: Double? = nil) async throws -> (LocalDevices, AgentClient, AgentClient, UInt64) {
        // A generous save deadline: these tests are about streams, and beside the whole suite on two cores the app's
        // answer can take longer than the usual second.
        let devices = try await LocalDevices.start(names: ["laptop", "desktop"], apps: try apps()) { configuration in
            configuration.saveDeadline = 10
            if let streamRelease { configuration.streamRelease = streamRelease }
        }
        let (laptop, desktop, continuation) = try await continueActivity(devices, streams: streams)
        return (devices, laptop, desktop, continuation)
    }

    /// As ``continued(streams:streamRelease:)``, with both agents wholly in memory (issue 26 item 3: sessions, apps and
    /// streams with no socket) on virtual time, which moves only by ``InMemoryDevices/advance(by:)``.
    static func continuedInMemory(streams: Bool, streamRelease: Double? = nil) async throws -> (InMemoryDevices, AgentClient, AgentClient, UInt64) {
        let world = try await InMemoryDevices.start(names: ["laptop", "desktop"], apps: try apps()) { configuration in
            if let streamRelease { configuration.streamRelease = streamRelease }
        }
        let (laptop, desktop, continuation) = try await continueActivity(world.devices, streams: streams)
        return (world, laptop, desktop, continuation)
    }

    /// The Notes and Other apps' bundles, in a folder of their own.
    static func apps() throws -> AppRegistry {
        let apps = FileManager.default.temporaryDirectory.appendingPathComponent("baton-apps-\(UUID().uuidString)")
        for (name, plist) in [("Notes", info), ("Other", other)] {
            let bundle = apps.appendingPathComponent("\(name).app")
            try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
            try Data(plist.utf8).write(to: bundle.appendingPathComponent("Info.plist"))
        }
        return AppRegistry.load(searchPaths: [apps])
    }

    /// Both apps connect; the laptop's offers an activity with streams (or not) and the desktop's continues it: the
    /// apps' main connections and the continuation number on the desktop.
    static func continueActivity(_ devices: LocalDevices, streams: Bool) async throws -> (AgentClient, AgentClient, UInt64) {
        let laptop = try await AgentClient.connect(path: devices.agents[0].socketPath, bundleIdentifier: "com.example.Notes")
        let desktop = try await AgentClient.connect(path: devices.agents[1].socketPath, bundleIdentifier: "com.example.Notes")
        laptop.send(.becomeCurrent(activity: 1, ActivityNotice(activityType: "com.example.notes.edit", title: "Draft", supportsStreams: streams)))
        for _ in 0..<1000 where await devices.agents[1].nearbyItems().isEmpty {
            try await Task.sleep(for: .milliseconds(2))
        }
        // The laptop's app answers the save.
        let answering = Task {
            for await message in laptop.messages {
                if case .save(let request, _, _) = message {
                    var payload = try ActivityPayload(activityType: "com.example.notes.edit")
                    payload.supportsContinuationStreams = streams
                    laptop.send(.saved(request: request, payload: try payload.encoded()))
                    return
                }
            }
        }
        let outcome = await devices.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil, "\(outcome.message)")
        answering.cancel()
        var continuation: UInt64?
        for await message in desktop.messages {
            if case .deliver(let number, _) = message {
                continuation = number
                break
            }
            if case .failed(_, _, let reason, let text) = message {
                Issue.record("the continuation failed: \(text) [\(reason)]")
                break
            }
        }
        return (laptop, desktop, try #require(continuation))
    }

    /// Once every event loop of the process has run what it had queued, twice over (a task one runs may queue one on
    /// another): in memory, with no socket and no timer due, nothing moves after that unless a test makes it.
    static func loopsIdle() async throws {
        for _ in 0..<2 {
            for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() { try await loop.submit {}.get() }
        }
    }

    static func collect(_ end: RawStreamEnd) async -> (bytes: ByteBuffer, first: IPCMessage?, last: IPCMessage?) {
        var bytes = ByteBuffer()
        var first: IPCMessage?
        var last: IPCMessage?
        for await event in end.events {
            switch event {
            case .message(let message):
                if first == nil { first = message } else { last = message }
                if case .endOfStream = message { return (bytes, first, last) }
                if case .resetStream = message { return (bytes, first, last) }
                if case .refused = message { return (bytes, first, last) }
            case .data(var buffer):
                bytes.writeBuffer(&buffer)
            case .closed:
                return (bytes, first, last)
            }
        }
        return (bytes, first, last)
    }

    @Test("F2, F3: what one app writes the other reads, both ways, checksummed; eof half-closes each way")
    func bothWays() async throws {
        let (devices, laptop, _, continuation) = try await Self.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let opening = Task {
            try await RawStreamEnd.connect(devices.agents[1].socketPath, hello: .openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: continuation))
        }
        var token: Data?
        for await message in laptop.messages {
            if case .incomingStream(let activity, let announced) = message {
                #expect(activity == 1)
                token = announced
                break
            }
        }
        let accepted = try await RawStreamEnd.connect(
            devices.agents[0].socketPath,
            hello: .acceptStream(bundleIdentifier: "com.example.Notes", version: 1, token: try #require(token))
        )
        let opened = try await opening.value
        let up = RawStreamEnd.pattern(3_000_000, seed: 7)
        let down = RawStreamEnd.pattern(1_000_000, seed: 3)
        async let atLaptop = Self.collect(accepted)
        async let atDesktop = Self.collect(opened)
        try await opened.send(up)
        try await opened.finish()
        try await accepted.send(down)
        try await accepted.finish()
        let (laptopGot, desktopGot) = await (atLaptop, atDesktop)
        #expect(laptopGot.first.map { if case .welcome = $0 { true } else { false } } == true)
        #expect(desktopGot.first.map { if case .welcome = $0 { true } else { false } } == true)
        #expect(laptopGot.bytes == up)
        #expect(desktopGot.bytes == down)
        #expect(laptopGot.last == .endOfStream && desktopGot.last == .endOfStream)
    }

    @Test("F1: a stream for an activity without supportsContinuationStreams is refused noStreams")
    func noStreams() async throws {
        let (devices, _, _, continuation) = try await Self.continued(streams: false)
        defer { Task { await devices.shutdown() } }
        let end = try await RawStreamEnd.connect(devices.agents[1].socketPath, hello: .openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: continuation))
        let got = await Self.collect(end)
        guard case .refused(let code, _) = got.first else {
            Issue.record("expected a refusal, got \(String(describing: got.first))")
            return
        }
        #expect(code == .stream(.noStreams))
    }

    @Test("F1: a stream for a continuation that was not delivered to this app is refused notContinued")
    func notContinued() async throws {
        let (devices, _, _, continuation) = try await Self.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let end = try await RawStreamEnd.connect(devices.agents[1].socketPath, hello: .openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: continuation + 100))
        let got = await Self.collect(end)
        guard case .refused(let code, _) = got.first else {
            Issue.record("expected a refusal, got \(String(describing: got.first))")
            return
        }
        #expect(code == .stream(.notContinued))
    }

    /// Opens a stream from the desktop's app to the laptop's, the laptop's app taking it: (desktop end, laptop end).
    static func openPair(_ devices: LocalDevices, laptop: AgentClient, continuation: UInt64) async throws -> (RawStreamEnd, RawStreamEnd) {
        let opening = Task {
            try await RawStreamEnd.connect(devices.agents[1].socketPath, hello: .openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: continuation))
        }
        var token: Data?
        for await message in laptop.messages {
            if case .incomingStream(_, let announced) = message {
                token = announced
                break
            }
        }
        let accepted = try await RawStreamEnd.connect(
            devices.agents[0].socketPath,
            hello: .acceptStream(bundleIdentifier: "com.example.Notes", version: 1, token: try #require(token))
        )
        return (try await opening.value, accepted)
    }

    /// The first message an end receives (its welcome, or why not).
    static func first(_ end: RawStreamEnd) async -> IPCMessage? {
        for await event in end.events {
            if case .message(let message) = event { return message }
            if case .closed = event { return nil }
        }
        return nil
    }

    /// How the end's stream ended: the reset's reason, "eof", or "closed".
    static func ending(_ end: RawStreamEnd) async -> String {
        for await event in end.events {
            switch event {
            case .message(.resetStream(let reason, _)): return reason
            case .message(.endOfStream): return "eof"
            case .closed: return "closed"
            default: continue
            }
        }
        return "closed"
    }

    @Test("F3: a reader that does not read holds the writer back (bounded buffering), then gets every byte")
    func slowReader() async throws {
        // In memory: a write there completes once the other end took it, so a held writer stays held, which the test
        // sees once the loops are idle (on sockets it had to watch a window of real time).
        let (world, laptop, _, continuation) = try await Self.continuedInMemory(streams: true)
        let devices = world.devices
        defer { Task { await world.shutdown() } }
        let (desktopEnd, laptopEnd) = try await Self.openPair(devices, laptop: laptop, continuation: continuation)
        #expect(await Self.first(desktopEnd) != nil)
        // The laptop's app reads nothing yet: its events are not consumed, but its connection is (frames are taken
        // into the stream), so stop its reads outright.
        try await laptopEnd.reading(false)
        let total = 32 << 20
        let written = NIOLockedValueBox(0)
        let writer = Task {
            let chunk = ByteBuffer(repeating: 0x5A, count: 64 << 10)
            for _ in 0..<(total / chunk.readableBytes) {
                try await desktopEnd.send(chunk)
                written.withLockedValue { $0 += chunk.readableBytes }
            }
            try await desktopEnd.finish()
        }
        // Until the agents say the stream stalled: the laptop holds a whole window for its app, the desktop has
        // stopped reading its app (or the writer got everything out, which the check below catches).
        #expect(try await StreamReleaseTests.eventually {
            let receiving = StreamReleaseTests.splices(devices.agents[0], with: devices.agents[1])
            let sending = StreamReleaseTests.splices(devices.agents[1], with: devices.agents[0])
            let full = receiving.count == 1 && receiving.allSatisfy { $0.state.withLockedValue { $0.flow?.receiveAllowance == 0 } }
            let holding = sending.count == 1 && sending.allSatisfy { !$0.state.withLockedValue(\.reading) }
            return written.withLockedValue { $0 } >= 16 << 20 || (full && holding)
        }, "the stream never stalled")
        let stalled = written.withLockedValue { $0 }
        // Two 512 KiB windows' worth of agent buffering plus the four socket buffers on the way: far below 64 MiB.
        #expect(stalled < 16 << 20, "the writer got \(stalled) bytes out while nobody read")
        // Every loop has run what it had: whatever could still move has moved, and the writer is held.
        try await Self.loopsIdle()
        #expect(written.withLockedValue { $0 } - stalled < 1 << 20, "the writer kept going while nobody read")
        try await laptopEnd.reading(true)
        let got = await Self.collect(laptopEnd)
        try await writer.value
        #expect(got.bytes.readableBytes == total)
        #expect(got.last == .endOfStream)
    }

    @Test("F3: several streams at once each carry their own bytes; past 8 for one app, tooManyStreams")
    func manyStreams() async throws {
        let (devices, laptop, _, continuation) = try await Self.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        var pairs: [(RawStreamEnd, RawStreamEnd)] = []
        for _ in 0..<StreamLimits.perApp {
            pairs.append(try await Self.openPair(devices, laptop: laptop, continuation: continuation))
        }
        for (desktopEnd, _) in pairs { #expect(await Self.first(desktopEnd).map { if case .welcome = $0 { true } else { false } } == true) }
        let refused = try await RawStreamEnd.connect(
            devices.agents[1].socketPath,
            hello: .openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: continuation)
        )
        let answer = await Self.first(refused)
        guard case .refused(let code, _) = answer else {
            Issue.record("expected tooManyStreams, got \(String(describing: answer))")
            return
        }
        #expect(code == .stream(.tooManyStreams))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, (desktopEnd, laptopEnd)) in pairs.enumerated() {
                group.addTask {
                    let bytes = RawStreamEnd.pattern(300_000 + index, seed: UInt8(index))
                    async let got = Self.collect(laptopEnd)
                    try await desktopEnd.send(bytes)
                    try await desktopEnd.finish()
                    #expect(await got.bytes == bytes)
                }
            }
            try await group.waitForAll()
        }
    }

    @Test("F3: the originating app killed mid-stream ends the continuing app's stream with appGone, at once")
    func originAppGone() async throws {
        let (devices, laptop, _, continuation) = try await Self.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let (desktopEnd, laptopEnd) = try await Self.openPair(devices, laptop: laptop, continuation: continuation)
        #expect(await Self.first(desktopEnd) != nil)
        try await desktopEnd.send(ByteBuffer(repeating: 1, count: 100_000))
        await laptopEnd.close()
        #expect(await Self.ending(desktopEnd) == "appGone")
    }

    @Test("F3: the originating agent gone mid-stream ends the continuing app's stream with peerGone, and no stream outlives it")
    func originAgentGone() async throws {
        let (devices, laptop, _, continuation) = try await Self.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let (desktopEnd, laptopEnd) = try await Self.openPair(devices, laptop: laptop, continuation: continuation)
        #expect(await Self.first(desktopEnd) != nil)
        #expect(await Self.first(laptopEnd) != nil)
        let started = ContinuousClock.now
        await devices.shutdown(devices.agents[0])
        #expect(await Self.ending(desktopEnd) == "peerGone")
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(await Self.ending(laptopEnd) != "eof")
    }

    @Test("F1: an app other than the one the activity was continued into is refused notContinued")
    func otherApp() async throws {
        let (devices, _, _, continuation) = try await Self.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let end = try await RawStreamEnd.connect(devices.agents[1].socketPath, hello: .openStream(bundleIdentifier: "com.example.Other", version: 1, continuation: continuation))
        guard case .refused(let code, _) = await Self.first(end) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(code == .stream(.notContinued))
    }

    @Test("F1: an originating app that declines gives the continuing app noStreams")
    func declined() async throws {
        let (devices, laptop, _, continuation) = try await Self.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let opening = Task {
            try await RawStreamEnd.connect(devices.agents[1].socketPath, hello: .openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: continuation))
        }
        for await message in laptop.messages {
            if case .incomingStream(_, let token) = message {
                laptop.send(.declineStream(token: token, message: "no delegate for streams"))
                break
            }
        }
        guard case .refused(let code, let text) = await Self.first(try await opening.value) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(code == .stream(.noStreams))
        #expect(text.contains("no delegate"))
    }

    @Test("F3: a peer that stops answering (its session no longer read) ends the stream with peerGone within seconds, not a hang")
    func deadPeer() async throws {
        let (devices, laptop, _, continuation) = try await Self.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let (desktopEnd, laptopEnd) = try await Self.openPair(devices, laptop: laptop, continuation: continuation)
        #expect(await Self.first(desktopEnd) != nil)
        #expect(await Self.first(laptopEnd) != nil)
        // The laptop's agent freezes as far as the desktop can tell: it reads nothing more from the session (the
        // kernel still acknowledges, as for a hung process or a host gone from the network mid-stream).
        let frozen = try #require(devices.agents[0].links.existing(devices.agents[1].identity.id))
        let socket = try #require(frozen.conduit as? ChannelConduit, "the link runs over a socket")
        try await socket.channel.setOption(ChannelOptions.autoRead, value: false).get()
        let started = ContinuousClock.now
        #expect(await Self.ending(desktopEnd) == "peerGone")
        let waited = ContinuousClock.now - started
        #expect(waited < .seconds(8), "ended after \(waited)")
    }

    @Test("F3: an app that writes, ends its side and closes its connection at once still delivers every byte (request, then reply)")
    func replyThenClose() async throws {
        let (devices, laptop, _, continuation) = try await Self.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let (desktopEnd, laptopEnd) = try await Self.openPair(devices, laptop: laptop, continuation: continuation)
        async let atDesktop = Self.collect(desktopEnd)
        try await desktopEnd.send(ByteBuffer(string: "the photo, please"))
        try await desktopEnd.finish()
        let request = await Self.collect(laptopEnd)
        #expect(request.bytes == ByteBuffer(string: "the photo, please"), "\(String(describing: request.first)) \(String(describing: request.last))")
        let reply = RawStreamEnd.pattern(3_000_000, seed: 9)
        try await laptopEnd.send(reply)
        try await laptopEnd.finish()
        await laptopEnd.close()
        let got = await atDesktop
        #expect(got.bytes == reply)
        #expect(got.last == .endOfStream)
    }
}
