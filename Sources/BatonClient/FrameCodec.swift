import NIOCore

/// Frames on an account session: a 4-byte big-endian length, then that many bytes (one binary property list).
package enum Frame {
    /// The largest frame accepted: a roster of thousands of devices fits; anything larger is a broken or hostile peer.
    package static let maximumLength = 4 << 20
}

extension Frame {
    /// The largest first frame on an app's socket: the hello, which names a bundle and a version. Until a client has
    /// said who it is, the agent buffers no more than this for it (ISSUE 10 item 6).
    package static let maximumHelloLength = 4 << 10
}

/// Splits the byte stream into frames, refusing any frame above its limit before buffering it: ``Frame/maximumLength``,
/// or a smaller limit for the first frame (the hello of an unauthenticated client).
package struct FrameDecoder: ByteToMessageDecoder {
    package typealias InboundOut = ByteBuffer

    let maximumLength: Int
    var firstFrameLimit: Int?

    package init(maximumLength: Int = Frame.maximumLength, firstFrameLimit: Int? = nil) {
        self.maximumLength = maximumLength
        self.firstFrameLimit = firstFrameLimit
    }

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        let limit = firstFrameLimit ?? maximumLength
        guard length <= limit else {
            throw BatonClientError(.protocolViolation, "the peer announced a frame of \(length) bytes, the limit is \(limit)")
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        guard let frame = buffer.readSlice(length: Int(length)) else { return .needMoreData }
        firstFrameLimit = nil
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }
}

/// Prefixes each outgoing frame with its length.
package struct FrameEncoder: MessageToByteEncoder {
    package typealias OutboundIn = ByteBuffer

    package init() {}

    package func encode(data: ByteBuffer, out: inout ByteBuffer) throws {
        out.writeInteger(UInt32(data.readableBytes))
        out.writeImmutableBuffer(data)
    }
}
