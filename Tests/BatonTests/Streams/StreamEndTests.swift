@testable import Baton
import BatonProtocol
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// The library's end of a continuation stream against a scripted agent (F2, F3): the hello, the answers, bytes both
/// ways, half-close, reset, backpressure. The end-to-end tests with two agents are in ContinuationStreamsTests.
///
/// Each test runs in memory (issue 26 item 3: the conduit an agent on the memory transport gives) and on a real Unix
/// socket: the library's end has one code path over either, and only the socket has the kernel's buffers, NIO's reads
/// and autoRead under it, which the backpressure tests must hold against too. No test waits a fixed time: each waits
/// for what it is about (a reader parked, reading held back at the high-water mark).
@Suite("A continuation stream's app end against a scripted agent (F2, F3)", .serialized)
struct StreamEndTests {
    static let transports: [FakeStreamAgent.Transport] = [.memory, .socket]

    /// Waits (polling, up to 30 s of real time: the suite may run beside others) until `condition` holds.
    static func until(_ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        return condition()
    }

    @Test("F2: the stream's own connection says the hello it was given, and opens on the welcome", arguments: transports)
    func hello(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        async let opened = StreamEnd.open(path: agent.path, hello: .openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: 42))
        let connection = try #require(await agent.next())
        #expect(await connection.hello() == .openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: 42))
        connection.send(.welcome(device: "d", deviceName: "laptop"))
        let end = try await opened
        #expect(end.conduit.isActive)
        end.close()
    }

    @Test("F2: a refusal throws its code; no answer within the timeout throws timedOut; a close before it agentGone", arguments: transports)
    func refusals(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let path = agent.path
        func open(timeout: TimeAmount = StreamEnd.openTimeout) -> Task<StreamEnd, any Error> {
            Task { try await StreamEnd.open(path: path, hello: .openStream(bundleIdentifier: "b", version: 1, continuation: 1), timeout: timeout) }
        }
        for (code, expected) in [("noStreams", ContinuationError.Code.noStreams), ("tooManyStreams", .tooManyStreams), ("unknownApp", .other)] {
            let opened = open()
            let connection = try #require(await agent.next())
            _ = await connection.hello()
            connection.send(.refused(code: IPCRefusal(rawValue: code), message: "no"))
            await #expect { try await opened.value } throws: { ($0 as? ContinuationError)?.code == expected }
        }
        let silent = open(timeout: .milliseconds(200))
        let ignored = try #require(await agent.next())
        await #expect { try await silent.value } throws: { ($0 as? ContinuationError)?.code == .timedOut }
        #expect(await ignored.collect().ended == false, "the library closed the connection it gave up on")
        let dropped = open()
        try #require(await agent.next()).close()
        await #expect { try await dropped.value } throws: { ($0 as? ContinuationError)?.code == .agentGone }
        await #expect { try await StreamEnd.open(path: agent.path + ".none", hello: .openStream(bundleIdentifier: "b", version: 1, continuation: 1)) } throws: {
            ($0 as? ContinuationError)?.code == .agentGone
        }
    }

    @Test("F3: bytes both ways, checksummed, in frames of at most 256 KiB; finish is eof; the reader ends on the agent's eof", arguments: transports, [1, 100_000, 2_000_000])
    func bothWays(transport: FakeStreamAgent.Transport, size: Int) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        let streams = ContinuationStreams(end)
        let up = patterned(size, seed: 1)
        let down = patterned(size, seed: 2)
        async let arrived = connection.collect()
        try await streams.output.write(Data(up))
        try await streams.output.finish()
        let (bytes, ended) = await arrived
        #expect(bytes.count == up.count && checksum(bytes) == checksum(up) && ended)
        // Sent while the library reads: it holds at most its high-water mark, so the agent's writes wait for it.
        let sending = Task {
            try await connection.send(down)
            connection.send(.endOfStream)
        }
        var read = Data()
        var chunks = 0
        for try await chunk in streams.input {
            read += chunk
            chunks += 1
        }
        try await sending.value
        #expect(read.count == down.count && checksum(read) == checksum(down))
        #expect(chunks <= max(1, size / (256 << 10) + 1) * 2, "chunks are as large as what waits (\(chunks))")
    }

    @Test("F3 half-close: a request, the writer's finish, then the reply on the same stream", arguments: transports)
    func requestReply(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        let streams = ContinuationStreams(end)
        try await streams.output.write(Data("GET /notes/1".utf8))
        try await streams.output.finish()
        let request = await connection.collect()
        #expect(String(decoding: request.bytes, as: UTF8.self) == "GET /notes/1" && request.ended)
        await #expect { try await streams.output.write(Data([1])) } throws: { ($0 as? ContinuationError)?.code == .streamClosed }
        try await connection.send(Array("Milk and eggs".utf8))
        connection.send(.endOfStream)
        let reply = try await streams.input.readAll()
        #expect(String(decoding: reply, as: UTF8.self) == "Milk and eggs")
        connection.close()  // as the agent does once both sides finished
        var iterator = streams.input.makeAsyncIterator()
        #expect(try await iterator.next() == nil, "a clean end stays clean after the close")
    }

    @Test("F3: a reset fails reader (after the bytes before it) and writer with its reason", arguments: transports)
    func reset(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        let streams = ContinuationStreams(end)
        try await connection.send([1, 2, 3])
        connection.send(.resetStream(reason: "peerGone", message: "the laptop went away"))
        connection.close()
        var iterator = streams.input.makeAsyncIterator()
        #expect(try await iterator.next() == Data([1, 2, 3]))
        await #expect { try await iterator.next() } throws: { ($0 as? ContinuationError)?.code == .peerGone }
        await #expect { try await streams.output.write(Data([1])) } throws: { ($0 as? ContinuationError)?.code == .peerGone }
    }

    @Test("F3: the agent's connection ending without eof or reset is agentGone for a waiting reader", arguments: transports)
    func agentGone(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        let streams = ContinuationStreams(end)
        let next = Task {
            var iterator = streams.input.makeAsyncIterator()
            return try await iterator.next()
        }
        #expect(try await Self.until { end.readerWaits }, "the reader never waited")
        connection.close()
        await #expect { try await next.value } throws: { ($0 as? ContinuationError)?.code == .agentGone }
    }

    @Test("F3 backpressure: a write waits while the agent does not read, and completes once it does", arguments: transports)
    func writerWaits(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        let streams = ContinuationStreams(end)
        try await connection.reading(false)
        let data = Data(patterned(4 << 20))
        let done = NIOLockedValueBoxFlag()
        let writing = Task {
            try await streams.output.write(data)
            done.set()
        }
        // Until the library has no room left (its write high-water mark), or the write returned after all.
        #expect(try await Self.until { !end.hasRoom || done.value }, "the library never filled its write buffer")
        #expect(!done.value, "4 MiB cannot fit in the sockets and the library's buffer: the write waits")
        async let arrived = connection.collect()
        try await connection.reading(true)
        try await writing.value
        try await streams.output.finish()
        let (bytes, ended) = await arrived
        #expect(bytes.count == data.count && Data(bytes) == data && ended)
    }

    @Test("F3 backpressure: a reader that does not read stops the connection being read, and loses nothing", arguments: transports)
    func readerHoldsBack(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        let streams = ContinuationStreams(end)
        let data = patterned(8 << 20, seed: 5)
        let sent = NIOLockedValueBoxFlag()
        let sending = Task {
            try await connection.send(data)
            connection.send(.endOfStream)
            sent.set()
        }
        // Until the library holds its connection back at its high-water mark (1 MiB): the rest of the 8 MiB cannot
        // pass it (in memory a write waits until the library takes it; on the socket, the kernel's buffers fill).
        #expect(try await Self.until { end.readingPaused || sent.value }, "the library never stopped reading")
        #expect(!sent.value, "the library stopped reading at its high-water mark: the agent's writes wait")
        // Every loop has run what it had: nothing moves while the reader does not read.
        try await end.conduit.eventLoop.submit {}.get()
        try await connection.conduit.eventLoop.submit {}.get()
        #expect(!sent.value && end.readingPaused, "the agent's writes went on while the reader did not read")
        var read = Data()
        for try await chunk in streams.input { read += chunk }
        try await sending.value
        #expect(read.count == data.count && read == Data(data))
    }

    @Test("a reader task cancelled while it waits throws CancellationError; the stream goes on", arguments: transports)
    func cancelledRead(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        let streams = ContinuationStreams(end)
        let waiting = Task {
            var iterator = streams.input.makeAsyncIterator()
            return try await iterator.next()
        }
        #expect(try await Self.until { end.readerWaits }, "the reader never waited")
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        try await connection.send([9])
        var iterator = streams.input.makeAsyncIterator()
        #expect(try await iterator.next() == Data([9]))
    }

    @Test("close aborts: the agent sees the connection end, and reads and writes here fail streamClosed", arguments: transports)
    func close(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        let streams = ContinuationStreams(end)
        streams.close()
        #expect(await connection.collect().ended == false)
        var iterator = streams.input.makeAsyncIterator()
        await #expect { try await iterator.next() } throws: { ($0 as? ContinuationError)?.code == .streamClosed }
        await #expect { try await streams.output.write(Data([1])) } throws: { ($0 as? ContinuationError)?.code == .streamClosed }
    }

    @Test("dropping every copy of the streams closes the connection, after what was written", arguments: transports)
    func droppedCloses(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        do {
            let streams = ContinuationStreams(end)
            try await streams.output.write(Data([1, 2, 3]))
        }
        let (bytes, ended) = await connection.collect()
        #expect(bytes == [1, 2, 3] && !ended)
    }

    @Test("dropping the streams after a clean end both ways leaves the connection for the agent to close (its last bytes may still be queued)", arguments: transports)
    func droppedAfterCleanEnd(transport: FakeStreamAgent.Transport) async throws {
        let agent = try await FakeStreamAgent(transport)
        defer { agent.stop() }
        let (end, connection) = try await agent.openWelcomed()
        do {
            let streams = ContinuationStreams(end)
            connection.send(.endOfStream)
            #expect(try await streams.input.readAll().isEmpty)
            try await streams.output.finish()
        }
        var events = connection.events.makeAsyncIterator()
        #expect(await events.next() == .message(.endOfStream))
        // The streams were dropped and their last write is out: a close that dropping set off is queued on the
        // connection's loop by now, so it has run after one turn of that loop (an ordering, not a wait).
        try await end.conduit.eventLoop.submit {}.get()
        #expect(end.conduit.isActive, "still open: the agent closes it")
        connection.close()
        #expect(await events.next() == .closed)
    }
}

/// A flag set from one task and read from another.
final class NIOLockedValueBoxFlag: Sendable {
    private let box = NIOLockedValueBox(false)
    var value: Bool { box.withLockedValue { $0 } }
    func set() { box.withLockedValue { $0 = true } }
}
