import BatonCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The agent's links to other devices: at most one in use per device pair, whichever side opened it (ISSUE 10
/// item 1). Made on demand, found by device id (or by an address a device was reached at), and replaced when one
/// closes. Links a peer opens join the same table, so either side's connection serves both.
///
/// When both sides dial at once, both sides keep the link dialled by the device with the lower id and retire the
/// other: it takes no new requests and is closed by the side that opened it as soon as nothing is in flight on it.
/// Links idle for a while are closed by the side that opened them; retired links the peer never closes are closed
/// here after a grace: the session service sweeps them (``LinkSweep`` decides, ``SessionService`` closes).
///
/// The connections come from a ``PeerTransport`` (issue 26 item 3): TLS over TCP, or a ``MemoryNetwork``; what is
/// kept, and for what, is decided here alike for both.
///
/// Sendable, checked: everything mutable is under a lock (`table`, and `hooks`: `responder`, set once by the agent
/// before it listens or dials, read once per link).
final class PeerLinks: Sendable {
    let identity: DeviceIdentity
    let policy: PeerPolicy
    /// Where connections come from.
    let transport: any PeerTransport
    /// The agent's clock, given to every link.
    let clock: AgentClock
    /// What answers peers, given to every link: the agent's ``AgentForwarder``, which holds the agent weakly (the
    /// agent holds these links: issue 26 item 1).
    var responder: PeerLinkResponder? {
        get { hooks.withLockedValue { $0 } }
        set { hooks.withLockedValue { $0 = newValue } }
    }
    /// Told of every session refused in its TLS handshake, both directions (the agent logs them once per kind: issue
    /// 25 item 12). Set once by the agent before it listens or dials, like `responder`.
    var refused: (@Sendable (SessionRefusal) -> Void)? {
        get { transport.refused }
        set { transport.refused = newValue }
    }
    private let hooks = NIOLockedValueBox<PeerLinkResponder?>(nil)
    /// Whether streams can take the direct path over this transport (issue 30): TCP only, not a memory network.
    var carriesDirectStreams: Bool { transport is NIOPeerTransport }
    /// Given each connection on the session port that opened with a direct stream's preamble (issue 30). Set once by
    /// the agent before it listens.
    var directConnections: (@Sendable (StreamPreamble, Channel) -> Void)? {
        get { (transport as? NIOPeerTransport)?.directConnections }
        set { (transport as? NIOPeerTransport)?.directConnections = newValue }
    }
    let table = NIOLockedValueBox(Table())
    /// Retired links the peer opened that are kept through their grace at once, per device; past this a newly
    /// retired one is closed at once (a member opening connections in a loop costs this much, no more).
    static let retiredPerDevice = 4

    struct Table {
        /// The link in use for each device.
        var links: [DeviceID: PeerLink] = [:]
        /// Links kept open only until what is in flight on them ends.
        var retired: [ObjectIdentifier: PeerLink] = [:]
        /// The device last reached at each dialled `host:port`, so a sync to an address reuses that device's link,
        /// whichever side opened it.
        var devicesByAddress: [String: DeviceID] = [:]
    }

    /// Links over TLS (``NIOPeerTransport``): `burstEnding` is called when ``burst`` connections have closed since
    /// the most open at once (it rings the session service's sweep).
    convenience init(
        identity: DeviceIdentity,
        policy: PeerPolicy,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: AgentClock = .system,
        burstEnding: @escaping @Sendable () -> Void = {}
    ) throws {
        let transport = try NIOPeerTransport(identity: identity, policy: policy, group: group, burstEnding: burstEnding)
        self.init(identity: identity, policy: policy, transport: transport, clock: clock)
    }

    /// Links over `transport`, which accepts the peers `policy` allows (`policy` here only closes the links of
    /// devices no longer allowed: ``closeDisallowed()``).
    init(identity: DeviceIdentity, policy: PeerPolicy, transport: any PeerTransport, clock: AgentClock = .system) {
        self.clock = clock
        self.identity = identity
        self.policy = policy
        self.transport = transport
    }

    /// The open link to `device`, if there is one.
    func existing(_ device: DeviceID) -> PeerLink? {
        table.withLockedValue { table in
            guard let link = table.links[device], link.isOpen else { return nil }
            return link
        }
    }

    /// The link to `device`: the open one, or a new connection to `host:port` that must present that device's
    /// certificate.
    func link(to device: DeviceID, host: String, port: Int) async throws -> PeerLink {
        if let link = existing(device) { return link }
        return try await linking(to: device, host: host, port: port).get()
    }

    /// ``link(to:host:port:)`` as a future, completed on the link's event loop.
    func linking(to device: DeviceID, host: String, port: Int) -> EventLoopFuture<PeerLink> {
        if let link = existing(device) { return link.conduit.eventLoop.makeSucceededFuture(link) }
        return connecting(host: host, port: port, policy: .members { [policy] in
            policy.allows(device) ? [device] : []
        })
    }

    /// The open link to whichever device was last reached at `address` (`host:port`), if there is one.
    func open(at address: String) -> PeerLink? {
        guard let device = table.withLockedValue({ $0.devicesByAddress[address] }) else { return nil }
        return existing(device)
    }

    /// Every link held, in use or retired, with what the idle sweep judges it by (``LinkSweep``).
    func sweepView() -> [(link: PeerLink, facts: LinkSweep.Link)] {
        let (inUse, retired) = table.withLockedValue { (Array($0.links.values), Array($0.retired.values)) }
        return inUse.map { ($0, LinkSweep.Link(dialedByMe: $0.dialedByMe, retired: false, idleSince: $0.idleSince())) }
            + retired.map { ($0, LinkSweep.Link(dialedByMe: $0.dialedByMe, retired: true, idleSince: $0.idleSince())) }
    }

    /// Connections open at once past which the memory they leave is given back when they have gone.
    static let burst = 64

    /// The open link to whichever device was last reached at `host:port`, whichever side opened it, or a new one.
    func connectReusing(host: String, port: Int) async throws -> PeerLink {
        let name = Agent.joinHostPort(host, port)
        if let device = table.withLockedValue({ $0.devicesByAddress[name] }), let link = existing(device) { return link }
        return try await connect(host: host, port: port)
    }

    /// A new connection to `host:port`, accepting any device `policy` allows (used for `--peer` addresses, whose
    /// device is learnt from its certificate).
    func connect(host: String, port: Int, policy: PeerPolicy? = nil) async throws -> PeerLink {
        try await connecting(host: host, port: port, policy: policy).get()
    }

    /// ``connect(host:port:policy:)`` as a future: connect, verification and adoption all happen on the
    /// connection's event loop, one after the other, with no task or other thread between them (issue 11: a cold
    /// continuation).
    func connecting(host: String, port: Int, policy: PeerPolicy? = nil) -> EventLoopFuture<PeerLink> {
        transport.dial(host: host, port: port, policy: policy ?? self.policy).flatMapThrowing { [self] arrival in
            try adopt(arrival, dialedByMe: true)
        }
    }

    /// Makes a link of a verified connection and records it; returns the link to use for its device (this one, or an
    /// open one that wins over it). On the connection's event loop (the link is attached to it here).
    func adopt(_ arrival: PeerArrival, dialedByMe: Bool) throws -> PeerLink {
        let conduit = arrival.conduit
        conduit.eventLoop.preconditionInEventLoop()
        guard let responder else {
            conduit.close()
            throw BatonAgentError(.peerRefused, "\(arrival.name): no one answers peers here yet")
        }
        let name = arrival.name
        let link = PeerLink(
            peer: arrival.peer,
            peerName: name,
            dialedByMe: dialedByMe,
            conduit: conduit,
            responder: responder,
            clock: clock
        )
        conduit.attach(link)
        // The dialling side tells the other its clock once the session is up, and the other answers with its own:
        // adverts are judged against the sender's own clock, so devices whose clocks are minutes apart still hear
        // each other (issue 25 item 9, PROTOCOL §5). Not first from the accepting side: `baton sync`'s one-shot
        // exchange dials too and reads nothing but its `sync`.
        if dialedByMe { link.send(.clock(milliseconds: clock.wall())) }
        let me = identity.id
        let (kept, retired) = table.withLockedValue { table -> (PeerLink, PeerLink?) in
            if dialedByMe { table.devicesByAddress[name] = link.peer }
            guard let current = table.links[link.peer], current.isOpen else {
                table.links[link.peer] = link
                return (link, nil)
            }
            if Self.prefersNew(dialedByMe: link.dialedByMe, over: current.dialedByMe, me: me, peer: link.peer) {
                table.links[link.peer] = link
                table.retired[ObjectIdentifier(current)] = current
                return (link, current)
            }
            table.retired[ObjectIdentifier(link)] = link
            return (current, link)
        }
        retired?.retire()
        if let retired, !retired.dialedByMe, retiredCount(of: retired.peer) > Self.retiredPerDevice, retired.idleSince() != nil {
            retired.close()
        }
        // The link may have closed before it was recorded (a peer that hung up at once).
        if !link.isOpen { remove(link) } else if kept === link { responder.linkOpened(link) }
        return kept
    }

    /// Of two open links to device `peer`, whether the new one should replace the one in use: both sides must choose
    /// the same connection, so the one dialled by the device with the lower id wins; between two dialled by the same
    /// side, the one already in use stays.
    static func prefersNew(dialedByMe newDialedByMe: Bool, over currentDialedByMe: Bool, me: DeviceID, peer: DeviceID) -> Bool {
        let preferredDialer = min(me, peer)
        let newDialer = newDialedByMe ? me : peer
        let currentDialer = currentDialedByMe ? me : peer
        return newDialer == preferredDialer && currentDialer != preferredDialer
    }

    /// Retired links to `device` still open.
    func retiredCount(of device: DeviceID) -> Int {
        table.withLockedValue { table in table.retired.values.filter { $0.peer == device && $0.isOpen }.count }
    }

    /// The most connections open at once since the last ``takePeak()``.
    var peak: Int { transport.peak }

    /// The most connections open at once since the last call, and how many are open now.
    func takePeak() -> (peak: Int, open: Int) {
        transport.takePeak()
    }

    /// Forgets a closed link (only if it is still the one recorded).
    func remove(_ link: PeerLink) {
        table.withLockedValue { table in
            if table.links[link.peer] === link { table.links[link.peer] = nil }
            table.retired[ObjectIdentifier(link)] = nil
        }
    }

    /// Closes the links to devices no longer allowed (after a removal from the account).
    func closeDisallowed() {
        let all = table.withLockedValue { Array($0.links.values) + Array($0.retired.values) }
        for link in all where !policy.allows(link.peer) {
            link.close()
        }
    }

    /// Listens for links from other devices on `host:port` over TLS, giving the listening channel (the session
    /// service holds it). Only for links over ``NIOPeerTransport``; ``serve(host:port:)`` listens on any transport.
    func listen(host: String, port: Int) async throws -> Channel {
        guard let tls = transport as? NIOPeerTransport else {
            throw BatonAgentError.cannotListen(on: Agent.joinHostPort(host, port), BatonAgentError(.protocolViolation, "these links do not run over sockets"))
        }
        return try await tls.listenChannel(host: host, port: port) { [self] arrival in
            _ = try? adopt(arrival, dialedByMe: false)
        }
    }

    /// Listens for links from other devices on `host:port`, on whichever transport these links run over.
    func serve(host: String, port: Int) async throws -> PeerListener {
        try await transport.listen(host: host, port: port) { [self] arrival in
            _ = try? adopt(arrival, dialedByMe: false)
        }
    }

    /// Closes every link.
    func closeAll() {
        for link in table.withLockedValue({ Array($0.links.values) + Array($0.retired.values) }) { link.close() }
    }
}
