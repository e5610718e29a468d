import BatonCore
import NIOConcurrencyHelpers
import NIOCore

/// An ``AppConduit`` on a Unix socket's NIO channel: the ``MessageHandler`` in its pipeline feeds the owner, and writes
/// go straight to the channel (no hop, no copy: the warm continue's hot path, issue 26 item 5).
///
/// It lets go of the handler once it has attached the owner to it: the handler holds the owner, which holds this
/// conduit, and the channel lets go of its handlers when it closes, so the owner is freed then (issue 25 item 10).
package final class ChannelAppConduit: AppConduit {
    package let channel: Channel
    /// The channel's decoder of messages, until the owner is attached to it; nil where it was attached already (a
    /// test's channel).
    let messages: NIOLockedValueBox<MessageHandler?>

    package init(_ channel: Channel, messages: MessageHandler?) {
        self.channel = channel
        self.messages = NIOLockedValueBox(messages)
    }

    package var eventLoop: EventLoop { channel.eventLoop }
    package var isActive: Bool { channel.isActive }
    package var isWritable: Bool { channel.isWritable }
    package var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    package func peerCredentials() -> EventLoopFuture<PeerCredentials> {
        PeerCredentials.of(channel)
    }

    package func attach(_ sink: MessageSink) {
        messages.withLockedValue { messages in
            defer { messages = nil }
            return messages
        }?.attach(sink)
    }

    package func send(_ message: PropertyList) {
        try? channel.writeMessage(message)
    }

    package func write(_ frame: OutboundFrame) -> EventLoopFuture<Void> {
        channel.writeAndFlush(frame)
    }

    package func setReading(_ reading: Bool) {
        channel.setOption(ChannelOptions.autoRead, value: reading).whenFailure { _ in }
        if reading { channel.read() }
    }

    package func close() {
        channel.close(promise: nil)
    }
}
