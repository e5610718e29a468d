import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore

/// Where a connection's decoded messages go. Called on the channel's event loop, in order.
package protocol MessageSink: AnyObject, Sendable {
    /// One whole message.
    func received(_ message: PropertyList)
    /// A continuation stream's bytes (a data frame, docs/PROTOCOL.md §8). Returns false where no data frame may
    /// come: the connection is then closed as broken (the default).
    func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool
    /// A frame that is not a readable property list: the connection is closed after this.
    func malformed(_ error: Error)
    /// The connection ended.
    func closed()
}

extension MessageSink {
    package func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool { false }
}

/// Decodes each frame (a binary property list, depth-limited) and hands it to a sink. Messages that arrive before the
/// sink is attached (right after a TLS handshake) wait in order.
///
/// `@unchecked Sendable`: like every NIO handler, its mutable state is touched only on its channel's event loop
/// (``attach(_:)`` is called there too: from the channel initializer, or through `execute`/`submit`); it is
/// Sendable only so it can be made off the loop and captured by the closures that attach it.
package final class MessageHandler: ChannelInboundHandler, @unchecked Sendable {
    package typealias InboundIn = InboundFrame

    /// Messages are flat dictionaries with at most a payload or a list inside.
    package static let limits = PropertyListLimits(maximumDepth: 16)

    private var sink: MessageSink?
    private var waiting: [InboundFrame] = []
    private var ended = false
    /// This handler closed the connection (a malformed frame, a refused data frame, a decoder error): frames still
    /// coming out of the same read are from a peer already given up on and reach no sink.
    private var givenUp = false
    /// The decoder's refusal of a frame (too long, of an unknown kind) that came before a sink was attached: the sink
    /// hears it when attached, so the peer is refused with its reason, not just cut off (issue 25 item 12).
    private var refusedFrame: BatonClientError?

    package init(sink: MessageSink? = nil) {
        self.sink = sink
    }

    /// Attaches the sink; must be called on the channel's event loop.
    package func attach(_ sink: MessageSink) {
        self.sink = sink
        if let refusedFrame {
            waiting = []
            sink.malformed(refusedFrame)
            closeOnAttach()
            // A connection already gone ends here too (its sink counts it closed).
            if ended { sink.closed() }
            return
        }
        let frames = waiting
        waiting = []
        for frame in frames where !givenUp { deliver(frame, to: sink, close: { [weak self] in self?.closeOnAttach() }) }
        if ended { sink.closed() }
    }

    private var context: ChannelHandlerContext?

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    private func closeOnAttach() {
        context?.close(promise: nil)
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !givenUp else { return }
        let frame = unwrapInboundIn(data)
        guard let sink else {
            waiting.append(frame)
            return
        }
        deliver(frame, to: sink) { context.close(promise: nil) }
    }

    private func deliver(_ frame: InboundFrame, to sink: MessageSink, close: () -> Void) {
        switch frame {
        case .message(let body):
            let stamped = HopStamps.isOn && body.readableBytes >= HopStamps.largeFrame
            if stamped { HopStamps.stamp(.frameRead) }
            let message: PropertyList
            do {
                message = try BinaryPropertyListDecoder.decode(Data(body.readableBytesView), limits: Self.limits)
                if stamped { HopStamps.stamp(.frameDecoded) }
            } catch {
                givenUp = true
                sink.malformed(error)
                close()
                return
            }
            sink.received(message)
        case .data(let stream, let opener, let bytes):
            guard sink.receivedData(stream: stream, opener: opener, bytes) else {
                givenUp = true
                sink.malformed(BatonClientError(.protocolViolation, "a data frame where none may come"))
                close()
                return
            }
        }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        ended = true
        sink?.closed()
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: Error) {
        // Decoder errors (an oversized frame), TLS alerts, resets: the connection is over.
        let first = !givenUp
        givenUp = true
        // A frame the decoder refused is the peer's doing, and the sink says so (the agent refuses an app socket
        // client with `malformedMessage` and logs it once: issue 25 item 12); before a sink is attached, the
        // connection stays open until it is, for the refusal to be sent.
        if let refused = error as? BatonClientError {
            // Once: a connection already given up on (a malformed frame, an earlier refusal) was told why, and the
            // decoder goes on reading what came in the same read (the frames fuzzer's find, issue 25 item 11).
            guard first else { return }
            guard let sink else {
                refusedFrame = refused
                return
            }
            sink.malformed(refused)
        }
        context.close(promise: nil)
    }
}

extension Channel {
    /// Encodes and writes one message; a message that cannot be encoded is a programming error reported to the caller.
    package func writeMessage(_ message: PropertyList) throws {
        let bytes = try BinaryPropertyListEncoder.encode(message)
        writeAndFlush(OutboundFrame.message(ByteBuffer(bytes: bytes)), promise: nil)
    }
}
