import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The UDP side of discovery (ISSUE 5 part 2): sends sealed adverts and hands arriving datagrams to the agent.
///
/// Three kinds of socket: one bound to the agent's own port, for unicast from known peers and `--peer` addresses
/// (the way across subnets and VPNs, and the only way on `lo`, which has no multicast); and, unless disabled, two
/// bound to the shared discovery port: one joined to the IPv4 group on every interface with an IPv4 address, one
/// (IPv6 only) joined to the link-local IPv6 group on every interface with a link-local address. A LAN without
/// IPv4, or whose switches drop IPv4 multicast, still finds its devices. An IPv6 link-local group is one group
/// per link, so adverts are sent once per interface, scoped to it; the receiver learns the sender's scoped
/// address (`fe80::1%eth0`) and dials it back there. Memberships are renewed when the interfaces change.
///
/// `@unchecked Sendable`: its channels and addresses are `let`s set when it opens; the memberships, the only thing
/// that changes, are under their lock (`joined`).
final class AdvertSocket: @unchecked Sendable {
    /// The IPv4 group adverts go to (administratively scoped, RFC 2365).
    static let group = "239.77.11.1"
    /// The IPv6 group adverts go to: link-local scope (ff02::/16, RFC 4291), so it never leaves the link.
    static let group6 = "ff02::77:11:1"

    /// The interfaces whose group memberships are held.
    struct Memberships: Equatable, Sendable {
        /// IPv4: interfaces by name.
        var v4: [String: NIONetworkDevice] = [:]
        /// IPv6: interfaces by name (a new index for the same name is a new interface: join again).
        var v6: [String: NIONetworkDevice] = [:]

        static func == (lhs: Memberships, rhs: Memberships) -> Bool {
            Set(lhs.v4.keys) == Set(rhs.v4.keys) && lhs.v6.mapValues(\.interfaceIndex) == rhs.v6.mapValues(\.interfaceIndex)
        }

        var isEmpty: Bool { v4.isEmpty && v6.isEmpty }
    }

    let unicast: Channel
    let multicast: Channel?
    let multicast6: Channel?
    /// The IPv4 group on the discovery port, when its socket is open.
    let group4Address: SocketAddress?
    /// The IPv6 group on the discovery port (unscoped: ``scoped(_:interface:)`` names the interface), when its
    /// socket is open.
    let group6Address: SocketAddress?
    let joined = NIOLockedValueBox(Memberships())

    private init(unicast: Channel, multicast: Channel?, multicast6: Channel?, discoveryPort: Int) {
        self.unicast = unicast
        self.multicast = multicast
        self.multicast6 = multicast6
        group4Address = multicast == nil ? nil : try? SocketAddress(ipAddress: Self.group, port: discoveryPort)
        group6Address = multicast6 == nil ? nil : try? SocketAddress(ipAddress: Self.group6, port: discoveryPort)
    }

    /// Whether adverts go to a group at all (either family's socket opened).
    var multicastIsOn: Bool { multicast != nil || multicast6 != nil }

    /// The event loop every advert socket runs on.
    var eventLoop: EventLoop { unicast.eventLoop }

    /// Opens the sockets. `receive` is called on an event loop with each datagram of the right size and its source.
    static func open(
        host: String,
        port: Int,
        discoveryPort: Int?,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        log: @escaping @Sendable (String) -> Void,
        receive: @escaping @Sendable (Data, SocketAddress) -> Void
    ) async throws -> AdvertSocket {
        // Every advert socket on one loop: a send to all of them makes no hop between loops.
        let loop = group.next()
        func bootstrap() -> DatagramBootstrap {
            DatagramBootstrap(group: loop)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.maxMessagesPerRead, value: 16)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(DatagramReceiver(receive: receive))
                    }
                }
        }
        let unicast: Channel
        do {
            unicast = try await bootstrap().bind(host: host, port: port).get()
        } catch {
            throw BatonAgentError.cannotListen(on: Agent.joinHostPort(host, port) + "/udp (adverts)", error)
        }
        var multicast: Channel?
        var multicast6: Channel?
        if let discoveryPort {
            do {
                multicast = try await bootstrap().bind(host: "0.0.0.0", port: discoveryPort).get()
            } catch {
                log("IPv4 multicast discovery off: cannot bind 0.0.0.0:\(discoveryPort)/udp: \(error)")
            }
            do {
                // IPv6 only: the IPv4 socket above takes the IPv4 datagrams for this port.
                multicast6 = try await bootstrap()
                    .channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
                    .bind(host: "::", port: discoveryPort).get()
            } catch {
                log("IPv6 multicast discovery off: cannot bind [::]:\(discoveryPort)/udp: \(error)")
            }
            if multicast == nil, multicast6 == nil { log("multicast discovery off; unicast to known peers only") }
        }
        let socket = AdvertSocket(unicast: unicast, multicast: multicast, multicast6: multicast6, discoveryPort: discoveryPort ?? 0)
        socket.refreshMemberships(log: log)
        return socket
    }

    /// The interfaces that can carry multicast now: with an IPv4 address, and with an IPv6 link-local address.
    static func multicastInterfaces() -> Memberships {
        var found = Memberships()
        for device in (try? System.enumerateDevices()) ?? [] where device.multicastSupported {
            switch device.address {
            case .v4:
                found.v4[device.name] = device
            case .v6(let address) where address.address.sin6_scope_id != 0 && device.interfaceIndex > 0:
                // Only link-local addresses carry a scope: the interface has IPv6 on the link.
                found.v6[device.name] = device
            default:
                continue
            }
        }
        return found
    }

    /// Joins the groups on interfaces that appeared; returns whether anything changed (a network change: the
    /// caller re-advertises at once).
    @discardableResult
    func refreshMemberships(log: @escaping @Sendable (String) -> Void) -> Bool {
        guard multicastIsOn else { return false }
        var current = Self.multicastInterfaces()
        if multicast == nil { current.v4 = [:] }
        if multicast6 == nil { current.v6 = [:] }
        let previous = joined.withLockedValue { $0 }
        guard current != previous else { return false }
        if let multicast = multicast as? MulticastChannel, let group = group4Address {
            for (name, device) in current.v4 where previous.v4[name] == nil {
                multicast.joinGroup(group, device: device).whenComplete { result in
                    if case .failure(let error) = result { log("multicast on \(name): cannot join \(Self.group): \(error)") }
                }
            }
        }
        if let multicast6 = multicast6 as? MulticastChannel, let group = group6Address {
            for (name, device) in current.v6 where previous.v6[name]?.interfaceIndex != device.interfaceIndex {
                multicast6.joinGroup(group, device: device).whenComplete { result in
                    if case .failure(let error) = result { log("multicast on \(name): cannot join \(Self.group6): \(error)") }
                }
            }
        }
        joined.withLockedValue { $0 = current }
        if current.isEmpty { log("no interface carries multicast; adverts go by unicast to known peers only") }
        return true
    }

    /// Sends one datagram to each address, and to the groups when multicast is on: the IPv4 group once, the IPv6
    /// link-local group once on each interface.
    func send(_ datagram: Data, to addresses: [SocketAddress]) {
        let buffer = ByteBuffer(bytes: datagram)
        for address in addresses {
            unicast.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: buffer), promise: nil)
        }
        let memberships = joined.withLockedValue { $0 }
        if let multicast, !memberships.v4.isEmpty, let group = group4Address {
            multicast.writeAndFlush(AddressedEnvelope(remoteAddress: group, data: buffer), promise: nil)
        }
        if let multicast6, let group = group6Address {
            for device in memberships.v6.values {
                guard let scoped = Self.scoped(group, interface: device.interfaceIndex) else { continue }
                multicast6.writeAndFlush(AddressedEnvelope(remoteAddress: scoped, data: buffer), promise: nil)
            }
        }
    }

    /// `group` on interface `index` (its scope id): where a link-local datagram goes out.
    static func scoped(_ group: SocketAddress, interface index: Int) -> SocketAddress? {
        guard case .v6(let address) = group, let scope = UInt32(exactly: index) else { return nil }
        var raw = address.address
        raw.sin6_scope_id = scope
        return SocketAddress(raw, host: "")
    }

    /// Closes every socket.
    func close() {
        unicast.close(promise: nil)
        multicast?.close(promise: nil)
        multicast6?.close(promise: nil)
    }
}

/// Passes each datagram of advert size on; anything else is dropped unread.
final class DatagramReceiver: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let receive: @Sendable (Data, SocketAddress) -> Void

    init(receive: @escaping @Sendable (Data, SocketAddress) -> Void) {
        self.receive = receive
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard envelope.data.readableBytes == AdvertKeys.datagramLength else { return }
        receive(Data(envelope.data.readableBytesView), envelope.remoteAddress)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP unreachable from a peer that is down surfaces here on Linux; a datagram socket carries on.
    }
}
