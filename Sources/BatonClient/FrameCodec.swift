import NIOCore

/// Frames on an account session: a 4-byte big-endian length, then that many bytes (one binary property list).
///
/// A continuation stream's bytes travel in **data frames** (docs/PROTOCOL.md §8): the length's top bit set, then an
/// 8-byte stream id, a flags byte and the bytes themselves, never a property list, so an agent forwards them without
/// decoding or copying them. A data frame is read only where the reader allows it (a session, a stream's own app
/// connection); elsewhere its length reads as far above every limit and the connection closes.
package enum Frame {
    /// The largest frame accepted: a roster of thousands of devices fits; anything larger is a broken or hostile peer.
    package static let maximumLength = 4 << 20
    /// The bit of the length field that marks a data frame.
    package static let dataBit: UInt32 = 0x8000_0000
    /// Bytes of a data frame before its data: the stream id (8) and the flags (1).
    package static let dataHeaderLength = 9
    /// The most bytes one data frame carries (F3). Writers cut larger writes into frames of at most this.
    package static let maximumData = 256 << 10
    /// The data frame flag saying the sender opened the stream (the ids of each side's streams are their own).
    package static let openerFlag: UInt8 = 0x01
}

extension Frame {
    /// The largest first frame on an app's socket: the hello, which names a bundle and a version. Until a client has
    /// said who it is, the agent buffers no more than this for it (ISSUE 10 item 6).
    package static let maximumHelloLength = 4 << 10
}

/// One frame as read: a message (a binary property list, not yet decoded), or a continuation stream's bytes.
package enum InboundFrame: Sendable {
    /// A message frame's body.
    case message(ByteBuffer)
    /// A data frame: the stream it belongs to, whether its sender opened that stream, and the bytes (a slice of
    /// what was read: no copy).
    case data(stream: UInt64, opener: Bool, ByteBuffer)
}

/// One frame to write.
package enum OutboundFrame: Sendable {
    /// A message: its encoded property list.
    case message(ByteBuffer)
    /// Bytes of a continuation stream (at most ``Frame/maximumData``).
    case data(stream: UInt64, opener: Bool, ByteBuffer)
}

/// Splits the byte stream into frames, refusing any frame above its limit before buffering it: ``Frame/maximumLength``,
/// or a smaller limit for the first frame (the hello of an unauthenticated client). Data frames are read only when
/// `allowsData` (set once a connection carries a continuation stream); a data frame's announced length must hold its
/// header and at most ``Frame/maximumData`` bytes.
package struct FrameDecoder: ByteToMessageDecoder {
    package typealias InboundOut = InboundFrame

    let maximumLength: Int
    var firstFrameLimit: Int?
    let allowsData: Bool

    package init(maximumLength: Int = Frame.maximumLength, firstFrameLimit: Int? = nil, allowsData: Bool = false) {
        self.maximumLength = maximumLength
        self.firstFrameLimit = firstFrameLimit
        self.allowsData = allowsData
    }

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let field = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        if field & Frame.dataBit != 0, allowsData, firstFrameLimit == nil {
            let length = Int(field & ~Frame.dataBit)
            guard length >= Frame.dataHeaderLength, length <= Frame.dataHeaderLength + Frame.maximumData else {
                throw BatonClientError(
                    .protocolViolation,
                    "the peer announced a data frame of \(length) bytes; data frames hold \(Frame.dataHeaderLength) to \(Frame.dataHeaderLength + Frame.maximumData)"
                )
            }
            guard buffer.readableBytes >= 4 + length else { return .needMoreData }
            buffer.moveReaderIndex(forwardBy: 4)
            guard let stream = buffer.readInteger(as: UInt64.self), let flags = buffer.readInteger(as: UInt8.self),
                let bytes = buffer.readSlice(length: length - Frame.dataHeaderLength)
            else { return .needMoreData }
            context.fireChannelRead(wrapInboundOut(.data(stream: stream, opener: flags & Frame.openerFlag != 0, bytes)))
            return .continue
        }
        let length = field
        let limit = firstFrameLimit ?? maximumLength
        guard length <= limit else {
            throw BatonClientError(.protocolViolation, "the peer announced a frame of \(length) bytes, the limit is \(limit)")
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        guard let frame = buffer.readSlice(length: Int(length)) else { return .needMoreData }
        firstFrameLimit = nil
        context.fireChannelRead(wrapInboundOut(.message(frame)))
        return .continue
    }
}

/// Writes frames: a message prefixed with its length; a data frame as its 13-byte header and then its bytes as they
/// are (not copied).
package final class FrameEncoder: ChannelOutboundHandler, RemovableChannelHandler, Sendable {
    package typealias OutboundIn = OutboundFrame
    package typealias OutboundOut = ByteBuffer

    package init() {}

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .message(let body):
            var frame = context.channel.allocator.buffer(capacity: 4 + body.readableBytes)
            frame.writeInteger(UInt32(body.readableBytes))
            frame.writeImmutableBuffer(body)
            context.write(wrapOutboundOut(frame), promise: promise)
        case .data(let stream, let opener, let bytes):
            context.write(wrapOutboundOut(Self.dataHeader(stream: stream, opener: opener, count: bytes.readableBytes, allocator: context.channel.allocator)), promise: nil)
            context.write(wrapOutboundOut(bytes), promise: promise)
        }
    }

    /// The header of a data frame carrying `count` bytes of stream `stream`.
    package static func dataHeader(stream: UInt64, opener: Bool, count: Int, allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        var header = allocator.buffer(capacity: 4 + Frame.dataHeaderLength)
        header.writeInteger(UInt32(Frame.dataHeaderLength + count) | Frame.dataBit)
        header.writeInteger(stream)
        header.writeInteger(opener ? Frame.openerFlag : 0)
        return header
    }
}
