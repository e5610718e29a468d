import NIOCore

/// Frames on an account session: a 4-byte big-endian length, then that many bytes (one binary property list).
enum Frame {
    /// The largest frame accepted: a roster of thousands of devices fits; anything larger is a broken or hostile peer.
    static let maximumLength = 4 << 20
}

/// Splits the byte stream into frames, refusing any frame above ``Frame/maximumLength`` before buffering it.
struct FrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        guard length <= Frame.maximumLength else {
            throw BatonAgentError(.protocolViolation, "the peer announced a frame of \(length) bytes, the limit is \(Frame.maximumLength)")
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        guard let frame = buffer.readSlice(length: Int(length)) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }
}

/// Prefixes each outgoing frame with its length.
struct FrameEncoder: MessageToByteEncoder {
    typealias OutboundIn = ByteBuffer

    func encode(data: ByteBuffer, out: inout ByteBuffer) throws {
        out.writeInteger(UInt32(data.readableBytes))
        out.writeImmutableBuffer(data)
    }
}
