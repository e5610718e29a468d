@testable import Baton
import BatonClient
import BatonCore
import BatonProtocol
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// An agent's app socket that speaks only the stream protocol, scripted by the test (docs/PROTOCOL.md §7–8): each
/// connection the library makes shows up as a ``Connection`` whose frames the test reads and answers.
final class FakeStreamAgent: Sendable {
    let path: String
    let server: Channel
    let connections: AsyncStream<Connection>
    private let accepted: AsyncStream<Connection>.Continuation

    /// One accepted connection: what it received, in order, and ways to answer.
    final class Connection: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = InboundFrame

        enum Event: Sendable, Equatable {
            case message(IPCMessage)
            case data(ByteBuffer)
            case closed
        }

        let events: AsyncStream<Event>
        private let sink: AsyncStream<Event>.Continuation
        let channelBox = NIOLockedValueBox<Channel?>(nil)
        var channel: Channel { channelBox.withLockedValue { $0 }! }

        init() {
            (events, sink) = AsyncStream.makeStream(of: Event.self)
        }

        func handlerAdded(context: ChannelHandlerContext) {
            channelBox.withLockedValue { $0 = context.channel }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .message(let body):
                if let plist = try? BinaryPropertyListDecoder.decode(Data(body.readableBytesView)), let message = try? IPCMessage(plist) {
                    sink.yield(.message(message))
                }
            case .data(_, _, let bytes):
                sink.yield(.data(bytes))
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            sink.yield(.closed)
            sink.finish()
        }

        func send(_ message: IPCMessage) {
            try? channel.writeMessage(message.propertyList)
        }

        /// Writes `bytes` as data frames; returns once the socket took them all.
        func send(_ bytes: [UInt8]) async throws {
            var offset = 0
            while offset < bytes.count {
                let count = min(Frame.maximumData, bytes.count - offset)
                try await channel.writeAndFlush(OutboundFrame.data(stream: 7, opener: true, ByteBuffer(bytes: bytes[offset..<offset + count])))
                offset += count
            }
        }

        /// Stops or resumes reading the app (its writes then wait in the kernel, then in the library).
        func reading(_ on: Bool) async throws {
            try await channel.setOption(ChannelOptions.autoRead, value: on).get()
            if on { channel.read() }
        }

        func close() {
            channel.close(promise: nil)
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

    init() async throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("fake-\(UInt32.random(in: 0...UInt32.max)).sock").path
        let (connections, accepted) = AsyncStream.makeStream(of: Connection.self)
        self.connections = connections
        self.accepted = accepted
        server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = Connection()
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder(allowsData: true)))
                    try channel.pipeline.syncOperations.addHandler(FrameEncoder())
                    try channel.pipeline.syncOperations.addHandler(connection)
                    accepted.yield(connection)
                }
            }
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true)
            .get()
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
        server.close(promise: nil)
        try? FileManager.default.removeItem(atPath: path)
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
