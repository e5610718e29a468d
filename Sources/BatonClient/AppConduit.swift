import BatonCore
import NIOCore

/// What a connection between an app (or a command line) and its device's agent runs over (issue 26 item 3), seen
/// from either end: the agent's ``IPCConnection`` and the app's ``AgentClient`` alike. A Unix socket
/// (``ChannelAppConduit``), or a pair of ends inside one process (``MemoryAppConduit``). What is said over it, and
/// the checks of who is at the other end, are the same over either.
///
/// Inbound, the conduit drives its owner as a ``MessageSink``: each frame is delivered on ``eventLoop``, in order,
/// and `closed()` once, when the conduit has closed (by either side).
package protocol AppConduit: AnyObject, Sendable {
    /// The loop inbound frames, the close and the owner's timers run on.
    var eventLoop: EventLoop { get }
    /// Whether the connection is still open.
    var isActive: Bool { get }
    /// False while the other end has left too much unread (``Backpressure`` on the agent's side).
    var isWritable: Bool { get }
    /// Completes once the connection has closed.
    var closeFuture: EventLoopFuture<Void> { get }
    /// The process at the other end as the kernel says (`SO_PEERCRED`); in memory, this process.
    func peerCredentials() -> EventLoopFuture<PeerCredentials>
    /// Delivers inbound frames to `sink` from now on (those that came before wait, in order). On ``eventLoop``.
    func attach(_ sink: MessageSink)
    /// Encodes, writes and flushes one message.
    func send(_ message: PropertyList)
    /// Writes and flushes one frame (a continuation stream's message or data); completes once it is written.
    func write(_ frame: OutboundFrame) -> EventLoopFuture<Void>
    /// Whether inbound frames are read (a stream's app end is not read while its bytes could not go on: F3).
    func setReading(_ reading: Bool)
    /// Closes the connection; the owner hears `closed()` once it has.
    func close()
}
