import BatonClient
import BatonCore
import NIOConcurrencyHelpers
import NIOCore

/// A ``LinkConduit`` on a NIO channel whose TLS handshake has completed: its ``MessageHandler`` feeds the link, and
/// writes go straight to the channel (no hop, no copy: a warm continuation's hot path, issue 11).
final class ChannelConduit: LinkConduit {
    let channel: Channel
    /// The channel's handler of messages until the link is attached to it; then the pipeline alone holds it, so the
    /// link (which holds this conduit) and the handler (which holds the link) do not hold each other once it closes.
    private let handler: NIOLockedValueBox<MessageHandler?>

    init(_ channel: Channel, handler: MessageHandler) {
        self.channel = channel
        self.handler = NIOLockedValueBox(handler)
    }

    var eventLoop: EventLoop { channel.eventLoop }
    var isActive: Bool { channel.isActive }
    var remoteAddress: SocketAddress? { channel.remoteAddress }

    func attach(_ sink: MessageSink) {
        handler.withLockedValue { held in
            defer { held = nil }
            return held
        }?.attach(sink)
    }

    func send(_ message: PropertyList) {
        Backpressure.write(message, to: channel)
    }

    func write(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) {
        channel.write(OutboundFrame.data(stream: stream, opener: opener, bytes), promise: nil)
    }

    func flush() {
        channel.flush()
    }

    func close() {
        channel.close(promise: nil)
    }
}
