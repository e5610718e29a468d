@testable import BatonAgent
import BatonClient
import BatonCore
import BatonProtocol
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// What the agent's connection hears from a bus app's stream conduit: the app's bytes, its `eof`, the close.
final class RecordingStreamSink: MessageSink, Sendable {
    enum Event: Sendable, Equatable {
        case data(ByteBuffer)
        case message(IPCMessage)
        case malformed
        case closed
    }

    let events: AsyncStream<Event>
    let continuation: AsyncStream<Event>.Continuation
    /// Every event so far, for checks that nothing came.
    let seen = NIOLockedValueBox<[Event]>([])

    init() {
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    private func record(_ event: Event) {
        seen.withLockedValue { $0.append(event) }
        continuation.yield(event)
    }

    func received(_ plist: PropertyList) {
        if let message = try? IPCMessage(plist) { record(.message(message)) }
    }

    func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool {
        record(.data(bytes))
        return true
    }

    func malformed(_ error: Error) { record(.malformed) }

    func closed() {
        record(.closed)
        continuation.finish()
    }

    /// The bytes that came until `eof` or the close, and what ended them (`nil` if the stream of events ran out).
    func collect() async -> (bytes: ByteBuffer, end: Event?) {
        var bytes = ByteBuffer()
        for await event in events {
            switch event {
            case .data(var buffer): bytes.writeBuffer(&buffer)
            case .message(.endOfStream), .closed, .malformed, .message: return (bytes, event)
            }
        }
        return (bytes, nil)
    }

    /// The next event that is not data.
    func nextSignal() async -> Event? {
        for await event in events {
            if case .data = event { continue }
            return event
        }
        return nil
    }
}

/// The app's side of the pipes, as a program would use them: blocking reads and writes, each on a thread of its own
/// (never on the test's concurrency pool, which a blocked read would starve).
enum AppPipeEnd {
    /// Runs `body` on a thread of its own.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { waiter in
            Thread.detachNewThread { waiter.resume(returning: body()) }
        }
    }

    /// Reads `descriptor` to its end of file.
    static func readToEnd(_ descriptor: Int32) async -> [UInt8] {
        await blocking {
            var all: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    all.append(contentsOf: buffer[0..<count])
                } else if count == 0 || errno != EINTR {
                    return all
                }
            }
        }
    }

    /// Writes all of `bytes`; false when the pipe has no reader any more (EPIPE).
    static func write(_ descriptor: Int32, _ bytes: [UInt8]) async -> Bool {
        await blocking {
            var offset = 0
            while offset < bytes.count {
                let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
                if count > 0 {
                    offset += count
                } else if errno != EINTR {
                    return false
                }
            }
            return true
        }
    }

    /// Writes without blocking until the pipe is full: how many bytes it took.
    static func fill(_ descriptor: Int32) -> Int {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(descriptor, F_SETFL, flags) }
        let chunk = [UInt8](repeating: 0x5a, count: 4_096)
        var total = 0
        while true {
            let count = chunk.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return total }
            total += count
        }
    }
}

// Serialized: some tests move megabytes through pipes on two cores shared with the rest of the suite.
@Suite("A bus app's continuation stream as two pipes (issue 28 item 1; F2, F3)", .serialized)
struct DBusStreamConduitTests {
    static let welcome = IPCMessage.welcome(device: "d", deviceName: "desk")

    /// A conduit over fresh pipes on an agent-like loop, a recording sink attached; the app's two ends.
    static func make() async throws -> (DBusStreamConduit, RecordingStreamSink, input: Int32, output: Int32) {
        let pipes = try DBusStreamPipes()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let credentials = PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid())
        let conduit = try await DBusStreamConduit.make(on: loop, pipes: pipes, credentials: credentials).get()
        let sink = RecordingStreamSink()
        try await loop.submit { conduit.attach(sink) }.get()
        return (conduit, sink, pipes.appInput, pipes.appOutput)
    }

    /// The agent says `message` on the stream, as the splice does.
    @discardableResult
    static func say(_ message: IPCMessage, on conduit: DBusStreamConduit) async throws -> EventLoopFuture<Void> {
        let bytes = try BinaryPropertyListEncoder.encode(message.propertyList)
        return conduit.write(.message(ByteBuffer(bytes: bytes)))
    }

    /// Writes `bytes` towards the app as the splice does: data frames of at most 256 KiB.
    static func send(_ bytes: ByteBuffer, on conduit: DBusStreamConduit) -> [EventLoopFuture<Void>] {
        var rest = bytes
        var writes: [EventLoopFuture<Void>] = []
        while rest.readableBytes > 0, let part = rest.readSlice(length: min(Frame.maximumData, rest.readableBytes)) {
            writes.append(conduit.write(.data(stream: 0, opener: false, part)))
        }
        return writes
    }

    /// Once the conduit's loop has run what it had queued, twice (a task may queue another).
    static func settle(_ conduit: DBusStreamConduit) async throws {
        for _ in 0..<3 { try await conduit.eventLoop.submit {}.get() }
    }

    @Test("F3: a megabyte each way through the pipes, checksummed; each side's half-close leaves the other direction open")
    func bothWays() async throws {
        let (conduit, sink, input, output) = try await Self.make()
        defer {
            close(input)
            conduit.close()
        }
        try await Self.say(Self.welcome, on: conduit)
        let up = RawStreamEnd.pattern(1_000_000, seed: 5)
        let down = RawStreamEnd.pattern(1_000_000, seed: 9)
        // The app writes its megabyte and closes its output: the agent hears every byte, then eof.
        #expect(await AppPipeEnd.write(output, Array(up.readableBytesView)))
        close(output)
        let (all, end) = await sink.collect()
        #expect(all == up, "the agent read \(all.readableBytes) bytes of 1,000,000, not the same")
        #expect(end == .message(.endOfStream))
        // The other direction goes on after the app's eof; the agent's eof is the app's end of file.
        async let read = AppPipeEnd.readToEnd(input)
        let writes = Self.send(down, on: conduit)
        try await Self.say(.endOfStream, on: conduit).get()
        let bytes = await read
        #expect(bytes.count == 1_000_000)
        #expect(bytes == Array(down.readableBytesView))
        for write in writes { try await write.get() }
        // Both directions ended: the pipes close, and the owner hears it after the app's eof.
        #expect(await sink.nextSignal() == .closed)
        #expect(sink.seen.withLockedValue { $0.filter { if case .data = $0 { false } else { true } } } == [.message(.endOfStream), .closed])
    }

    @Test("F3: the app's eof, then the agent's: the agent's half-close first, then the app still writes")
    func agentEndsFirst() async throws {
        let (conduit, sink, input, output) = try await Self.make()
        defer { conduit.close() }
        try await Self.say(Self.welcome, on: conduit)
        _ = Self.send(ByteBuffer(string: "from the other device"), on: conduit)
        try await Self.say(.endOfStream, on: conduit).get()
        #expect(await AppPipeEnd.readToEnd(input) == Array("from the other device".utf8))
        close(input)
        // The app still writes after reading its end of file, and ends its side.
        #expect(await AppPipeEnd.write(output, Array("a reply".utf8)))
        close(output)
        let (bytes, end) = await sink.collect()
        #expect(String(buffer: bytes) == "a reply")
        #expect(end == .message(.endOfStream))
    }

    @Test("F3: nothing the app writes reaches the agent before the stream is open (the welcome); then all of it")
    func nothingBeforeWelcome() async throws {
        let (conduit, sink, input, output) = try await Self.make()
        defer {
            close(input)
            conduit.close()
        }
        #expect(await AppPipeEnd.write(output, Array("early".utf8)))
        close(output)
        try await Task.sleep(for: .milliseconds(50))
        try await Self.settle(conduit)
        #expect(sink.seen.withLockedValue { $0.isEmpty }, "the agent heard \(sink.seen.withLockedValue { $0 }) before its welcome")
        try await Self.say(Self.welcome, on: conduit)
        let (bytes, end) = await sink.collect()
        #expect(String(buffer: bytes) == "early")
        #expect(end == .message(.endOfStream))
        try await conduit.opened.get()
    }

    @Test("F3, §8 Reset: a reset reaches the app's StreamReset handler with its error name, and both pipes close")
    func reset() async throws {
        let (conduit, sink, input, output) = try await Self.make()
        defer {
            close(input)
            close(output)
        }
        let heard = NIOLockedValueBox<[DBusStreamReset]>([])
        conduit.whenReset { reset in heard.withLockedValue { $0.append(reset) } }
        try await Self.say(Self.welcome, on: conduit)
        try await Self.say(.resetStream(reason: "peerGone", message: "the other device went away"), on: conduit).get()
        try await conduit.closeFuture.get()
        #expect(heard.withLockedValue { $0 } == [DBusStreamReset(reason: "peerGone", message: "the other device went away")])
        #expect(heard.withLockedValue { $0.first?.errorName } == "org.baton.Error.PeerGone")
        // A reason another device sent is untrusted text: the error name stays a valid D-Bus name.
        #expect(DBusStreamReset(reason: "peer.gone /x", message: "").errorName == "org.baton.Error.Peergonex")
        // The app reads its end of file, and its writes find no reader.
        #expect(await AppPipeEnd.readToEnd(input).isEmpty)
        #expect(await AppPipeEnd.write(output, [1, 2, 3]) == false)
        #expect(await sink.nextSignal() == .closed)
    }

    @Test("F3: a reset before StreamReset's handler was set reaches it when it is")
    func earlyReset() async throws {
        let (conduit, _, input, output) = try await Self.make()
        defer {
            close(input)
            close(output)
        }
        try await Self.say(Self.welcome, on: conduit)
        try await Self.say(.resetStream(reason: "appGone", message: "gone"), on: conduit).get()
        let heard = NIOLockedValueBox<[String]>([])
        conduit.whenReset { reset in heard.withLockedValue { $0.append(reset.errorName) } }
        #expect(heard.withLockedValue { $0 } == ["org.baton.Error.AppGone"])
    }

    @Test("F3: an app that does not read holds the agent's writes at the pipe (bounded), then gets every byte")
    func readerThatDoesNotRead() async throws {
        let (conduit, _, input, output) = try await Self.make()
        defer {
            close(output)
            conduit.close()
        }
        try await Self.say(Self.welcome, on: conduit)
        // One window (what the splice ever has in flight to an app), the app not reading.
        let window = RawStreamEnd.pattern(StreamFlow.defaultWindow, seed: 1)
        let writes = Self.send(window, on: conduit)
        let done = NIOLockedValueBox(0)
        for write in writes { write.whenSuccess { done.withLockedValue { $0 += 1 } } }
        try await Task.sleep(for: .milliseconds(100))
        try await Self.settle(conduit)
        // A pipe holds 64 KiB: the writes past it wait, their bytes in the agent's queue, not lost and not more.
        #expect(done.withLockedValue { $0 } < writes.count, "every write completed though the app read nothing")
        let pending = try await conduit.channel.getOption(ChannelOptions.bufferedWritableBytes).get()
        #expect(pending >= StreamFlow.defaultWindow - 65_536 && pending <= StreamFlow.defaultWindow)
        // Two windows queued make the conduit unwritable: the agent's `send` then closes rather than piling up.
        #expect(conduit.isWritable)
        let more = Self.send(RawStreamEnd.pattern(2 * StreamFlow.defaultWindow, seed: 2), on: conduit)
        try await Self.settle(conduit)
        #expect(!conduit.isWritable)
        // The app reads: every byte arrives, in order.
        async let read = AppPipeEnd.readToEnd(input)
        for write in writes + more { try await write.get() }
        try await Self.say(.endOfStream, on: conduit).get()
        let bytes = await read
        #expect(bytes.count == 3 * StreamFlow.defaultWindow)
        #expect(Array(bytes.prefix(StreamFlow.defaultWindow)) == Array(window.readableBytesView))
        #expect(conduit.isWritable)
    }

    @Test("F3: while the agent does not read (no credit), the app's writes stop at one pipe's capacity; then they go on")
    func writerHeldBack() async throws {
        let (conduit, sink, input, output) = try await Self.make()
        defer {
            close(input)
            close(output)
            conduit.close()
        }
        try await Self.say(Self.welcome, on: conduit)
        conduit.setReading(false)
        try await Self.settle(conduit)
        let taken = AppPipeEnd.fill(output)
        try await Task.sleep(for: .milliseconds(50))
        try await Self.settle(conduit)
        // The pipe took what it holds (64 KiB by default) and the app's next write would block; the agent took nothing.
        #expect(taken > 0 && taken <= 1 << 20)
        #expect(sink.seen.withLockedValue { $0.isEmpty })
        conduit.setReading(true)
        var got = 0
        for await event in sink.events {
            if case .data(let bytes) = event { got += bytes.readableBytes }
            if got == taken { break }
        }
        #expect(got == taken)
    }

    @Test("F3: an app that closes both its ends has gone: the agent hears its eof, then the close (the app-gone path)")
    func appClosesBoth() async throws {
        let (conduit, sink, input, output) = try await Self.make()
        try await Self.say(Self.welcome, on: conduit)
        close(input)
        close(output)
        #expect(await sink.nextSignal() == .message(.endOfStream))
        #expect(await sink.nextSignal() == .closed)
        #expect(!conduit.isActive)
    }

    @Test("F3: an app that closes its input while the agent writes has gone: the agent hears the close")
    func appStopsReading() async throws {
        let (conduit, sink, input, output) = try await Self.make()
        defer { close(output) }
        try await Self.say(Self.welcome, on: conduit)
        close(input)
        let writes = Self.send(ByteBuffer(repeating: 7, count: 10_000), on: conduit)
        let signal = await sink.nextSignal()
        #expect(signal == .closed, "\(String(describing: signal)) \(sink.seen.withLockedValue { $0 })")
        await #expect(throws: (any Error).self) { try await writes[0].get() }
    }

    @Test("F2: a refusal fails the open with its code, as the D-Bus error §11 names; the pipes close")
    func refused() async throws {
        let (conduit, _, input, output) = try await Self.make()
        defer {
            close(input)
            close(output)
        }
        let connection = IPCConnection(conduit: conduit, credentials: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()), handler: NoIPCHandler())
        try await conduit.eventLoop.submit { conduit.attach(connection) }.get()
        connection.refuse(.stream(.notContinued), "no such continuation")
        await #expect(throws: DBusStreamRefusal(.stream(.notContinued), "no such continuation")) { try await conduit.opened.get() }
        try await conduit.closeFuture.get()
        #expect(DBusStreamRefusal(.stream(.notContinued), "").errorName == "org.baton.Error.NotContinued")
        #expect(DBusStreamRefusal(.notPermitted, "").errorName == "org.freedesktop.DBus.Error.AccessDenied")
        #expect(await AppPipeEnd.readToEnd(input).isEmpty)
    }
}

/// An IPC handler that does nothing: the refusal test's connection needs one.
final class NoIPCHandler: IPCHandler {
    func ipcReceived(_ message: IPCMessage, on connection: IPCConnection) {}
    func ipcClosed(_ connection: IPCConnection) {}
}
