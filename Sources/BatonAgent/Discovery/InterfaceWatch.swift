import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The kernel telling the agent that the network interfaces changed (issue 26 item 6): a `NETLINK_ROUTE` socket
/// joined to the link and address groups, read on an event loop. An idle agent with multicast on no longer looks at
/// the interfaces every 10 s: each look ran in a Swift concurrency task, and by then libdispatch had let the pool's
/// thread go (after 5 s idle), so every look started a thread and ended one (6 threads and 0.4 wakeups a second
/// more, a minute, in both agents); and a new interface is now joined at once instead of within 10 s.
///
/// The messages are not read, only counted: any burst of them means "look again", and the look
/// (``AdvertSocket/refreshMemberships(log:)``) compares the whole set of interfaces with the one joined, so a
/// message the kernel dropped under a flood of changes costs nothing once a later one arrives.
final class InterfaceWatch: Sendable {
    private let channel: Channel

    private init(channel: Channel) {
        self.channel = channel
    }

    /// Whether the kernel's messages still arrive (the channel closes on a read error).
    var isWatching: Bool { channel.isActive }

    /// Opens the socket on `loop`. `changed` runs on `loop` once after each batch of messages; `ended` once when
    /// the watch stops for good (closed by ``close()``, or a read error). Fails where netlink is not allowed (a
    /// sandbox): the caller then looks at the interfaces on a timer instead.
    static func open(
        on loop: EventLoop,
        changed: @escaping @Sendable () -> Void,
        ended: @escaping @Sendable () -> Void
    ) -> EventLoopFuture<InterfaceWatch> {
        let fd: CInt
        do {
            fd = try Self.boundSocket()
        } catch {
            return loop.makeFailedFuture(error)
        }
        return NIOPipeBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Reader(changed: changed))
                }
            }
            .takingOwnershipOfDescriptor(input: fd)
            .map { channel in
                channel.closeFuture.whenComplete { _ in ended() }
                return InterfaceWatch(channel: channel)
            }
    }

    func close() {
        channel.close(promise: nil)
    }

    /// Netlink's route family, and the groups of link and address changes (`<linux/rtnetlink.h>`, which Glibc's
    /// module does not export).
    private enum Netlink {
        static let route: CInt = 0  // NETLINK_ROUTE
        static let groups: UInt32 = 0x1 | 0x10 | 0x100  // RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR
        static let receiveBuffer: CInt = 256 * 1024  // room for a burst (many interfaces at once) between reads
    }

    /// `struct sockaddr_nl`: family, padding, port id (0: the kernel assigns one), groups.
    private struct Address {
        var family = sa_family_t(AF_NETLINK)
        var pad: UInt16 = 0
        var pid: UInt32 = 0
        var groups: UInt32
    }

    /// A netlink socket bound to the groups, or an `IOError` naming the call that failed.
    private static func boundSocket() throws -> CInt {
        let fd = socket(AF_NETLINK, CInt(SOCK_RAW.rawValue) | CInt(SOCK_CLOEXEC.rawValue), Netlink.route)
        guard fd >= 0 else { throw IOError(errnoCode: errno, reason: "socket(AF_NETLINK)") }
        var size = Netlink.receiveBuffer
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))  // best effort
        var address = Address(groups: Netlink.groups)
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<Address>.size))
            }
        }
        guard bound == 0 else {
            let error = IOError(errnoCode: errno, reason: "bind(AF_NETLINK)")
            closeDescriptor(fd)
            throw error
        }
        return fd
    }

    /// Calls `changed` after each batch of reads: one look for a burst of messages.
    private final class Reader: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        private let changed: @Sendable () -> Void
        private var readSome = false

        init(changed: @escaping @Sendable () -> Void) {
            self.changed = changed
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            readSome = true
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            guard readSome else { return }
            readSome = false
            changed()
        }
    }
}

/// `close(2)`, by another name: inside ``InterfaceWatch`` plain `close` is its own method.
private func closeDescriptor(_ fd: CInt) { _ = close(fd) }
