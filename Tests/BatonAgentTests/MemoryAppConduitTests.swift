@testable import BatonClient
import BatonCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A connection's owner as a conduit drives it: it tells the test, in order, what reached it.
final class OwnerRecorder: MessageSink, Sendable {
    enum Event: Sendable, Equatable {
        case message(PropertyList)
        case data(UInt64, [UInt8])
        case malformed
        case closed
    }

    let events: AsyncStream<Event>
    let told: AsyncStream<Event>.Continuation
    /// Whether data frames may come (a stream's connection, F3).
    let takesData: Bool

    init(takesData: Bool = false) {
        self.takesData = takesData
        (events, told) = AsyncStream.makeStream(of: Event.self)
    }

    func received(_ message: PropertyList) { told.yield(.message(message)) }

    func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool {
        guard takesData else { return false }
        told.yield(.data(stream, Array(bytes.readableBytesView)))
        return true
    }

    func malformed(_ error: Error) { told.yield(.malformed) }

    func closed() { told.yield(.closed) }
}

@Suite("Issue 26 item 3: an app's connection in memory behaves as the socket does")
struct MemoryAppConduitTests {
    static let loops = (MultiThreadedEventLoopGroup.singleton.next(), MultiThreadedEventLoopGroup.singleton.next())

    static func attach(_ sink: MessageSink, to conduit: MemoryAppConduit) async throws {
        try await conduit.eventLoop.submit { conduit.attach(sink) }.get()
    }

    @Test("frames sent before the owner is attached wait and come in order; the close comes after them, and both ends are closed")
    func framesWaitThenClose() async throws {
        let (app, agent) = MemoryAppConduit.pair(Self.loops.0, Self.loops.1)
        app.send(.string("hello"))
        app.send(.integer(2))
        app.close()
        #expect(!app.isActive)
        let sink = OwnerRecorder()
        try await Self.attach(sink, to: agent)
        var events = sink.events.makeAsyncIterator()
        #expect(await events.next() == .message(.string("hello")))
        #expect(await events.next() == .message(.integer(2)))
        #expect(await events.next() == .closed)
        try await agent.closeFuture.get()
        #expect(!agent.isActive)
    }

    @Test("F3: while the owner does not read, frames wait (and the close behind them); reading again delivers them in order")
    func readingPausesDelivery() async throws {
        let (app, agent) = MemoryAppConduit.pair(Self.loops.0, Self.loops.1)
        let sink = OwnerRecorder(takesData: true)
        try await Self.attach(sink, to: agent)
        agent.setReading(false)
        _ = app.write(.data(stream: 1, opener: true, ByteBuffer(bytes: [1, 2, 3])))
        app.send(.string("eof"))
        app.close()
        // Everything sent has reached the agent's loop, and none of it the owner.
        try await agent.eventLoop.submit {}.get()
        try await agent.eventLoop.submit {}.get()
        #expect(agent.isActive, "the close waits behind what was not read")
        agent.setReading(true)
        var events = sink.events.makeAsyncIterator()
        #expect(await events.next() == .data(1, [1, 2, 3]))
        #expect(await events.next() == .message(.string("eof")))
        #expect(await events.next() == .closed)
    }

    @Test("a data frame where none may come is a broken connection: the owner hears why, and both ends close (as MessageHandler)")
    func unexpectedDataCloses() async throws {
        let (app, agent) = MemoryAppConduit.pair(Self.loops.0, Self.loops.1)
        let agentSink = OwnerRecorder()
        let appSink = OwnerRecorder()
        try await Self.attach(agentSink, to: agent)
        try await Self.attach(appSink, to: app)
        let written = app.write(.data(stream: 3, opener: false, ByteBuffer(bytes: [9])))
        try await written.get()
        var events = agentSink.events.makeAsyncIterator()
        #expect(await events.next() == .malformed)
        #expect(await events.next() == .closed)
        var appEvents = appSink.events.makeAsyncIterator()
        #expect(await appEvents.next() == .closed)
        // Written after the close: fails, reaching no one.
        await #expect(throws: (any Error).self) { try await app.write(.message(ByteBuffer(bytes: [0]))).get() }
    }

    @Test("an encoded message written as a frame (the stream splice's writes) arrives as the message; the agent's end is this process")
    func encodedFrameArrives() async throws {
        let (app, agent) = MemoryAppConduit.pair(Self.loops.0, Self.loops.1)
        let sink = OwnerRecorder()
        try await Self.attach(sink, to: app)
        let bytes = try BinaryPropertyListEncoder.encode(.dictionary(["kind": .string("welcome")]))
        try await agent.write(.message(ByteBuffer(bytes: bytes))).get()
        var events = sink.events.makeAsyncIterator()
        #expect(await events.next() == .message(.dictionary(["kind": .string("welcome")])))
        #expect(try await agent.peerCredentials().get() == PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
        agent.close()
        #expect(await events.next() == .closed)
    }
}
