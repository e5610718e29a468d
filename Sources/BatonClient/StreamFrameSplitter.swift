import NIOCore

/// Splits a direct continuation stream's bytes into frames as they arrive (issue 30), without gathering a data frame
/// whole: each data frame's bytes are handed on as they come, copied once out of what was read.
///
/// On a relayed stream ``FrameDecoder`` hands on slices of its read buffer, which is right there: the agent writes
/// them to the next socket and lets go. On a direct stream the bytes come out of NIOSSL, whose buffer would then stay
/// referenced while the app has not read them: its next decryption finds the buffer shared and copies all of it
/// (its capacity, not just what is left), and `ByteToMessageHandler` copies each read into its own buffer first.
/// Measured (issue 30's profile): those two copies were most of what the direct path cost above a bare TLS copy.
/// Here each data frame's bytes are copied once, into a buffer of their own the reader then owns.
///
/// The frames are ``FrameDecoder``'s (docs/PROTOCOL.md §8), with the limits of a stream's connection: a data frame
/// announces 9 to 9 + ``Frame/maximumData`` bytes; a message (on a direct stream only `eof`) at most
/// ``maximumMessageLength``. A data frame's bytes may arrive as several ``InboundFrame/data(stream:opener:_:)``
/// pieces, each non-empty; an empty data frame yields none.
package struct StreamFrameSplitter: Sendable {
    /// The largest message frame on a direct stream: `eof` is a few dozen bytes; nothing larger has a reason to come.
    package static let maximumMessageLength = 64 << 10

    private enum State: Sendable {
        /// Reading a frame's header: the bytes seen of it (4, or 13 for a data frame).
        case header([UInt8])
        /// In a data frame's bytes: how many are left, for which stream.
        case data(remaining: Int, stream: UInt64, opener: Bool)
        /// In a message frame's body.
        case message(remaining: Int, body: ByteBuffer)
    }

    private var state = State.header([])

    package init() {}

    /// Consumes all of `buffer`, calling `emit` for each frame or piece of a data frame, in order.
    /// - Throws: ``BatonClientError`` `protocolViolation` for a frame above its limits; the connection cannot go on.
    package mutating func split(
        _ buffer: inout ByteBuffer,
        allocator: ByteBufferAllocator,
        _ emit: (InboundFrame) -> Void
    ) throws(BatonClientError) {
        while buffer.readableBytes > 0 {
            switch state {
            case .header(var seen):
                let wanted = seen.count < 4 ? 4 : 4 + Frame.dataHeaderLength
                let take = min(wanted - seen.count, buffer.readableBytes)
                if let bytes = buffer.readBytes(length: take) { seen += bytes }
                guard seen.count >= 4 else {
                    state = .header(seen)
                    continue
                }
                let field = seen[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                if field & Frame.dataBit != 0 {
                    let length = Int(field & ~Frame.dataBit)
                    guard length >= Frame.dataHeaderLength, length <= Frame.dataHeaderLength + Frame.maximumData else {
                        throw BatonClientError(
                            .protocolViolation,
                            "the other app announced a data frame of \(length) bytes; data frames hold \(Frame.dataHeaderLength) to \(Frame.dataHeaderLength + Frame.maximumData)"
                        )
                    }
                    guard seen.count == 4 + Frame.dataHeaderLength else {
                        state = .header(seen)
                        continue
                    }
                    let stream = seen[4..<12].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    state = .data(remaining: length - Frame.dataHeaderLength, stream: stream, opener: seen[12] & Frame.openerFlag != 0)
                    if length == Frame.dataHeaderLength { state = .header([]) }
                } else {
                    let length = Int(field)
                    guard length <= Self.maximumMessageLength else {
                        throw BatonClientError(
                            .protocolViolation,
                            "the other app announced a message of \(length) bytes; on a stream at most \(Self.maximumMessageLength)"
                        )
                    }
                    state = .message(remaining: length, body: allocator.buffer(capacity: length))
                    if length == 0 {
                        state = .header([])
                        emit(.message(allocator.buffer(capacity: 0)))
                    }
                }
            case .data(let remaining, let stream, let opener):
                let count = min(remaining, buffer.readableBytes)
                guard let slice = buffer.readSlice(length: count) else { return }
                var piece = allocator.buffer(capacity: count)
                piece.writeImmutableBuffer(slice)
                state = remaining == count ? .header([]) : .data(remaining: remaining - count, stream: stream, opener: opener)
                emit(.data(stream: stream, opener: opener, piece))
            case .message(let remaining, var body):
                let count = min(remaining, buffer.readableBytes)
                guard let slice = buffer.readSlice(length: count) else { return }
                body.writeImmutableBuffer(slice)
                if remaining == count {
                    state = .header([])
                    emit(.message(body))
                } else {
                    state = .message(remaining: remaining - count, body: body)
                }
            }
        }
    }
}

/// ``StreamFrameSplitter`` in a channel: what a direct stream's pipeline reads frames with, in place of
/// `ByteToMessageHandler(FrameDecoder)`. A frame past the limits is an error down the pipeline, and the connection
/// closes.
package final class StreamFrameSplitterHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = InboundFrame

    private var splitter = StreamFrameSplitter()
    private var broken = false

    package init() {}

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !broken else { return }
        var buffer = unwrapInboundIn(data)
        do {
            try splitter.split(&buffer, allocator: context.channel.allocator) { frame in
                context.fireChannelRead(wrapInboundOut(frame))
            }
        } catch {
            broken = true
            context.fireErrorCaught(error)
            context.close(promise: nil)
        }
    }
}
