import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// One message of the handoff floor pipeline (issue 26 item 5): what Baton's messages would be with nothing of Baton
/// in them. On a stream (a Unix socket, a TLS link) it is framed as Baton's IPC and session frames are, a 4-byte
/// big-endian length and then the body; a datagram is the body alone. The body: the kind, how many stamps, the stamps
/// (CLOCK_MONOTONIC nanoseconds, the same clock in every process of the machine: each process that forwards the
/// message adds the moment it read it, so the bench can tell hop from hop), then the payload.
struct FloorFrame: Sendable {
    enum Kind: UInt8, Sendable {
        /// The first frame on a Unix connection: its role (a ``Role`` raw value) in the payload.
        case hello = 1
        /// Visible path: the app made an activity current (app → A), its advert (A → B, a datagram), and the watcher
        /// told (B → watcher).
        case current
        /// Continue path: the control client asks B to continue A's activity; a stamp-free payload byte of 1 asks
        /// for a new TLS connection first (cold).
        case `continue`
        /// Close the TLS link, so that the next continue opens a new one (as `closeLinks` before a cold continue).
        case drop
        /// B asks A for the state over the TLS link.
        case fetch
        /// A asks its app for the state.
        case save
        /// The app's state, 3 KB (app → A).
        case saved
        /// A's answer over the TLS link, the state.
        case reply
        /// B gives the state to its app.
        case deliver
    }

    /// Who is at the other end of a node's Unix connection.
    enum Role: UInt8, Sendable {
        case app = 0
        case watcher
        case control
    }

    var kind: Kind
    var stamps: [UInt64]
    var payload: ByteBuffer

    init(_ kind: Kind, stamps: [UInt64] = [], payload: ByteBuffer = ByteBuffer()) {
        self.kind = kind
        self.stamps = stamps
        self.payload = payload
    }

    /// This frame with `stamp` added to its stamps.
    func stamped(_ stamp: UInt64 = monotonicNanoseconds()) -> FloorFrame {
        var frame = self
        frame.stamps.append(stamp)
        return frame
    }

    /// The body: kind, stamp count, stamps, payload.
    func writeBody(into buffer: inout ByteBuffer) {
        buffer.writeInteger(kind.rawValue)
        buffer.writeInteger(UInt8(stamps.count))
        for stamp in stamps { buffer.writeInteger(stamp) }
        var payload = payload
        buffer.writeBuffer(&payload)
    }

    /// Reads a body (as ``writeBody(into:)`` wrote it).
    init(body: inout ByteBuffer) throws {
        guard let raw = body.readInteger(as: UInt8.self), let kind = Kind(rawValue: raw), let count = body.readInteger(as: UInt8.self) else {
            throw CommandLineError("a floor frame with no valid kind")
        }
        var stamps: [UInt64] = []
        for _ in 0..<count {
            guard let stamp = body.readInteger(as: UInt64.self) else { throw CommandLineError("a floor frame cut short in its stamps") }
            stamps.append(stamp)
        }
        self.init(kind, stamps: stamps, payload: body.readSlice(length: body.readableBytes) ?? ByteBuffer())
    }

    /// A datagram of exactly `size` bytes (the payload padded with zeros), as the advert baseline's 88 bytes.
    func datagram(size: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: size)
        writeBody(into: &buffer)
        if buffer.writerIndex < size { buffer.writeRepeatingByte(0, count: size - buffer.writerIndex) }
        return buffer
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the one clock every process of the handoff bench stamps with, so stamps taken in
/// the floor's processes compare with the bench's own.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Splits a stream into ``FloorFrame``s (a 4-byte big-endian length, then the body).
struct FloorFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = FloorFrame

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        guard length <= 1 << 20 else { throw CommandLineError("a floor frame of \(length) bytes (at most 1 MiB)") }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        guard var body = buffer.readSlice(length: Int(length)) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(try FloorFrame(body: &body)))
        return .continue
    }
}

/// Writes ``FloorFrame``s with their length.
struct FloorFrameEncoder: MessageToByteEncoder {
    typealias OutboundIn = FloorFrame

    func encode(data: FloorFrame, out: inout ByteBuffer) throws {
        let start = out.writerIndex
        out.writeInteger(UInt32(0))
        data.writeBody(into: &out)
        out.setInteger(UInt32(out.writerIndex - start - 4), at: start)
    }
}

extension ChannelPipeline.SynchronousOperations {
    /// The floor's framing, then `handler`.
    func addFloorHandlers(_ handler: ChannelHandler) throws {
        try addHandler(ByteToMessageHandler(FloorFrameDecoder()))
        try addHandler(MessageToByteHandler(FloorFrameEncoder()))
        try addHandler(handler)
    }
}
