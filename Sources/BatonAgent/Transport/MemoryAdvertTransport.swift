#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore

/// One device's ``AdvertTransport`` on a ``MemoryNetwork`` (issue 26 item 3): a datagram to an address reaches the
/// transport registered there, and with multicast on, every other one; each on its receiver's loop, one `execute` per
/// datagram, from this transport's address. Nothing is lost and no network changes.
///
/// Sendable, checked: its `let`s are Sendable, and whether it is closed is under its lock.
final class MemoryAdvertTransport: AdvertTransport {
    let network: MemoryNetwork
    /// Where it receives, and the source of what it sends.
    let address: SocketAddress
    let multicastIsOn: Bool
    let loop: EventLoop
    let receive: @Sendable (Data, SocketAddress) -> Void
    let closed = NIOLockedValueBox(false)

    init(network: MemoryNetwork, address: SocketAddress, multicast: Bool, loop: EventLoop, receive: @escaping @Sendable (Data, SocketAddress) -> Void) {
        self.network = network
        self.address = address
        self.multicastIsOn = multicast
        self.loop = loop
        self.receive = receive
    }

    func send(_ datagram: Data, to addresses: [SocketAddress]) {
        guard !closed.withLockedValue({ $0 }) else { return }
        for receiver in network.advertReceivers(of: addresses, everyone: multicastIsOn, from: self) {
            receiver.loop.execute { [address] in
                guard !receiver.closed.withLockedValue({ $0 }) else { return }
                receiver.receive(datagram, address)
            }
        }
    }

    var isFailing: Bool { false }
    var watchesInterfaces: Bool { true }
    func whenInterfacesChange(_ notify: @escaping @Sendable () -> Void) {}
    func takeInterfacesChanged() -> Bool { false }
    func refreshMemberships(log: @escaping @Sendable (String) -> Void) -> Bool { false }

    func close() {
        closed.withLockedValue { $0 = true }
        network.unregister(self)
    }
}
