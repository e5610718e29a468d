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
    /// A frame that is not a readable property list: the connection is closed after this.
    func malformed(_ error: Error)
    /// The connection ended.
    func closed()
}

/// Decodes each frame (a binary property list, depth-limited) and hands it to a sink. Messages that arrive before the
/// sink is attached (right after a TLS handshake) wait in order.
///
/// `@unchecked Sendable`: like every NIO handler, its mutable state is touched only on its channel's event loop
/// (``attach(_:)`` is called there too: from the channel initializer, or through `execute`/`submit`); it is
/// Sendable only so it can be made off the loop and captured by the closures that attach it.
package final class MessageHandler: ChannelInboundHandler, @unchecked Sendable {
    package typealias InboundIn = ByteBuffer

    /// Messages are flat dictionaries with at most a payload or a list inside.
    package static let limits = PropertyListLimits(maximumDepth: 16)

    private var sink: MessageSink?
    private var waiting: [PropertyList] = []
    private var ended = false

    package init(sink: MessageSink? = nil) {
        self.sink = sink
    }

    /// Attaches the sink; must be called on the channel's event loop.
    package func attach(_ sink: MessageSink) {
        self.sink = sink
        for message in waiting { sink.received(message) }
        waiting = []
        if ended { sink.closed() }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let message: PropertyList
        do {
            message = try BinaryPropertyListDecoder.decode(Data(frame.readableBytesView), limits: Self.limits)
        } catch {
            sink?.malformed(error)
            context.close(promise: nil)
            return
        }
        if let sink { sink.received(message) } else { waiting.append(message) }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        ended = true
        sink?.closed()
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: Error) {
        // Decoder errors (an oversized frame), TLS alerts, resets: the connection is over.
        context.close(promise: nil)
    }
}

extension Channel {
    /// Encodes and writes one message; a message that cannot be encoded is a programming error reported to the caller.
    package func writeMessage(_ message: PropertyList) throws {
        let bytes = try BinaryPropertyListEncoder.encode(message)
        writeAndFlush(ByteBuffer(bytes: bytes), promise: nil)
    }
}
