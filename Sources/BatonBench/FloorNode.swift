import ArgumentParser
import BatonAgent
import BatonCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

extension BenchCommand {
    /// Hidden: one process of the handoff floor pipeline (issue 26 item 5), started twice by `baton bench handoff`
    /// (as device A and device B). Plain swift-nio on one event loop, as an agent: a Unix socket for its apps, a UDP
    /// socket for adverts, a mutual TLS 1.3 listener and link; none of Baton's agent in between.
    struct FloorNode: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "floor-node",
            abstract: "One process of `baton bench handoff`'s floor pipeline (started by it).",
            discussion: """
                Listens on --socket, on a UDP port and a TLS port, prints "ports UDP TLS", then reads the peer's \
                "UDP TLS" from standard input and relays frames until standard input ends.
                """,
            shouldDisplay: false
        )

        @Option(help: "The Unix socket the bench's apps connect to.")
        var socket: String

        func run() throws {
            let (node, datagramPort, linkPort) = try HandoffFloorNode.start(socketPath: socket)
            print("ports \(datagramPort) \(linkPort)")
            fflush(nil)
            let fields = (readLine() ?? "").split(separator: " ").compactMap { Int($0) }
            guard fields.count == 2 else { throw CommandLineError("floor-node: expected the peer's \"UDP TLS\" ports on standard input") }
            try node.meet(datagramPort: fields[0], linkPort: fields[1])
            // Until the bench closes standard input (or exits).
            while readLine() != nil {}
            try node.close()
        }
    }
}

/// What a floor node knows, touched only on its one event loop (no locks, as the handoff coordinator should be).
final class FloorNodeState {
    /// The app's connection, and the watcher's (the bench process's, after their hello).
    var app: Channel?
    var watcher: Channel?
    /// B: its TLS connection to A, kept open between continues (a warm session); nil after a drop.
    var link: Channel?
    /// A: the TLS connection the last fetch came on, to reply on.
    var asker: Channel?
    /// Its own UDP socket, and the peer's UDP and TLS addresses.
    var datagram: Channel?
    var peerDatagram: SocketAddress?
    var peerLink: SocketAddress?
    /// What it listens on (closed at the end).
    var listeners: [Channel] = []
}

/// One floor node: relays each ``FloorFrame`` one hop onwards, adding the moment it read it.
struct HandoffFloorNode: Sendable {
    /// An advert's size on the wire (the UDP baseline's).
    static let datagramSize = 88

    let loop: EventLoop
    let state: NIOLoopBound<FloorNodeState>
    let clientContext: NIOSSLContext
    let serverContext: NIOSSLContext

    /// Binds the Unix socket, the UDP socket and the TLS listener (the agent's TLS configuration, any device's
    /// certificate accepted as the TLS baseline does), all on one event loop of the shared group. Returns the node
    /// and its UDP and TLS ports.
    static func start(socketPath: String) throws -> (node: HandoffFloorNode, datagramPort: Int, linkPort: Int) {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let identity = try DeviceIdentity.generate(name: "floor")
        let node = HandoffFloorNode(
            loop: loop,
            state: try loop.submit { NIOLoopBound(FloorNodeState(), eventLoop: loop) }.wait(),
            clientContext: try NIOSSLContext(configuration: TLSPipeline.configuration(identity: identity, role: .client)),
            serverContext: try NIOSSLContext(configuration: TLSPipeline.configuration(identity: identity, role: .server))
        )
        let apps = try ServerBootstrap(group: loop)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addFloorHandlers(FloorRelay(node)) }
            }
            .bind(unixDomainSocketPath: socketPath, cleanupExistingSocketFile: true).wait()
        let links = try ServerBootstrap(group: loop)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let verify = TLSPipeline.verifier(.anyDevice, presented: NIOLockedValueBox(nil))
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: node.serverContext, customVerificationCallback: verify))
                    try channel.pipeline.syncOperations.addFloorHandlers(FloorRelay(node))
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        let datagram = try DatagramBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(FloorDatagramRelay(node)) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        try loop.submit {
            node.state.value.datagram = datagram
            node.state.value.listeners = [apps, links, datagram]
        }.wait()
        return (node, datagram.localAddress?.port ?? 0, links.localAddress?.port ?? 0)
    }

    /// Learns where the other node listens.
    func meet(datagramPort: Int, linkPort: Int) throws {
        let datagramAddress = try SocketAddress(ipAddress: "127.0.0.1", port: datagramPort)
        let linkAddress = try SocketAddress(ipAddress: "127.0.0.1", port: linkPort)
        try loop.submit {
            state.value.peerDatagram = datagramAddress
            state.value.peerLink = linkAddress
        }.wait()
    }

    func close() throws {
        let listeners = try loop.submit { state.value.listeners }.wait()
        for channel in listeners { try? channel.close().wait() }
    }

    /// One frame read on `channel` (on the loop): sent one hop onwards, stamped.
    func received(_ frame: FloorFrame, on channel: Channel) {
        let now = monotonicNanoseconds()
        let state = state.value
        switch frame.kind {
        case .hello:
            switch frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt8.self).flatMap(FloorFrame.Role.init) {
            case .app: state.app = channel
            case .watcher: state.watcher = channel
            case .control, nil: break
            }
            channel.writeAndFlush(frame, promise: nil)  // ready: the bench waits for this before it measures
        case .current where channel === state.datagram:
            state.watcher?.writeAndFlush(frame.stamped(now), promise: nil)
        case .current:
            guard let peer = state.peerDatagram, let datagram = state.datagram else { return }
            let bytes = frame.stamped(now).datagram(size: Self.datagramSize, allocator: channel.allocator)
            datagram.writeAndFlush(AddressedEnvelope(remoteAddress: peer, data: bytes), promise: nil)
        case .continue:
            let fetch = FloorFrame(.fetch, stamps: [now])
            if let link = state.link {
                link.writeAndFlush(fetch, promise: nil)
            } else {
                openLink(then: fetch)
            }
        case .drop:
            state.link?.close(promise: nil)
            state.link = nil
        case .fetch:
            state.asker = channel
            state.app?.writeAndFlush(FloorFrame(.save, stamps: frame.stamped(now).stamps), promise: nil)
        case .saved:
            state.asker?.writeAndFlush(FloorFrame(.reply, stamps: frame.stamped(now).stamps, payload: frame.payload), promise: nil)
        case .reply:
            state.app?.writeAndFlush(FloorFrame(.deliver, stamps: frame.stamped(now).stamps, payload: frame.payload), promise: nil)
        case .save, .deliver:
            break  // for apps only
        }
    }

    /// B, cold: a new mutual TLS 1.3 connection to A, and `fetch` on it once the handshake is done, stamped with when
    /// the handshake completed (from B's last stamp: the bare handshake the cold target adds to the warm floor).
    func openLink(then fetch: FloorFrame) {
        guard let peer = state.value.peerLink else { return }
        let node = self
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let verify = TLSPipeline.verifier(.anyDevice, presented: NIOLockedValueBox(nil))
                    try channel.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(context: node.clientContext, serverHostname: nil, customVerificationCallback: verify)
                    )
                    let relay = FloorRelay(node)
                    relay.afterHandshake = fetch
                    try channel.pipeline.syncOperations.addFloorHandlers(relay)
                }
            }
            .connect(to: peer)
            .whenSuccess { channel in node.state.value.link = channel }
    }
}

/// Hands each frame a stream connection reads to its node; on a new TLS link, writes the first fetch once the
/// handshake completes.
final class FloorRelay: ChannelInboundHandler {
    typealias InboundIn = FloorFrame

    let node: HandoffFloorNode
    /// The frame to write when the TLS handshake completes, stamped with that moment.
    var afterHandshake: FloorFrame?

    init(_ node: HandoffFloorNode) {
        self.node = node
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        node.received(unwrapInboundIn(data), on: context.channel)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent, let frame = afterHandshake {
            afterHandshake = nil
            context.channel.writeAndFlush(frame.stamped(), promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Hands each datagram (a ``FloorFrame`` body) to its node.
final class FloorDatagramRelay: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let node: HandoffFloorNode

    init(_ node: HandoffFloorNode) {
        self.node = node
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var body = unwrapInboundIn(data).data
        guard let frame = try? FloorFrame(body: &body) else { return }
        node.received(frame, on: context.channel)
    }
}
