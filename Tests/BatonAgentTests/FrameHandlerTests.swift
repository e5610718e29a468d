@testable import BatonClient
import BatonCore
import Foundation
import NIOCore
import NIOEmbedded
import Testing

/// Collects what a ``MessageHandler`` hands on.
final class RecordingSink: MessageSink, @unchecked Sendable {
    /// One data frame as the sink got it.
    struct DataFrame: Equatable {
        var stream: UInt64
        var opener: Bool
        var bytes: ByteBuffer
    }

    // Touched only on the EmbeddedChannel's loop, which is the test's own thread.
    var messages: [PropertyList] = []
    var data: [DataFrame] = []
    /// Messages (their `t`) and data frames (`data`) in the order they came.
    var order: [String] = []
    var malformed: [Error] = []
    var closedCount = 0
    /// Whether this sink takes data frames (a stream's connection) or refuses them (everywhere else).
    let takesData: Bool

    init(takesData: Bool = false) {
        self.takesData = takesData
    }

    func received(_ message: PropertyList) {
        messages.append(message)
        order.append(message["t"]?.stringValue ?? "?")
    }

    func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool {
        guard takesData else { return false }
        data.append(DataFrame(stream: stream, opener: opener, bytes: bytes))
        order.append("data")
        return true
    }

    func malformed(_ error: Error) { malformed.append(error) }
    func closed() { closedCount += 1 }
}

/// The frame and message handlers of the app socket and of sessions, driven byte by byte on an `EmbeddedChannel`
/// (issue 11 part 2, handler tier; the hostile frames of issue 10 item 6).
@Suite("Frame and message handlers on EmbeddedChannel")
struct FrameHandlerTests {
    static func pipeline(firstFrameLimit: Int? = nil, allowsData: Bool = false, takesData: Bool = false) throws -> (EmbeddedChannel, RecordingSink) {
        let channel = EmbeddedChannel()
        let sink = RecordingSink(takesData: takesData)
        try channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(FrameDecoder(firstFrameLimit: firstFrameLimit, allowsData: allowsData))
        )
        try channel.pipeline.syncOperations.addHandler(MessageHandler(sink: sink))
        try connect(channel)
        return (channel, sink)
    }

    /// Makes `channel` active, as an accepted connection is: an EmbeddedChannel is inactive until connected, so
    /// `!isActive` would not show that a handler closed it.
    static func connect(_ channel: EmbeddedChannel) throws {
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        precondition(channel.isActive)
    }

    static func frame(_ message: PropertyList) throws -> ByteBuffer {
        let body = try BinaryPropertyListEncoder.encode(message)
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.count))
        buffer.writeBytes(body)
        return buffer
    }

    @Test("a frame arriving one byte at a time is one message; two frames in one read are two")
    func splitAndJoined() throws {
        let (channel, sink) = try Self.pipeline()
        let hello = try Self.frame(["t": "hello", "v": 1])
        for byte in hello.readableBytesView {
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
        }
        #expect(sink.messages.count == 1)
        var both = try Self.frame(["t": "a"])
        var second = try Self.frame(["t": "b"])
        both.writeBuffer(&second)
        try channel.writeInbound(both)
        #expect(sink.messages.map { $0["t"]?.stringValue } == ["hello", "a", "b"])
        _ = try channel.finish()
        #expect(sink.closedCount == 1)
    }

    @Test("issue 10 item 6: a first frame above the hello limit is refused at its header, before its body is buffered")
    func firstFrameLimit() throws {
        let (channel, sink) = try Self.pipeline(firstFrameLimit: Frame.maximumHelloLength)
        var header = ByteBuffer()
        header.writeInteger(UInt32(4 << 20 - 190))
        // The decoder's error reaches the message handler, which closes the connection.
        try channel.writeInbound(header)
        #expect(!channel.isActive, "closed at the header")
        #expect(sink.messages.isEmpty)
    }

    @Test("after the first frame the full limit applies; a frame above it is refused")
    func laterFramesAndTheirLimit() throws {
        let (channel, sink) = try Self.pipeline(firstFrameLimit: Frame.maximumHelloLength)
        try channel.writeInbound(try Self.frame(["t": "hello"]))
        let large = try Self.frame(["t": "saved", "payload": .data(Data(repeating: 7, count: 1 << 20))])
        try channel.writeInbound(large)
        #expect(sink.messages.count == 2)
        var header = ByteBuffer()
        header.writeInteger(UInt32(Frame.maximumLength + 1))
        try channel.writeInbound(header)
        #expect(!channel.isActive, "closed at the header")
    }

    @Test("a half frame then the end of the connection: no message, the sink hears the end once")
    func halfFrame() throws {
        let (channel, sink) = try Self.pipeline()
        var half = try Self.frame(["t": "hello", "bundle": "com.example.App"])
        half.moveWriterIndex(to: half.writerIndex - 5)
        try channel.writeInbound(half)
        #expect(sink.messages.isEmpty)
        _ = try? channel.finish()
        #expect(sink.closedCount == 1)
        #expect(sink.messages.isEmpty)
    }

    @Test("a frame that is not a property list, or nests too deep, is malformed and closes the connection")
    func garbageFrames() throws {
        for body in [Data("not a plist at all".utf8), Data(repeating: 0xFF, count: 64)] {
            let (channel, sink) = try Self.pipeline()
            var buffer = ByteBuffer()
            buffer.writeInteger(UInt32(body.count))
            buffer.writeBytes(body)
            try channel.writeInbound(buffer)
            #expect(sink.malformed.count == 1)
            #expect(!channel.isActive, "closed after a malformed frame")
        }
        var nested: PropertyList = "deep"
        for _ in 0..<40 { nested = .array([nested]) }
        let (channel, sink) = try Self.pipeline()
        try channel.writeInbound(try Self.frame(nested))
        #expect(sink.malformed.count == 1 && sink.messages.isEmpty)
    }

    @Test("nothing read after a malformed frame reaches the sink, even frames that came in the same read")
    func nothingAfterMalformed() throws {
        let (channel, sink) = try Self.pipeline()
        var bytes = ByteBuffer()
        bytes.writeInteger(UInt32(8))
        bytes.writeString("garbage!")
        bytes.writeImmutableBuffer(try Self.frame(["t": "fetch", "id": 1, "seq": 1, "deadline": 1]))
        try channel.writeInbound(bytes)
        #expect(sink.malformed.count == 1)
        #expect(sink.messages.isEmpty, "a message behind a malformed frame is from a connection already given up")
        #expect(!channel.isActive)
    }

    @Test("issue 25 item 11: a frame past the limit behind a malformed one in the same read is not refused again: the sink hears one malformed, before closed")
    func oneRefusalPerConnection() throws {
        // The frames fuzzer's input, reduced: a refused frame, then (in the same read) a header past every limit,
        // which the decoder still reads after the connection was given up on.
        for first in ["garbage", "data"] {
            let (channel, sink) = try Self.pipeline(allowsData: true)
            var bytes = ByteBuffer()
            if first == "garbage" {
                bytes.writeInteger(UInt32(8))
                bytes.writeString("garbage!")
            } else {
                bytes.writeBytes([0x80, 0, 0, 0x0E, 0, 0, 0, 0, 0, 0, 0, 3, 1] + Array("hello".utf8))
            }
            bytes.writeInteger(UInt32(0x1700_6C6C))
            try channel.writeInbound(bytes)
            #expect(sink.malformed.count == 1, "\(first): \(sink.malformed)")
            #expect(sink.closedCount == 1 && !channel.isActive)
        }
    }

    @Test("messages that arrive before a sink is attached wait, in order, and the end is told after them")
    func messagesBeforeAttach() throws {
        let channel = EmbeddedChannel()
        let handler = MessageHandler()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder()))
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.writeInbound(try Self.frame(["t": "one"]))
        try channel.writeInbound(try Self.frame(["t": "two"]))
        _ = try channel.finish()
        let sink = RecordingSink()
        handler.attach(sink)
        #expect(sink.messages.map { $0["t"]?.stringValue } == ["one", "two"])
        #expect(sink.closedCount == 1)
    }
}

/// Data frames (continuation streams, F3; docs/PROTOCOL.md §8): where they may come, their length limits, the
/// documented vector.
@Suite("Data frames on EmbeddedChannel")
struct DataFrameTests {
    typealias Frames = FrameHandlerTests

    /// A data frame with `count` bytes of `fill`, as a peer writes it.
    static func dataFrame(stream: UInt64 = 3, opener: Bool = true, count: Int, fill: UInt8 = 0x61) -> ByteBuffer {
        var frame = FrameEncoder.dataHeader(stream: stream, opener: opener, count: count)
        frame.writeRepeatingByte(fill, count: count)
        return frame
    }

    /// Just the header of a data frame announcing `length` bytes after the length field.
    static func header(announcing length: Int) -> ByteBuffer {
        var header = ByteBuffer()
        header.writeInteger(UInt32(length) | Frame.dataBit)
        return header
    }

    @Test("F3: where data frames are not allowed, the top bit reads as a length past every limit and closes the connection")
    func refusedWhereNotAllowed() throws {
        let (channel, sink) = try Frames.pipeline(allowsData: false, takesData: true)
        try channel.writeInbound(try Frames.frame(["t": "hello", "v": 1]))
        try channel.writeInbound(Self.dataFrame(count: 5))
        #expect(!channel.isActive, "closed at the header")
        #expect(sink.data.isEmpty && sink.order == ["hello"])
    }

    @Test("F3: where data frames are allowed they come between messages in order, with their stream, opener flag and bytes")
    func interleaved() throws {
        let (channel, sink) = try Frames.pipeline(allowsData: true, takesData: true)
        var all = try Frames.frame(["t": "credit"])
        all.writeImmutableBuffer(Self.dataFrame(stream: 7, opener: false, count: 3, fill: 0x78))
        all.writeImmutableBuffer(try Frames.frame(["t": "eof"]))
        all.writeImmutableBuffer(Self.dataFrame(stream: .max, opener: true, count: 2))
        try channel.writeInbound(all)
        #expect(sink.order == ["credit", "data", "eof", "data"])
        #expect(
            sink.data == [
                .init(stream: 7, opener: false, bytes: ByteBuffer(string: "xxx")), .init(stream: .max, opener: true, bytes: ByteBuffer(string: "aa")),
            ]
        )
        #expect(channel.isActive)
    }

    @Test("F3: the opener flag is bit 0 of the flags byte; the other bits are ignored")
    func flags() throws {
        let (channel, sink) = try Frames.pipeline(allowsData: true, takesData: true)
        for flags: UInt8 in [0x00, 0x01, 0xFE, 0xFF] {
            var frame = Self.header(announcing: Frame.dataHeaderLength + 1)
            frame.writeInteger(UInt64(9))
            frame.writeInteger(flags)
            frame.writeString("z")
            try channel.writeInbound(frame)
        }
        #expect(sink.data.map(\.opener) == [false, true, false, true])
        #expect(channel.isActive)
    }

    @Test("F3: a data frame as the first frame of an app connection is refused: the hello must come first")
    func notAsFirstFrame() throws {
        let (channel, sink) = try Frames.pipeline(firstFrameLimit: Frame.maximumHelloLength, allowsData: true, takesData: true)
        try channel.writeInbound(Self.dataFrame(count: 5))
        #expect(!channel.isActive, "closed at the header")
        #expect(sink.data.isEmpty && sink.messages.isEmpty)

        // After the hello, the same frame is read.
        let (later, laterSink) = try Frames.pipeline(firstFrameLimit: Frame.maximumHelloLength, allowsData: true, takesData: true)
        try later.writeInbound(try Frames.frame(["t": "hello", "v": 1]))
        try later.writeInbound(Self.dataFrame(count: 5))
        #expect(laterSink.order == ["hello", "data"])
        #expect(later.isActive)
    }

    @Test(
        "F3: a data frame announces 9 (its header: empty data is allowed) to 9 + 256 KiB bytes; 8 or one more than the most is refused at the header",
        arguments: [(8, false), (9, true), (10, true), (Frame.dataHeaderLength + Frame.maximumData, true), (Frame.dataHeaderLength + Frame.maximumData + 1, false), (Int(Int32.max), false)]
    )
    func lengths(length: Int, allowed: Bool) throws {
        let (channel, sink) = try Frames.pipeline(allowsData: true, takesData: true)
        // The header alone: a refusal must come before the body is waited for.
        try channel.writeInbound(Self.header(announcing: length))
        #expect(channel.isActive == allowed)
        guard allowed else {
            #expect(sink.data.isEmpty)
            return
        }
        var rest = ByteBuffer()
        rest.writeInteger(UInt64(3))
        rest.writeInteger(Frame.openerFlag)
        rest.writeRepeatingByte(0x61, count: length - Frame.dataHeaderLength)
        try channel.writeInbound(rest)
        #expect(sink.data.count == 1)
        #expect(sink.data.first?.bytes.readableBytes == length - Frame.dataHeaderLength)
        #expect(channel.isActive)
    }

    @Test("F3: a truncated data frame waits for the rest: one byte at a time it is still one frame; cut short it delivers nothing")
    func truncated() throws {
        let (channel, sink) = try Frames.pipeline(allowsData: true, takesData: true)
        let frame = Self.dataFrame(stream: 5, opener: false, count: 300)
        for (index, byte) in frame.readableBytesView.enumerated() {
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
            #expect(sink.data.isEmpty == (index < frame.readableBytes - 1))
        }
        #expect(sink.data == [.init(stream: 5, opener: false, bytes: ByteBuffer(repeating: 0x61, count: 300))])

        let (cut, cutSink) = try Frames.pipeline(allowsData: true, takesData: true)
        try cut.writeInbound(frame.getSlice(at: frame.readerIndex, length: frame.readableBytes - 1) ?? ByteBuffer())
        #expect(cutSink.data.isEmpty && cut.isActive, "waiting for the last byte")
        _ = try? cut.finish()
        #expect(cutSink.data.isEmpty && cutSink.closedCount == 1)
    }

    @Test("F3: a data frame to a sink that takes none is malformed and closes the connection, before or after the sink is attached")
    func sinkWithoutStreams() throws {
        let (channel, sink) = try Frames.pipeline(allowsData: true, takesData: false)
        try channel.writeInbound(try Frames.frame(["t": "ping", "id": 1]))
        try channel.writeInbound(Self.dataFrame(count: 5))
        #expect(sink.malformed.count == 1)
        #expect(!channel.isActive)
        #expect(sink.order == ["ping"])

        // A message behind the refused data frame, in the same read, is not handed on either.
        let (joined, joinedSink) = try Frames.pipeline(allowsData: true, takesData: false)
        var both = Self.dataFrame(count: 5)
        both.writeImmutableBuffer(try Frames.frame(["t": "pong", "id": 1]))
        try joined.writeInbound(both)
        #expect(joinedSink.malformed.count == 1 && joinedSink.messages.isEmpty)

        // Read before the sink is attached (right after a TLS handshake): refused when it is.
        let early = EmbeddedChannel()
        let handler = MessageHandler()
        try early.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder(allowsData: true)))
        try early.pipeline.syncOperations.addHandler(handler)
        try Frames.connect(early)
        try early.writeInbound(Self.dataFrame(count: 5))
        #expect(early.isActive)
        let earlySink = RecordingSink()
        handler.attach(earlySink)
        #expect(earlySink.malformed.count == 1)
        #expect(!early.isActive)
    }

    @Test("F3: the documented data frame: stream 3, opener, \"hello\" (docs/PROTOCOL.md §8); the bytes go out after the header uncopied")
    func vector() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FrameEncoder())
        let hello = ByteBuffer(string: "hello")
        try channel.writeOutbound(OutboundFrame.data(stream: 3, opener: true, hello))
        let header = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let bytes = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(Array(header.readableBytesView) == [0x80, 0x00, 0x00, 0x0E, 0, 0, 0, 0, 0, 0, 0, 0x03, 0x01])
        #expect(bytes == hello)
        let same = bytes.withUnsafeReadableBytes { written in hello.withUnsafeReadableBytes { $0.baseAddress == written.baseAddress } }
        #expect(same, "the stream's bytes are written as they are, not copied into the frame")
        var frame = header
        frame.writeImmutableBuffer(bytes)
        #expect(frame.readableBytesView.map { String(format: "%02x", $0) }.joined() == Self.documented)

        // And the decoder reads it back.
        let (reader, sink) = try Frames.pipeline(allowsData: true, takesData: true)
        try reader.writeInbound(frame)
        #expect(sink.data == [.init(stream: 3, opener: true, bytes: hello)])

        // A message goes out as its length, then its body.
        try channel.writeOutbound(OutboundFrame.message(ByteBuffer(string: "bplist00")))
        let message = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(Array(message.readableBytesView) == [0, 0, 0, 8] + Array("bplist00".utf8))
    }

    /// docs/PROTOCOL.md §8: the data frame vector.
    static let documented = "8000000e000000000000000301" + "68656c6c6f"
}
