import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOPosix

/// Sends a waiting `baton pair`'s ``PairingBeacon`` to the adverts' groups (issue 24): the IPv4 group
/// 239.77.11.1 once on every interface with an IPv4 address, the link-local IPv6 group ff02::77:11:1 once on every
/// interface with a link-local address, at the discovery port; TTL and hop limit 1 (the kernel's default for
/// multicast), so it never leaves the link. Nowhere else: no unicast, no broadcast.
///
/// Its own sockets, bound to ephemeral ports: sending needs no bind to the discovery port, so an agent on the same
/// machine is not touched. The interfaces are looked at again before every round, so a network that appears while
/// the command waits is announced on from the next round.
public struct PairingBeaconAnnouncer: Sendable {
    /// The datagram sent.
    public let beacon: PairingBeacon
    /// The port of the groups (the agent's discovery port, 47810 by default).
    public let discoveryPort: Int
    /// Time between rounds.
    public let interval: Duration

    /// An announcer of `beacon` to the groups on `discoveryPort`, every `interval`.
    public init(beacon: PairingBeacon, discoveryPort: Int, interval: Duration = .seconds(1)) {
        self.beacon = beacon
        self.discoveryPort = discoveryPort
        self.interval = interval
    }

    /// The interfaces a round would announce on now (up, with multicast), by family (`eth0`); both empty when none
    /// carries multicast.
    public static func interfaces() -> (v4: [String], v6: [String]) {
        let found = PairingBeaconListener.multicastInterfaces()
        return (found.v4.keys.sorted(), found.v6.keys.sorted())
    }

    /// Announces until the task is cancelled, then closes its sockets. `log` hears what fails (a socket that cannot
    /// be opened, an interface that refuses the option); a failed round is tried again at the next.
    public func run(log: @escaping @Sendable (String) -> Void = { _ in }) async {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let buffer = ByteBuffer(bytes: beacon.datagram)
        // IPv4: one socket per interface, its IP_MULTICAST_IF set to that interface's address (a socket sends a
        // group's datagrams out of one interface only). Keyed by name and address: a new address, a new socket.
        var senders4: [String: Channel] = [:]
        // IPv6: one socket; each copy's scope id names its interface.
        var sender6: Channel?
        var reported: Set<String> = []
        func report(_ line: String) {
            if reported.insert(line).inserted { log(line) }
        }
        defer {
            senders4.values.forEach { $0.close(promise: nil) }
            sender6?.close(promise: nil)
        }
        while !Task.isCancelled {
            let current = PairingBeaconListener.multicastInterfaces()
            var wanted: [String: NIONetworkDevice] = [:]
            for (name, device) in current.v4 {
                wanted["\(name) \(device.address?.ipAddress ?? "")"] = device
            }
            for (key, channel) in senders4 where wanted[key] == nil {
                channel.close(promise: nil)
                senders4[key] = nil
            }
            for (key, device) in wanted where senders4[key] == nil {
                guard case .v4(let address) = device.address else { continue }
                do {
                    let channel = try await DatagramBootstrap(group: loop).bind(host: "0.0.0.0", port: 0).get()
                    guard let options = channel as? SocketOptionProvider else {
                        channel.close(promise: nil)
                        report("pairing beacon on \(device.name): this channel cannot choose its interface")
                        continue
                    }
                    try await options.setIPMulticastIF(address.address.sin_addr).get()
                    senders4[key] = channel
                } catch {
                    report("pairing beacon on \(device.name) (IPv4): \(error)")
                }
            }
            if sender6 == nil, !current.v6.isEmpty {
                do {
                    sender6 = try await DatagramBootstrap(group: loop)
                        .channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
                        .bind(host: "::", port: 0).get()
                } catch {
                    report("pairing beacon (IPv6): \(error)")
                }
            }
            if let group = try? SocketAddress(ipAddress: AdvertSocket.group, port: discoveryPort) {
                for channel in senders4.values {
                    channel.writeAndFlush(AddressedEnvelope(remoteAddress: group, data: buffer), promise: nil)
                }
            }
            if let sender6, let group = try? SocketAddress(ipAddress: AdvertSocket.group6, port: discoveryPort) {
                for device in current.v6.values {
                    guard let scoped = AdvertSocket.scoped(group, interface: device.interfaceIndex) else { continue }
                    sender6.writeAndFlush(AddressedEnvelope(remoteAddress: scoped, data: buffer), promise: nil)
                }
            }
            do {
                try await Task.sleep(for: interval)
            } catch {
                break
            }
        }
    }
}
