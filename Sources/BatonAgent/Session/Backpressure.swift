import BatonClient
import BatonCore
import NIOCore

/// A peer that never reads (issue 11 part 2): what the agent writes to it waits in the channel's outbound buffer,
/// and once that holds more than ``unread`` bytes the channel turns unwritable. Rather than buffer without end, the
/// agent then closes the connection: an app or command line that stopped reading, or a device whose network is
/// gone, is disconnected and its continuations and fetches end with their reasons (C8).
enum Backpressure {
    /// Bytes written but not yet taken by the peer, past which it is disconnected: the largest
    /// activity payload (A11: 1 MiB) sixteen times over, so a legitimate delivery never comes near it.
    static let unread = 16 * 1024 * 1024

    /// The channel option that makes a channel unwritable past ``unread`` (and writable again below half of it).
    static let waterMark = ChannelOptions.Types.WriteBufferWaterMark(low: unread / 2, high: unread)

    /// How much one read takes from a socket: small at first (an idle app's messages are tens of bytes), growing to
    /// 1 MiB under a stream's load, so a 256 KiB data frame arrives in one read instead of being gathered (copied)
    /// from several (issue 13: bytes per syscall and per copy are the stream's cost).
    static let reads = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2_048, maximum: 1 << 20)

    /// Writes `message` to `channel`, unless the peer has left more than ``unread`` bytes unread: then the
    /// connection is closed instead, and false returned.
    @discardableResult
    static func write(_ message: PropertyList, to channel: Channel) -> Bool {
        guard channel.isWritable || !channel.isActive else {
            channel.close(promise: nil)
            return false
        }
        try? channel.writeMessage(message)
        return true
    }
}
