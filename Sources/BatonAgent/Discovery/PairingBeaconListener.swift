import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Listens for pairing beacons for a few seconds: what `baton pair --find` does (issue 24).
///
/// Its own sockets on the discovery port, like the agent's (`AdvertSocket`): 0.0.0.0 joined to the IPv4 group on
/// every interface with an IPv4 address, `::` (IPv6 only) joined to the link-local group on every interface with a
/// link-local address. Both set SO_REUSEADDR, as the agent's do, so they bind beside a running agent, and Linux
/// hands every multicast datagram to every socket bound to its port: the agent keeps its adverts (beacons are
/// never an advert's 88 bytes, so its receiver drops them unread), and this listener drops adverts (they do not
/// start with the beacon's magic). No agent is needed: pairing comes before any agent exists.
public enum PairingBeaconListener {
    /// Listens on `discoveryPort` for `duration`; `heard` is called (on an event loop) with each device when first
    /// heard. Returns everything heard.
    /// - Throws: `multicastUnavailable` when no interface carries multicast or no group could be joined (with why).
    public static func listen(
        discoveryPort: Int,
        for duration: Duration,
        heard: @escaping @Sendable (PairingBeaconSightings.Sighting) -> Void = { _ in }
    ) async throws -> PairingBeaconSightings {
        let interfaces = Self.multicastInterfaces()
        guard !interfaces.isEmpty else {
            throw BatonAgentError(
                .multicastUnavailable,
                "cannot look for devices: no network interface here is up with an address and the MULTICAST flag (see `ip link`); pair by address instead: baton pair HOST:PORT"
            )
        }
        let sightings = NIOLockedValueBox(PairingBeaconSightings())
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        func bootstrap() -> DatagramBootstrap {
            DatagramBootstrap(group: loop)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            BeaconReceiver { bytes, source in
                                guard let host = source.hostText else { return }
                                if let new = sightings.withLockedValue({ $0.receive(bytes, from: host) }) { heard(new) }
                            }
                        )
                    }
                }
        }
        var channels: [Channel] = []
        var problems: [String] = []
        var joined = 0
        defer { channels.forEach { $0.close(promise: nil) } }
        /// Binds the discovery port at `host` and joins `groupAddress` on each of `devices`; what fails goes into
        /// `problems`, so one family or interface failing leaves the others listening.
        func listen(
            host: String,
            v6Only: Bool,
            groupAddress: String,
            devices: [String: NIONetworkDevice]
        ) async {
            guard !devices.isEmpty else { return }
            let shown = v6Only ? "[\(host)]" : host
            do {
                var bootstrap = bootstrap()
                if v6Only {
                    bootstrap = bootstrap.channelOption(
                        ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only),
                        value: 1
                    )
                }
                let channel = try await bootstrap.bind(host: host, port: discoveryPort).get()
                channels.append(channel)
                let group = try SocketAddress(ipAddress: groupAddress, port: discoveryPort)
                for (name, device) in devices.sorted(by: { $0.key < $1.key }) {
                    do {
                        try await (channel as? MulticastChannel)?.joinGroup(group, device: device).get()
                        joined += 1
                    } catch {
                        problems.append("\(name): cannot join \(groupAddress): \(error)")
                    }
                }
            } catch {
                problems.append("cannot bind \(shown):\(discoveryPort)/udp: \(error)")
            }
        }
        await listen(host: "0.0.0.0", v6Only: false, groupAddress: AdvertSocket.group, devices: interfaces.v4)
        // IPv6 only: the IPv4 socket above takes the IPv4 datagrams for this port.
        await listen(host: "::", v6Only: true, groupAddress: AdvertSocket.group6, devices: interfaces.v6)
        guard joined > 0 else {
            throw BatonAgentError(
                .multicastUnavailable,
                "cannot look for devices: \(problems.joined(separator: "; ")); pair by address instead: baton pair HOST:PORT"
            )
        }
        try await Task.sleep(for: duration)
        for channel in channels {
            try? await channel.close()
        }
        channels = []
        return sightings.withLockedValue { $0 }
    }
}

extension PairingBeaconListener {
    /// The interfaces that carry multicast (as the agent's adverts use them) and are up now: an interface that is
    /// down (Wi-Fi off) keeps its address, and a search on it alone would hear nothing and blame the other device.
    static func multicastInterfaces() -> AdvertSocket.Memberships {
        var found = AdvertSocket.multicastInterfaces()
        found.v4 = found.v4.filter { isUp($0.key) }
        found.v6 = found.v6.filter { isUp($0.key) }
        return found
    }

    /// Whether interface `name` has IFF_UP, from /sys/class/net/NAME/flags; up when that cannot be read.
    static func isUp(_ name: String) -> Bool {
        guard !name.contains("/"), let data = FileManager.default.contents(atPath: "/sys/class/net/\(name)/flags") else { return true }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let flags = UInt32(text.hasPrefix("0x") ? String(text.dropFirst(2)) : text, radix: 16) else { return true }
        return flags & 0x1 != 0
    }

    /// The error when `seconds` of listening heard nobody: what to check, and the way that needs no multicast.
    public static func nothingHeard(seconds: Double, discoveryPort: Int) -> BatonAgentError {
        let time = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
        return BatonAgentError(
            .noDeviceFound,
            "no device waiting to pair was heard in \(time) s. Check that the other device is on the same network, that it runs "
                + "`baton pair` (without an address) and still waits, and that no firewall drops UDP port \(discoveryPort) "
                + "(multicast groups \(AdvertSocket.group) and \(AdvertSocket.group6)) on either device. Across routers or "
                + "VPNs, pair by address: baton pair HOST:PORT"
        )
    }
}

/// Passes on each datagram short enough to be a beacon; longer ones (adverts) are dropped unread.
final class BeaconReceiver: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let receive: @Sendable ([UInt8], SocketAddress) -> Void

    init(receive: @escaping @Sendable ([UInt8], SocketAddress) -> Void) {
        self.receive = receive
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard envelope.data.readableBytes <= PairingBeacon.maximumDatagramLength else { return }
        receive(Array(envelope.data.readableBytesView), envelope.remoteAddress)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A datagram socket carries on after an ICMP error.
    }
}
