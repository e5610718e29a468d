// libFuzzer entry point for what a session peer or an app's stream connection sends before any message is typed:
// the frame decoder with data frames allowed (continuation streams, docs/PROTOCOL.md §8), the message handler behind
// it, the session and IPC decoders for each message frame, and one stream's flow control (StreamFlow) driven by the
// same bytes read as a sequence of events.
//
// Built by scripts/fuzz.sh frames with SwiftPM (the decoder needs NIO), as the package's `frame-fuzzer` target,
// which exists only while BATON_FUZZ_FRAMES is set (Package.swift). A trap, a sanitizer report, an untyped error,
// an error of another code than the layer's own, a message that does not read back as itself, a frame past its
// limits, or flow control that sends past its credit or after its end stops the fuzzer with the input saved.
import BatonClient
import BatonCore
import BatonProtocol
import Foundation
import NIOCore
import NIOEmbedded

@_cdecl("LLVMFuzzerTestOneInput")
public func frameFuzzerTestOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = [UInt8](UnsafeBufferPointer(start: start, count: count))
    // The same bytes in one read and split in two (where the first byte says) must give the same frames.
    let whole = FrameRun(bytes, split: nil)
    if let first = bytes.first, bytes.count > 1 {
        let split = FrameRun(bytes, split: Int(first) % bytes.count)
        precondition(split.events == whole.events, "frames depend on how the bytes were split: \(whole.events) vs \(split.events)")
    }
    var flow = FlowRun(bytes)
    flow.run()
    // Issue 30: a direct stream's splitter, the same bytes whole and cut where the last byte says.
    let splitWhole = SplitterRun(bytes, cut: nil)
    if let last = bytes.last, bytes.count > 1 {
        let splitCut = SplitterRun(bytes, cut: Int(last) % bytes.count)
        precondition(splitCut.frames == splitWhole.frames && splitCut.failed == splitWhole.failed, "the splitter's frames depend on the cut")
    }
    return 0
}

/// ``StreamFrameSplitter`` over bytes in one or two reads: what it emits, a data frame's pieces joined; whether it
/// refused (only `protocolViolation`); and that every piece is non-empty and within a frame.
struct SplitterRun {
    var frames: [String] = []
    var failed = false

    init(_ bytes: [UInt8], cut: Int?) {
        var splitter = StreamFrameSplitter()
        var frames: [String] = []
        var pendingData: (UInt64, Bool, Int)?
        let reads = cut.map { [Array(bytes[..<$0]), Array(bytes[$0...])] } ?? [bytes]
        for read in reads {
            var buffer = ByteBuffer(bytes: read)
            do {
                try splitter.split(&buffer, allocator: ByteBufferAllocator()) { frame in
                    switch frame {
                    case .message(let body):
                        precondition(body.readableBytes <= StreamFrameSplitter.maximumMessageLength, "a message past its limit")
                        if let data = pendingData { frames.append("data \(data)") }
                        pendingData = nil
                        frames.append("message \(body.readableBytes)")
                    case .data(let stream, let opener, let piece):
                        precondition(piece.readableBytes > 0 && piece.readableBytes <= Frame.maximumData, "a piece of \(piece.readableBytes) bytes")
                        if let data = pendingData, data.0 == stream, data.1 == opener {
                            pendingData = (stream, opener, data.2 + piece.readableBytes)
                        } else {
                            if let data = pendingData { frames.append("data \(data)") }
                            pendingData = (stream, opener, piece.readableBytes)
                        }
                    }
                }
            } catch {
                precondition(error.code == .protocolViolation, "unexpected error code: \(error)")
                failed = true
                break
            }
        }
        if let data = pendingData { frames.append("data \(data)") }
        self.frames = frames
    }
}

/// Feeds bytes through a session's inbound pipeline (frame decoder with data allowed, message handler) and records
/// what comes out.
final class FrameRun: MessageSink, @unchecked Sendable {
    // Touched only on the EmbeddedChannel's loop: this thread.
    var events: [String] = []

    init(_ bytes: [UInt8], split: Int?) {
        let channel = EmbeddedChannel()
        do {
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder(allowsData: true)))
            try channel.pipeline.syncOperations.addHandler(MessageHandler(sink: self))
            // Active, as an accepted connection is (an EmbeddedChannel is not until connected).
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            if let split {
                try channel.writeInbound(ByteBuffer(bytes: bytes[..<split]))
                if channel.isActive { try channel.writeInbound(ByteBuffer(bytes: bytes[split...])) }
            } else {
                try channel.writeInbound(ByteBuffer(bytes: bytes))
            }
            _ = try? channel.finish()
            // A connection the handlers closed themselves is torn down by a task on the loop, which an
            // EmbeddedEventLoop runs only when asked; left alone, channel and handlers would leak.
            channel.embeddedEventLoop.run()
        } catch {
            preconditionFailure("the pipeline threw instead of closing: \(error)")
        }
    }

    func received(_ message: PropertyList) {
        events.append("message")
        let decoders: [(PropertyList) throws -> PropertyList] = [
            { try SessionMessage($0).propertyList },
            { try IPCMessage($0).propertyList },
        ]
        for decode in decoders {
            do {
                let once = try decode(message)
                let twice = try decode(once)
                precondition(twice == once, "message does not read back as itself")
                // What a peer writes, it can read: the frame stays within the limits.
                let body = try BinaryPropertyListEncoder.encode(once)
                precondition(body.count <= Frame.maximumLength, "a decoded message encodes past the frame limit")
            } catch let error as BatonProtocolError {
                precondition(error.code == .malformedMessage, "unexpected error code: \(error)")
            } catch {
                preconditionFailure("untyped error: \(error)")
            }
        }
    }

    func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool {
        precondition(bytes.readableBytes <= Frame.maximumData, "a data frame of \(bytes.readableBytes) bytes was read")
        events.append("data \(stream) \(opener) \(bytes.readableBytes)")
        // Streams with odd ids are not open here: the handler must close the connection.
        return stream % 2 == 0
    }

    func malformed(_ error: Error) {
        events.append("malformed")
    }

    func closed() {
        events.append("closed")
    }
}

/// One stream's flow control driven by bytes read as events, checked against its own promises: never more sent than
/// credited, nothing after the `eof`, never a credit of 0 or past the window, only `flowViolation` thrown.
struct FlowRun {
    var input: ArraySlice<UInt8>
    var flow: StreamFlow
    /// Credit received in all (the peer's window included) and bytes sent against it.
    var credited: Int
    var sent = 0
    var endSent = false
    /// Bytes received and not yet taken by the app; received in all; credited back in all.
    var held = 0
    var received = 0
    var creditedBack = 0

    init(_ bytes: [UInt8]) {
        var input = bytes[...]
        let window = Int(Self.take(&input, 3)) + 1
        let peerWindow = Int(Self.take(&input, 3)) + 1
        self.input = input
        self.flow = StreamFlow(window: window, peerWindow: peerWindow)
        self.credited = peerWindow
    }

    /// The next `count` bytes as a big-endian number (missing bytes are 0).
    static func take(_ input: inout ArraySlice<UInt8>, _ count: Int) -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<count { value = value << 8 | UInt64(input.popFirst() ?? 0) }
        return value
    }

    mutating func number() -> Int { Int(Self.take(&input, 2)) }

    mutating func sent(_ send: StreamFlow.Send) {
        precondition(!endSent || (send.bytes == 0 && !send.end), "sent \(send) after the eof")
        sent += send.bytes
        precondition(sent <= credited, "sent \(sent) bytes with \(credited) credited")
        if send.end { endSent = true }
    }

    mutating func run() {
        while let event = input.popFirst() {
            do {
                switch event % 8 {
                case 0: sent(try flow.appSent(number()))
                case 1: sent(flow.appFinished())
                case 2:
                    let count = number()
                    let send = try flow.credited(count)
                    credited += count
                    sent(send)
                case 3:
                    // Any credit a peer could announce, and numbers no peer can (the decoder bounds them).
                    let count = Int(truncatingIfNeeded: Self.take(&input, 8))
                    let send = try flow.credited(count)
                    precondition(count > 0 && count <= StreamFlow.maximumCredit, "credit of \(count) accepted")
                    credited += count
                    sent(send)
                case 4:
                    let count = number()
                    try flow.peerSent(count)
                    held += count
                    received += count
                    precondition(received - creditedBack <= flow.window, "received past the window")
                case 5: flow.peerFinished()
                case 6:
                    let count = min(number(), held)
                    held -= count
                    if let credit = flow.appTook(count) {
                        precondition(credit > 0 && credit <= flow.window, "a credit of \(credit) with a window of \(flow.window)")
                        creditedBack += credit
                    }
                default:
                    precondition(flow.wantsAppData == (flow.queued == 0 && flow.sendCredit > 0 && !flow.appEnded))
                    precondition(!flow.isFinished || (flow.endSent && flow.endReceived))
                }
            } catch let error as BatonProtocolError {
                precondition(error.code == .flowViolation, "unexpected error code: \(error)")
            } catch {
                preconditionFailure("untyped error: \(error)")
            }
        }
    }
}
