import BatonClient
import BatonCore
import NIOCore

/// What a ``PeerLink`` runs over (issue 26 item 3): one connection to another device, already verified, carrying whole
/// session messages and continuation stream data. A TCP connection with mutual TLS 1.3 (``ChannelConduit``), or a pair
/// of ends inside one process (``MemoryConduit``). The link's logic (the multiplexer, its waiters, streams, keepalive)
/// is the same over either.
///
/// Inbound, the conduit drives the link as a ``MessageSink``: each frame is delivered on ``eventLoop``, in order, and
/// `closed()` once, when the conduit has closed (by either side).
protocol LinkConduit: AnyObject, Sendable {
    /// The loop the link's inbound frames, its close and its timers run on.
    var eventLoop: EventLoop { get }
    /// Whether the connection is still open.
    var isActive: Bool { get }
    /// The peer's address, for logs and the roster's `host` (nil where it has none).
    var remoteAddress: SocketAddress? { get }
    /// Delivers inbound frames to `sink` from now on (those that came before wait, in order). On ``eventLoop``.
    func attach(_ sink: MessageSink)
    /// Writes and flushes one session message; a peer that has stopped reading is disconnected instead
    /// (``Backpressure``).
    func send(_ message: PropertyList)
    /// Writes one data frame of a continuation stream (at most ``Frame/maximumData`` bytes), not flushed.
    func write(stream: UInt64, opener: Bool, _ bytes: ByteBuffer)
    /// Flushes what ``write(stream:opener:_:)`` wrote.
    func flush()
    /// Closes the connection; the link hears `closed()` once it has.
    func close()
}
