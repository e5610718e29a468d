#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// How adverts go out (issue 26 item 3): one datagram to given addresses and, where multicast is on, to everyone
/// nearby. UDP sockets on the discovery port (``AdvertSocket``, what agents run), or a ``MemoryNetwork`` inside one
/// process (tests). What arrives goes to the closure the transport was opened with, with its source address.
protocol AdvertTransport: AnyObject, Sendable {
    /// Sends `datagram` to each of `addresses`, and to everyone nearby when multicast is on. A send that fails
    /// changes nothing else: the next advert is tried as usual.
    func send(_ datagram: Data, to addresses: [SocketAddress])
    /// Whether adverts also go to everyone nearby (multicast), not only to the addresses given.
    var multicastIsOn: Bool { get }
    /// Whether sends are failing now (the discovery loop then checks the network every round).
    var isFailing: Bool { get }
    /// Whether the transport hears of network changes by itself (else the discovery loop polls
    /// ``refreshMemberships(log:)``).
    var watchesInterfaces: Bool { get }
    /// Calls `notify` when the network changed (``takeInterfacesChanged()`` then says so).
    func whenInterfacesChange(_ notify: @escaping @Sendable () -> Void)
    /// Whether the network changed since the last call.
    func takeInterfacesChanged() -> Bool
    /// Joins the multicast groups on the interfaces there are now; true when that changed anything.
    func refreshMemberships(log: @escaping @Sendable (String) -> Void) -> Bool
    /// Stops sending and receiving, for good.
    func close()
}

extension AdvertSocket: AdvertTransport {}
