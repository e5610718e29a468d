@testable import Baton
import BatonClient
import BatonCore
import BatonProtocol
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// An agent's app socket that speaks only the stream protocol, scripted by the test (docs/PROTOCOL.md §7–8): each
/// connection the library makes shows up as a ``Connection`` whose frames the test reads and answers. On a real Unix
/// socket, or listening at its path in memory (``MemoryAppSockets``, issue 26 item 3), where ``StreamEnd`` finds it
/// as it finds an agent on the memory transport.
final class FakeStreamAgent: Sendable {
    /// What the library's stream connections reach the fake over.
    enum Transport: Sendable, CustomTestStringConvertible {
        /// In memory: no socket, no kernel buffer; a write waits until the other end takes it.
        case memory
        /// A Unix socket: the kernel's buffers between the two ends, NIO's reads and autoRead.
        case socket

        var testDescription: String { self == .memory ? "in memory" : "on a Unix socket" }
    }

    let path: String
    let transport: Transport
    let server: Channel?
    let connections: AsyncStream<Connection>
    private let accepted: AsyncStream<Connection>.Continuation

    /// One accepted connection: what it received, in order, and ways to answer.
    final class Connection: MessageSink, Sendable {
        enum Event: Sendable, Equatable {
            case message(IPCMessage)
            case data(ByteBuffer)
            case closed
        }

        let events: AsyncStream<Event>
        private let sink: AsyncStream<Event>.Continuation
        let conduit: any AppConduit

        init(conduit: any AppConduit) {
            self.conduit = conduit
            (events, sink) = AsyncStream.makeStream(of: Event.self)
        }

        func received(_ plist: PropertyList) {
            if let message = try? IPCMessage(plist) { sink.yield(.message(message)) }
        }

        func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool {
            sink.yield(.data(bytes))
            return true
        }

        func malformed(_ error: Error) {}

        func closed() {
            sink.yield(.closed)
            sink.finish()
        }

        func send(_ message: IPCMessage) {
            conduit.send(message.propertyList)
        }

        /// Writes `bytes` as data frames; returns once the socket (or the library's end in memory) took them all.
        func send(_ bytes: [UInt8]) async throws {
            var offset = 0
            while offset < bytes.count {
                let count = min(Frame.maximumData, bytes.count - offset)
                try await conduit.write(OutboundFrame.data(stream: 7, opener: true, ByteBuffer(bytes: bytes[offset..<offset + count]))).get()
                offset += count
            }
        }

        /// Stops or resumes reading the app (its writes then wait in the kernel, then in the library); returns once the
        /// connection's loop has applied it.
        func reading(_ on: Bool) async throws {
            conduit.setReading(on)
            try await conduit.eventLoop.submit {}.get()
        }

        func close() {
            conduit.close()
        }

        /// Everything up to the app's eof, or the connection's end: the bytes, and whether eof came.
        func collect() async -> (bytes: [UInt8], ended: Bool) {
            var bytes: [UInt8] = []
            for await event in events {
                switch event {
                case .data(let buffer): buffer.withUnsafeReadableBytes { bytes.append(contentsOf: $0) }
                case .message(.endOfStream): return (bytes, true)
                case .message, .closed: return (bytes, false)
                }
            }
            return (bytes, false)
        }

        /// The first message: the hello.
        func hello() async -> IPCMessage? {
            for await event in events {
                if case .message(let message) = event { return message }
                return nil
            }
            return nil
        }
    }

    init(_ transport: Transport = .memory) async throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("fake-\(UInt32.random(in: 0...UInt32.max)).sock").path
        self.transport = transport
        let (connections, accepted) = AsyncStream.makeStream(of: Connection.self)
        self.connections = connections
        self.accepted = accepted
        switch transport {
        case .memory:
            server = nil
            let listening = MemoryAppSockets.process.listen(path: path, loop: MultiThreadedEventLoopGroup.singleton.next()) { conduit in
                let connection = Connection(conduit: conduit)
                conduit.attach(connection)
                accepted.yield(connection)
            }
            guard listening else { throw ContinuationError(.other, "someone listens at \(path) in memory already") }
        case .socket:
            server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let messages = MessageHandler()
                        let connection = Connection(conduit: ChannelAppConduit(channel, messages: messages))
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder(allowsData: true)))
                        try channel.pipeline.syncOperations.addHandler(FrameEncoder())
                        try channel.pipeline.syncOperations.addHandler(messages)
                        connection.conduit.attach(connection)
                        accepted.yield(connection)
                    }
                }
                .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true)
                .get()
        }
    }

    /// The next connection the library makes.
    func next() async -> Connection? {
        var iterator = connections.makeAsyncIterator()
        return await iterator.next()
    }

    /// Opens a stream end to this agent while it welcomes it: the library's end and the agent's connection.
    func openWelcomed() async throws -> (StreamEnd, Connection) {
        async let end = StreamEnd.open(path: path, hello: .openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: 3))
        guard let connection = await next() else { throw ContinuationError(.other, "no connection") }
        _ = await connection.hello()
        connection.send(.welcome(device: "d", deviceName: "laptop"))
        return (try await end, connection)
    }

    func stop() {
        accepted.finish()
        switch transport {
        case .memory:
            MemoryAppSockets.process.close(path: path)
        case .socket:
            server?.close(promise: nil)
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}

/// Bytes that show where they came from: a transfer that reorders, drops or repeats any is caught (the pattern repeats
/// only every 65,521 bytes, a prime, so no frame or buffer size lines up with it). Made by copying one period, not byte
/// by byte: the tests run in debug builds beside the whole suite, and per-byte loops over megabytes starve it.
func patterned(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
    let period = (0..<min(count, 65_521)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 8) &+ Int(seed)) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count)
    while bytes.count + period.count <= count { bytes.append(contentsOf: period) }
    bytes.append(contentsOf: period.prefix(count - bytes.count))
    return bytes
}

/// FNV-1a 64 of `bytes`: a checksum to compare transfers by.
func checksum(_ bytes: some ContiguousBytes) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    bytes.withUnsafeBytes { raw in
        for byte in raw { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    }
    return hash
}
