import BatonCore
import NIOCore

/// How a device's links reach other devices (issue 26 item 3): it listens and dials, and gives ``PeerLinks`` each
/// connection once its peer is verified, as a conduit and the device it proved to be. TLS 1.3 over TCP
/// (``NIOPeerTransport``, what agents run), or a ``MemoryNetwork`` inside one process (tests). Which links are kept,
/// and for what, is ``PeerLinks``' alone, over either.
protocol PeerTransport: AnyObject, Sendable {
    /// Connects to `host:port`, accepting only a device `policy` allows. Completes on the conduit's loop, before
    /// anything the connection carries has reached a link.
    func dial(host: String, port: Int, policy: PeerPolicy) -> EventLoopFuture<PeerArrival>
    /// Accepts connections on `host:port` from devices the transport's own policy allows; each, once verified, goes
    /// to `arrived` on its conduit's loop, before anything it carries has reached a link.
    func listen(host: String, port: Int, arrived: @escaping @Sendable (PeerArrival) -> Void) async throws -> PeerListener
    /// Told of every connection refused while its peer was verified, in either direction (the agent logs them once
    /// per kind: issue 25 item 12). Set once, before listening or dialling.
    var refused: (@Sendable (SessionRefusal) -> Void)? { get set }
    /// The most connections open at once since the last call, and how many are open now.
    func takePeak() -> (peak: Int, open: Int)
    /// The most connections open at once since the last ``takePeak()``.
    var peak: Int { get }
}

/// A connection whose peer has been verified: what a ``PeerLink`` is made of.
struct PeerArrival: Sendable {
    let conduit: any LinkConduit
    /// The device at the other end, as its certificate (or the memory network) proved.
    let peer: DeviceID
    /// Its address, for messages.
    let name: String
}

/// A transport's listener: the port it took, and what stops it.
struct PeerListener: Sendable {
    let port: Int
    let close: @Sendable () async -> Void
}
