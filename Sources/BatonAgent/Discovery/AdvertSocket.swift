import BatonProtocol
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The UDP side of discovery (ISSUE 5 part 2): sends sealed adverts and hands arriving datagrams to the agent.
///
/// Two kinds of socket: one bound to the agent's own port, for unicast from known peers and `--peer` addresses (the
/// way across subnets and VPNs, and the only way on `lo`, which has no multicast); and, unless disabled, one bound to
/// the shared discovery port and joined to the IPv4 group on every multicast-capable interface, so devices on the
/// LAN find each other with nothing configured. Group membership is renewed when the interfaces change.
final class AdvertSocket: @unchecked Sendable {
    /// The IPv4 group adverts go to (administratively scoped, RFC 2365).
    static let group = "239.77.11.1"

    let unicast: Channel
    let multicast: Channel?
    let discoveryPort: Int
    let joined = NIOLockedValueBox<Set<String>>([])

    private init(unicast: Channel, multicast: Channel?, discoveryPort: Int) {
        self.unicast = unicast
        self.multicast = multicast
        self.discoveryPort = discoveryPort
    }

    /// Opens the sockets. `receive` is called on an event loop with each datagram of the right size and its source.
    static func open(
        host: String,
        port: Int,
        discoveryPort: Int?,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        log: @escaping @Sendable (String) -> Void,
        receive: @escaping @Sendable (Data, SocketAddress) -> Void
    ) async throws -> AdvertSocket {
        func bootstrap() -> DatagramBootstrap {
            DatagramBootstrap(group: group)
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
            throw BatonAgentError(.stateUnwritable, "cannot open the advert port \(host):\(port)/udp: \(error)")
        }
        var multicast: Channel?
        if let discoveryPort {
            do {
                multicast = try await bootstrap().bind(host: "0.0.0.0", port: discoveryPort).get()
            } catch {
                log("multicast discovery off: cannot bind 0.0.0.0:\(discoveryPort)/udp: \(error); unicast to known peers only")
            }
        }
        let socket = AdvertSocket(unicast: unicast, multicast: multicast, discoveryPort: discoveryPort ?? 0)
        socket.refreshMemberships(log: log)
        return socket
    }

    /// The interfaces that can carry IPv4 multicast now, by name.
    static func multicastInterfaces() -> [String: NIONetworkDevice] {
        var found: [String: NIONetworkDevice] = [:]
        for device in (try? System.enumerateDevices()) ?? [] where device.multicastSupported {
            guard case .v4 = device.address else { continue }
            found[device.name] = device
        }
        return found
    }

    /// Joins the group on interfaces that appeared; returns whether anything changed (a network change: the caller
    /// re-advertises at once).
    @discardableResult
    func refreshMemberships(log: @escaping @Sendable (String) -> Void) -> Bool {
        guard let multicast = multicast as? MulticastChannel else { return false }
        let interfaces = Self.multicastInterfaces()
        let current = Set(interfaces.keys)
        let previous = joined.withLockedValue { $0 }
        guard current != previous else { return false }
        guard let groupAddress = try? SocketAddress(ipAddress: Self.group, port: discoveryPort) else { return false }
        for name in current.subtracting(previous) {
            guard let device = interfaces[name] else { continue }
            multicast.joinGroup(groupAddress, device: device).whenComplete { result in
                if case .failure(let error) = result { log("multicast on \(name): cannot join \(Self.group): \(error)") }
            }
        }
        joined.withLockedValue { $0 = current }
        if current.isEmpty { log("no interface carries multicast; adverts go by unicast to known peers only") }
        return true
    }

    /// Sends one datagram to each address, and to the group when multicast is on.
    func send(_ datagram: Data, to addresses: [SocketAddress]) {
        let buffer = ByteBuffer(bytes: datagram)
        for address in addresses {
            unicast.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: buffer), promise: nil)
        }
        if let multicast, !joined.withLockedValue({ $0.isEmpty }), let group = try? SocketAddress(ipAddress: Self.group, port: discoveryPort) {
            multicast.writeAndFlush(AddressedEnvelope(remoteAddress: group, data: buffer), promise: nil)
        }
    }

    /// Closes both sockets.
    func close() {
        unicast.close(promise: nil)
        multicast?.close(promise: nil)
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
