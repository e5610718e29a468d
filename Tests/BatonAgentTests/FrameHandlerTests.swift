@testable import BatonClient
import BatonCore
import Foundation
import NIOCore
import NIOEmbedded
import Testing

/// Collects what a ``MessageHandler`` hands on.
final class RecordingSink: MessageSink, @unchecked Sendable {
    // Touched only on the EmbeddedChannel's loop, which is the test's own thread.
    var messages: [PropertyList] = []
    var malformed: [Error] = []
    var closedCount = 0

    func received(_ message: PropertyList) { messages.append(message) }
    func malformed(_ error: Error) { malformed.append(error) }
    func closed() { closedCount += 1 }
}

/// The frame and message handlers of the app socket and of sessions, driven byte by byte on an `EmbeddedChannel`
/// (issue 11 part 2, handler tier; the hostile frames of issue 10 item 6).
@Suite("Frame and message handlers on EmbeddedChannel")
struct FrameHandlerTests {
    static func pipeline(firstFrameLimit: Int? = nil) throws -> (EmbeddedChannel, RecordingSink) {
        let channel = EmbeddedChannel()
        let sink = RecordingSink()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder(firstFrameLimit: firstFrameLimit)))
        try channel.pipeline.syncOperations.addHandler(MessageHandler(sink: sink))
        return (channel, sink)
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
