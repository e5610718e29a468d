import BatonProtocol
import Dispatch
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The UDP side of discovery (ISSUE 5 part 2): sends sealed adverts and hands arriving datagrams to the agent.
///
/// Three kinds of socket: one bound to the agent's own port, for unicast from known peers and `--peer` addresses
/// (the way across subnets and VPNs, and the only way on `lo`, which has no multicast); and, unless disabled, two
/// bound to the shared discovery port: one joined to the IPv4 group on every interface with an IPv4 address, one
/// (IPv6 only) joined to the link-local IPv6 group on every interface with a link-local address. A LAN without
/// IPv4, or whose switches drop IPv4 multicast, still finds its devices. An IPv6 link-local group is one group
/// per link, so adverts are sent once per interface, scoped to it; the receiver learns the sender's scoped
/// address (`fe80::1%eth0`) and dials it back there. Memberships are renewed when the interfaces change: an
/// interface that goes (a link down takes its IPv6 link-local address) is left, and joined again when it is back;
/// the kernel says when they change (``InterfaceWatch``), so nothing looks while the network stays as it is.
///
/// Failures (issue 25 item 1): each socket is opened here (``AdvertSender``) and NIO reads from a duplicate of it,
/// while adverts are sent with `sendto` on the original, so a failed send (a firewall's EPERM, a link that is down)
/// never closes anything; it is logged once (``AdvertSocketHealth/SendFailures``). A socket that closes anyway is
/// reopened with backoff (``AdvertSocketHealth/ReopenBackoff``), its memberships joined again.
///
/// Sendable, checked: the sockets, their health, the memberships and the interface watch change under their locks
/// (`slots`, `sendHealth`, `joined`, `interfaceChanges`); the rest are `let`s.
final class AdvertSocket: Sendable {
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
            Set(lhs.v4.keys) == Set(rhs.v4.keys)
                && lhs.v6.mapValues(\.interfaceIndex) == rhs.v6.mapValues(\.interfaceIndex)
        }

        var isEmpty: Bool { v4.isEmpty && v6.isEmpty }
    }

    /// Which of the three sockets.
    enum Kind: String, Sendable, CaseIterable {
        case unicast
        case multicast4 = "IPv4 multicast"
        case multicast6 = "IPv6 multicast"
    }

    /// One open socket: NIO's channel reading it, and the descriptor adverts are sent from.
    struct Open {
        let channel: Channel
        let sender: AdvertSender
    }

    /// Each socket while open (a kind that never opened, such as multicast with `--no-multicast`, is absent), and
    /// its reopening state.
    struct Slot {
        let address: SocketAddress
        var open: Open?
        var backoff = AdvertSocketHealth.ReopenBackoff()
    }

    /// The kernel's word that the interfaces changed, and who hears of it.
    struct InterfaceChanges {
        /// Nil with multicast off, or where netlink is not allowed: the advert loop then looks on a timer.
        var watch: InterfaceWatch?
        /// The memberships changed with the interfaces since the advert loop last asked.
        var pending = false
        var notify: (@Sendable () -> Void)?
    }

    let slots: NIOLockedValueBox<[Kind: Slot]>
    let interfaceChanges = NIOLockedValueBox(InterfaceChanges())
    let sendHealth = NIOLockedValueBox(AdvertSocketHealth.SendFailures())
    let joined = NIOLockedValueBox(Memberships())
    /// Set by ``close()``: a channel closing then is no failure.
    let closing = NIOLockedValueBox(false)
    let loop: EventLoop
    let log: @Sendable (String) -> Void
    let warn: @Sendable (String) -> Void
    let receive: @Sendable (Data, SocketAddress) -> Void
    /// The agent's clock: its uptime times the health machines and the readers' pacing (issue 26 item 2).
    let clock: AgentClock
    /// The IPv4 group on the discovery port, when its socket is open.
    let group4Address: SocketAddress?
    /// The IPv6 group on the discovery port (unscoped: ``scoped(_:interface:)`` names the interface), when its
    /// socket is open.
    let group6Address: SocketAddress?

    private init(
        slots: [Kind: Slot],
        discoveryPort: Int,
        loop: EventLoop,
        log: @escaping @Sendable (String) -> Void,
        warn: @escaping @Sendable (String) -> Void,
        clock: AgentClock,
        receive: @escaping @Sendable (Data, SocketAddress) -> Void
    ) {
        self.clock = clock
        self.slots = NIOLockedValueBox(slots)
        self.loop = loop
        self.log = log
        self.warn = warn
        self.receive = receive
        group4Address = slots[.multicast4] == nil ? nil : try? SocketAddress(ipAddress: Self.group, port: discoveryPort)
        group6Address =
            slots[.multicast6] == nil ? nil : try? SocketAddress(ipAddress: Self.group6, port: discoveryPort)
    }

    /// Whether adverts go to a group at all (either family's socket opened).
    var multicastIsOn: Bool { group4Address != nil || group6Address != nil }

    /// The event loop every advert socket runs on.
    var eventLoop: EventLoop { loop }

    /// Whether the last round of sends had failures (the advert loop then checks the interfaces each round, so a
    /// link that comes back is joined and advertised on at once).
    var isFailing: Bool { sendHealth.withLockedValue { $0.since != nil } }

    /// Opens the sockets. `receive` is called on an event loop with each datagram of the right size and its source.
    /// `warn` says what went wrong (a send failing, a socket closing); `log` the rest.
    static func open(
        host: String,
        port: Int,
        discoveryPort: Int?,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        log: @escaping @Sendable (String) -> Void,
        warn: (@Sendable (String) -> Void)? = nil,
        clock: AgentClock = .system,
        receive: @escaping @Sendable (Data, SocketAddress) -> Void
    ) async throws -> AdvertSocket {
        // Every advert socket on one loop: a send to all of them makes no hop between loops.
        let loop = group.next()
        var slots: [Kind: Slot] = [:]
        var opened: [Kind: Open] = [:]
        do {
            let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
            let open = try await Self.openSocket(address, kind: .unicast, loop: loop, log: log, clock: clock, receive: receive)
            opened[.unicast] = open
            // The address with the port it got (`--port 0`): a reopened socket binds there again.
            slots[.unicast] = Slot(address: open.channel.localAddress ?? address)
        } catch {
            throw BatonAgentError.cannotListen(on: Agent.joinHostPort(host, port) + "/udp (adverts)", error)
        }
        if let discoveryPort {
            do {
                let address = try SocketAddress(ipAddress: "0.0.0.0", port: discoveryPort)
                let open = try await Self.openSocket(address, kind: .multicast4, loop: loop, log: log, clock: clock, receive: receive)
                opened[.multicast4] = open
                slots[.multicast4] = Slot(address: open.channel.localAddress ?? address)
            } catch {
                log("IPv4 multicast discovery off: cannot bind 0.0.0.0:\(discoveryPort)/udp: \(error)")
            }
            do {
                // IPv6 only: the IPv4 socket above takes the IPv4 datagrams for this port.
                let address = try SocketAddress(ipAddress: "::", port: discoveryPort)
                let open = try await Self.openSocket(address, kind: .multicast6, loop: loop, log: log, clock: clock, receive: receive)
                opened[.multicast6] = open
                slots[.multicast6] = Slot(address: open.channel.localAddress ?? address)
            } catch {
                log("IPv6 multicast discovery off: cannot bind [::]:\(discoveryPort)/udp: \(error)")
            }
            if slots[.multicast4] == nil, slots[.multicast6] == nil {
                log("multicast discovery off; unicast to known peers only")
            }
        }
        let socket = AdvertSocket(
            slots: slots,
            discoveryPort: discoveryPort ?? 0,
            loop: loop,
            log: log,
            warn: warn ?? log,
            clock: clock,
            receive: receive
        )
        for (kind, open) in opened { socket.adopt(open, kind: kind) }
        socket.refreshMemberships(log: log)
        if socket.multicastIsOn { await socket.watchInterfaces() }
        return socket
    }

    /// Whether the kernel tells this socket of interface changes (otherwise the advert loop looks every
    /// ``Agent/membershipCheckInterval``).
    var watchesInterfaces: Bool { interfaceChanges.withLockedValue { $0.watch?.isWatching == true } }

    /// Calls `notify` (on the event loop) each time the memberships change with the interfaces, and once if the
    /// kernel's word stops (the caller then looks on its timer).
    func whenInterfacesChange(_ notify: @escaping @Sendable () -> Void) {
        interfaceChanges.withLockedValue { $0.notify = notify }
    }

    /// Whether the memberships changed with the interfaces since the last call (the caller advertises again at once).
    func takeInterfacesChanged() -> Bool {
        interfaceChanges.withLockedValue { changes in
            defer { changes.pending = false }
            return changes.pending
        }
    }

    /// Starts hearing of interface changes from the kernel (issue 26 item 6); where that is not allowed, says so.
    private func watchInterfaces() async {
        let opened = InterfaceWatch.open(
            on: loop,
            changed: { [weak self] in self?.interfacesChanged() },
            ended: { [weak self] in self?.interfaceWatchEnded() }
        )
        do {
            let watch = try await opened.get()
            interfaceChanges.withLockedValue { $0.watch = watch }
        } catch {
            log("network interfaces: the kernel's change messages cannot be had (\(error)); looking every \(Agent.membershipCheckInterval / 1000) s")
        }
    }

    /// The kernel says the interfaces changed: join and leave to match, and tell the advert loop when that changed
    /// anything. On the event loop.
    private func interfacesChanged() {
        guard !closing.withLockedValue({ $0 }), refreshMemberships(log: log) else { return }
        let notify = interfaceChanges.withLockedValue { changes in
            changes.pending = true
            return changes.notify
        }
        notify?()
    }

    /// The watch's channel closed: unless the agent is closing, the advert loop goes back to looking on its timer.
    private func interfaceWatchEnded() {
        guard !closing.withLockedValue({ $0 }) else { return }
        warn("network interfaces: the kernel's change messages stopped; looking every \(Agent.membershipCheckInterval / 1000) s")
        interfaceChanges.withLockedValue(\.notify)?()
    }

    /// Opens one socket: bound here, read by NIO from a duplicate of it.
    static func openSocket(
        _ address: SocketAddress,
        kind: Kind,
        loop: EventLoop,
        log: @escaping @Sendable (String) -> Void,
        clock: AgentClock,
        receive: @escaping @Sendable (Data, SocketAddress) -> Void
    ) async throws -> Open {
        try await openSocketFuture(address, kind: kind, loop: loop, log: log, clock: clock, receive: receive).get()
    }

    /// ``openSocket(_:kind:loop:log:clock:receive:)`` as a future on `loop`: a reopening runs on the event loop alone, so a
    /// busy Swift concurrency pool (every thread blocked in someone's synchronous call) cannot hold it back.
    static func openSocketFuture(
        _ address: SocketAddress,
        kind: Kind,
        loop: EventLoop,
        log: @escaping @Sendable (String) -> Void,
        clock: AgentClock,
        receive: @escaping @Sendable (Data, SocketAddress) -> Void
    ) -> EventLoopFuture<Open> {
        let sender: AdvertSender
        let copy: NIOBSDSocket.Handle
        do {
            sender = try AdvertSender.bound(to: address, v6Only: kind == .multicast6)
            do {
                copy = try sender.duplicate()
            } catch {
                sender.close()
                throw error
            }
        } catch {
            return loop.makeFailedFuture(error)
        }
        return DatagramBootstrap(group: loop)
            .channelOption(.maxMessagesPerRead, value: UInt(AdvertReader.readsPerTick))
            .channelOption(.datagramVectorReadMessageCount, value: AdvertReader.vectorReadCount)
            // NIO divides one receive buffer among a vector read's datagrams: a slot for each, larger than an advert
            // (a longer datagram is cut short there, and then dropped for its length, as it would be anyway).
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: AdvertReader.vectorReadCount * AdvertReader.slotBytes))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AdvertReader(log: { log("\(kind.rawValue): \($0)") }, clock: clock, receive: receive))
                }
            }
            .withBoundSocket(copy)
            .map { Open(channel: $0, sender: sender) }
            .flatMapErrorThrowing { error in
                sender.close()
                throw error
            }
    }

    /// Keeps `open` as the `kind` socket, and watches its channel: one that closes while the agent runs is
    /// reopened with backoff.
    private func adopt(_ open: Open, kind: Kind) {
        slots.withLockedValue { $0[kind]?.open = open }
        open.channel.closeFuture.whenComplete { [weak self] _ in self?.closedByItself(kind, channel: open.channel) }
    }

    /// A channel closed: unless the agent is closing, warn once and try again after the backoff.
    private func closedByItself(_ kind: Kind, channel: Channel) {
        guard !closing.withLockedValue({ $0 }) else { return }
        let now = clock.uptime()
        let next: UInt64? = slots.withLockedValue { slots in
            guard let open = slots[kind]?.open, open.channel === channel else { return nil }
            open.sender.close()
            slots[kind]?.open = nil
            return slots[kind]?.backoff.closed(at: now)
        }
        guard let next else { return }
        warn(
            "adverts: the \(kind.rawValue) socket closed by itself; reopening it (first in \(AdvertSocketHealth.ReopenBackoff.firstDelay / 1000) s, then backing off to \(AdvertSocketHealth.ReopenBackoff.longestDelay / 1000) s)"
        )
        scheduleReopen(kind, at: next)
    }

    private func scheduleReopen(_ kind: Kind, at time: UInt64) {
        // On the agent's clock, whose uptime the back-off is in (issue 26 item 3).
        _ = clock.schedule(after: time.subtractingSaturated(clock.uptime()), on: loop) { [weak self] in
            self?.reopen(kind)
        }
    }

    /// One attempt to reopen `kind`'s socket; on failure, the next is scheduled (and not logged: the warning was).
    private func reopen(_ kind: Kind) {
        guard !closing.withLockedValue({ $0 }), let address = slots.withLockedValue({ $0[kind]?.address }) else {
            return
        }
        Self.openSocketFuture(address, kind: kind, loop: loop, log: log, clock: clock, receive: receive).whenComplete { [self] result in
            switch result {
            case .success(let open):
                guard !closing.withLockedValue({ $0 }) else {
                    open.channel.close(promise: nil)
                    open.sender.close()
                    return
                }
                let closedFor = slots.withLockedValue { $0[kind]?.backoff.reopened(at: clock.uptime()) }
                adopt(open, kind: kind)
                // A new socket has no memberships: join every interface again.
                joined.withLockedValue { joined in
                    if kind == .multicast4 { joined.v4 = [:] }
                    if kind == .multicast6 { joined.v6 = [:] }
                }
                refreshMemberships(log: log)
                log(
                    "adverts: the \(kind.rawValue) socket is open again (closed for \(String(format: "%.1f", Double(closedFor ?? 0) / 1000)) s)"
                )
            case .failure:
                if let next = slots.withLockedValue({ $0[kind]?.backoff.reopenFailed(at: clock.uptime()) }) {
                    scheduleReopen(kind, at: next)
                }
            }
        }
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

    /// The `kind` socket's channel, when it is open and can join groups.
    private func multicastChannel(_ kind: Kind) -> MulticastChannel? {
        slots.withLockedValue { $0[kind]?.open?.channel } as? MulticastChannel
    }

    /// Joins the groups on interfaces that appeared and leaves them on interfaces that went (a link that went down
    /// lost its IPv6 link-local address; when it is back it is joined afresh); returns whether anything changed (a
    /// network change: the caller re-advertises at once).
    @discardableResult
    func refreshMemberships(log: @escaping @Sendable (String) -> Void) -> Bool {
        guard multicastIsOn else { return false }
        let multicast = multicastChannel(.multicast4)
        let multicast6 = multicastChannel(.multicast6)
        var current = Self.multicastInterfaces()
        if multicast == nil { current.v4 = [:] }
        if multicast6 == nil { current.v6 = [:] }
        let previous = joined.withLockedValue { $0 }
        guard current != previous else { return false }
        if let multicast, let group = group4Address {
            for (name, device) in previous.v4 where current.v4[name] == nil {
                multicast.leaveGroup(group, device: device, promise: nil)
            }
            for (name, device) in current.v4 where previous.v4[name] == nil {
                Self.join(multicast, group, device: device, name: name, log: log)
            }
        }
        if let multicast6, let group = group6Address {
            for (name, device) in previous.v6 where current.v6[name]?.interfaceIndex != device.interfaceIndex {
                multicast6.leaveGroup(group, device: device, promise: nil)
            }
            for (name, device) in current.v6 where previous.v6[name]?.interfaceIndex != device.interfaceIndex {
                Self.join(multicast6, group, device: device, name: name, log: log)
            }
        }
        joined.withLockedValue { $0 = current }
        if current.isEmpty { log("no interface carries multicast; adverts go by unicast to known peers only") }
        return true
    }

    /// Joins `group` on one interface; one already joined (the kernel kept it over a link down and up) is fine.
    private static func join(
        _ channel: MulticastChannel,
        _ group: SocketAddress,
        device: NIONetworkDevice,
        name: String,
        log: @escaping @Sendable (String) -> Void
    ) {
        channel.joinGroup(group, device: device).whenComplete { result in
            if case .failure(let error) = result, (error as? IOError)?.errnoCode != EADDRINUSE {
                log("multicast on \(name): cannot join \(group.ipAddress ?? "the group"): \(error)")
            }
        }
    }

    /// Sends one datagram to each address, and to the groups when multicast is on: the IPv4 group once, the IPv6
    /// link-local group once on each interface. A send that fails is logged (once, until all work again) and
    /// changes nothing else: the next advert is tried as usual.
    func send(_ datagram: Data, to addresses: [SocketAddress]) {
        // On the advert's way (issue 26 item 5): the datagram's own bytes, no copy; a destination named only when its
        // send failed (an address as text is inet_ntop and a few strings, for every target of every advert).
        let senders = slots.withLockedValue { slots in Kind.allCases.map { slots[$0]?.open?.sender } }
        var failures: [AdvertSocketHealth.SendFailures.Failure] = []
        var attempted = 0
        func send(_ kind: Kind, to address: SocketAddress, name: @autoclosure () -> String) {
            guard let index = Kind.allCases.firstIndex(of: kind), let sender = senders[index] else { return }  // closed: reopening
            attempted += 1
            if let error = datagram.withUnsafeBytes({ sender.send($0, to: address) }) {
                failures.append(
                    .init(
                        destination: name(),
                        error: "\(String(cString: strerror(error.errnoCode))), errno \(error.errnoCode)"
                    )
                )
            }
        }
        for address in addresses {
            send(
                .unicast,
                to: address,
                name: address.hostText.map { Agent.joinHostPort($0, address.port ?? 0) } ?? "\(address)"
            )
        }
        let memberships = joined.withLockedValue { $0 }
        if !memberships.v4.isEmpty, let group = group4Address {
            send(.multicast4, to: group, name: Self.group)
        }
        if let group = group6Address {
            for (name, device) in memberships.v6 {
                guard let scoped = Self.scoped(group, interface: device.interfaceIndex) else { continue }
                send(.multicast6, to: scoped, name: "\(Self.group6)%\(name)")
            }
        }
        // A round that sent nothing (no interface, no peer) says nothing about whether sending works.
        guard attempted > 0 else { return }
        let report = sendHealth.withLockedValue { $0.round(failures: failures, at: clock.uptime()) }
        switch report {
        case .started(let new):
            let list = new.map { "\($0.destination) (\($0.error))" }.joined(separator: ", ")
            warn("adverts: cannot send to \(list); the sockets stay open and each advert is tried again")
        case .recovered(let failed, let milliseconds):
            log(
                "adverts: sending again (\(failed) sends failed over \(String(format: "%.1f", Double(milliseconds) / 1000)) s)"
            )
        case nil:
            break
        }
    }

    /// `group` on interface `index` (its scope id): where a link-local datagram goes out.
    static func scoped(_ group: SocketAddress, interface index: Int) -> SocketAddress? {
        guard case .v6(let address) = group, let scope = UInt32(exactly: index) else { return nil }
        var raw = address.address
        raw.sin6_scope_id = scope
        return SocketAddress(raw, host: "")
    }

    /// Closes every socket (for good: nothing reopens after this).
    func close() {
        closing.withLockedValue { $0 = true }
        interfaceChanges.withLockedValue(\.watch)?.close()
        let open = slots.withLockedValue { slots in
            let open = slots.values.compactMap(\.open)
            for kind in slots.keys { slots[kind]?.open = nil }
            return open
        }
        for socket in open {
            socket.channel.close(promise: nil)
            socket.sender.close()
        }
    }
}

