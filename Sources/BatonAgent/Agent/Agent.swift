import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// One device's agent (ARCHITECTURE "The flow of one handoff"): it knows the account, the current activity and the
/// nearby ones, advertises, answers fetches, launches apps and hands them continuations.
///
/// Runs as `baton agent`, or inside a process (the embedded mode: tests, `baton demo`). Its sockets are thin NIO
/// adapters; the protocol decisions are the pure state machines of `BatonProtocol` (``AdvertReceiver``,
/// ``NearbyTable``, ``SessionMultiplexer``, ``HandoffBroker``). Every continuation is coordinated by its
/// ``HandoffCoordinator`` (``handoff``: the broker, the apps connected, the fetches and timers, on ``loop`` with no
/// lock: issue 26 items 1 and 2, with the continuation streams); what the agent keeps beside it (the roster and the
/// type hash index) is under one lock, never held across I/O or awaits. ``build(_:)`` returns its
/// long-running parts as services (``AgentServices``; AgentServices.swift, association files:
/// AssociationService.swift), and the caller runs them in a `ServiceGroup` (issue 26 item 1).
///
/// Sendable, checked: every mutable field is under a lock (`state`, `catalog`, `extraPeers`, `watcher`), atomic
/// (`port`) or confined to ``loop`` (``handoff``'s); `port` and `watcher` are set only by ``build(_:)`` before the
/// agent is returned and its services started.
/// The advert socket is its ``discovery``'s; the session listener its session service's; the app socket its app
/// socket service's.
public final class Agent: Sendable {
    /// This device.
    public let identity: DeviceIdentity
    /// The configuration it runs with.
    public let configuration: AgentConfiguration
    /// The port sessions and unicast adverts arrive on.
    public private(set) var port: Int {
        get { boundPort.load(ordering: .relaxed) }
        set { boundPort.store(newValue, ordering: .relaxed) }
    }
    private let boundPort = Atomic(0)
    /// The Unix socket apps connect to.
    public let socketPath: String

    let store: AccountStore
    /// The one event loop of this agent's sockets: the app socket, the advert sockets and every session. A
    /// becomeCurrent is read, sealed and sent, and a fetch asked of the app, answered and sent on to the peer, on one
    /// thread with no hop between loops (issue 11). An agent has few peers and apps, and TLS records and adverts
    /// take microseconds each: one loop is plenty, and a burst of handshakes still goes through at hundreds a second.
    let loop: EventLoop
    let links: PeerLinks
    let state: NIOLockedValueBox<State>
    /// The installed apps and the router over them: replaced when an app folder changes (part 7).
    /// The association files are the last the association service sent (Agent+Associations).
    let catalog: NIOLockedValueBox<(registry: AppRegistry, associations: AssociationFiles, router: ActivityRouter)>
    var registry: AppRegistry { catalog.withLockedValue(\.registry) }
    var router: ActivityRouter { catalog.withLockedValue(\.router) }
    /// Tells the association service the apps or its cache changed (issue 14; it owns the files and when to fetch
    /// them: issue 26 item 1).
    let associations = AssociationService.Trigger()
    /// Asks the search service for work (issue 15; it owns the index and its state: issue 26 item 1).
    let search = SearchQueue()
    /// Where the log goes, with metadata (peer, app, sequence, continuation); never key material.
    let logger: Logger
    /// What was refused from outside, logged once per kind (issue 25 item 12).
    let refusals: RefusalLog
    var watcher: FolderWatcher? {
        get { folderWatcher.withLockedValue { $0 } }
        set { folderWatcher.withLockedValue { $0 = newValue } }
    }
    private let folderWatcher = NIOLockedValueBox<FolderWatcher?>(nil)
    /// The session service's handle (it owns its work and its sweep of idle links: issue 26 item 1): starts what
    /// peers' requests need, and wakes the sweep when a link opens.
    let sessions: SessionService.Work
    /// The app socket service's handle (it owns the command lines' work and the reaper: issue 26 item 1): starts a
    /// request's work, and wakes the reaper when a program is started. Nothing runs outside the services.
    let appWork = AppSocketService.Work()
    /// Asks the sync service for a round (it owns roster sync's state: issue 26 item 1).
    let syncTrigger = SyncService.Trigger()
    /// Peers added while running (``addPeer(_:)``), beside the configured ones.
    let extraPeers = NIOLockedValueBox<[String]>([])
    /// The synced folders as last read from `folders.plist` (C9; Agent+Folders).
    let foldersCache = NIOLockedValueBox<SyncedFoldersSnapshot?>(nil)
    /// Discovery's state, under its own lock (issue 26 item 1): the advert keys and receiver, the nearby table, the
    /// activity advertised, its observers (benchmarks and tests timestamp the changes). Its loop is the
    /// ``DiscoveryService``.
    let discovery: Discovery

    /// The only coordinator of a continuation (issue 26 items 1 and 2): the broker, the apps connected, the fetches
    /// from other devices, the broker's timers, each continuation's record and the apps launched, on ``loop``.
    let handoff: HandoffCoordinator

    /// A fetch that failed, with the reason the app is told (C8).
    struct FetchError: Error {
        var reason: FetchFailure
        var message: String
    }

    struct State {
        var roster: Roster
        /// The keyed type hash of every (team, type) an app here claims (``rebuildHashIndex()``).
        var hashIndex: [[UInt8]: [(team: String, type: String)]] = [:]
    }

    init(configuration: AgentConfiguration, identity: DeviceIdentity, roster: Roster, registry: AppRegistry) throws {
        self.configuration = configuration
        self.identity = identity
        self.store = configuration.store
        // No association files until the association service reads its cache, in build(_:), before anything routes.
        self.catalog = NIOLockedValueBox((registry, AssociationFiles(), ActivityRouter(registry: registry)))
        self.logger = configuration.logger
        self.refusals = RefusalLog(logger: configuration.logger, clock: configuration.clock)
        self.socketPath = configuration.socketPath ?? AgentConfiguration.defaultSocketPath(for: configuration.store)
        discovery = Discovery(
            me: identity.id,
            roster: roster,
            timeToLiveMilliseconds: UInt64(configuration.nearbyTimeToLive * 1000),
            logger: configuration.logger,
            clock: configuration.clock
        )
        state = NIOLockedValueBox(State(roster: roster))
        let sessions = SessionService.Work()
        self.sessions = sessions
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        self.loop = loop
        let links = try configuration.peerConnections.links(
            identity: identity,
            policy: .activeMembers(of: configuration.store),
            host: configuration.host,
            loop: loop,
            clock: configuration.clock
        ) { sessions.linksChanged() }
        self.links = links
        handoff = HandoffCoordinator(
            broker: HandoffBroker(
                deviceName: identity.name,
                saveDeadlineMilliseconds: UInt64(configuration.saveDeadline * 1000),
                deadlines: HandoffBroker.Deadlines(
                    launchMilliseconds: UInt64(configuration.launchTimeout * 1000),
                    documentsMilliseconds: UInt64(configuration.syncWait * 1000)
                )
            ),
            loop: loop,
            clock: configuration.clock,
            links: links,
            discovery: discovery,
            appWork: appWork,
            socketPath: socketPath,
            sessionBus: configuration.dbusApps.busAddress,
            browserCommand: configuration.browserCommand,
            device: identity.id,
            streamRelease: .milliseconds(Int64(configuration.streamRelease * 1000)),
            directStreams: configuration.streamPath == .direct && links.carriesDirectStreams,
            logger: configuration.logger,
            refusals: refusals
        )
        handoff.attach(self)
        // Command lines watching the nearby list hear of its changes (the observer holds the agent weakly).
        discovery.observe { [weak self] _, _ in self?.tellWatchersNearbyChanged() }
    }

    /// Builds an agent: loads the account, listens for sessions, opens the advert sockets and the app socket, and
    /// returns its services (search, sessions, the app socket, sync, advertising, associations, notifications) for
    /// the caller to run in a `ServiceGroup` (``AgentServices/run(signals:logger:)``, or among its own services). The
    /// agent works while they run; the group's graceful shutdown stops it, advertising first, and closes its sockets.
    /// - Throws: ``BatonAgentError`` when the state folder is not initialised or a port or socket cannot be opened.
    public static func build(_ configuration: AgentConfiguration) async throws -> AgentServices {
        let store = configuration.store
        let identity = try store.identity()
        let roster = try store.roster()
        let appFolders = configuration.appFolders ?? AppRegistry.searchPaths()
        let registry = configuration.withBuiltInApps(configuration.apps ?? AppRegistry.load(searchPaths: appFolders))
        let agent = try Agent(configuration: configuration, identity: identity, roster: roster, registry: registry)
        let associations = agent.associationService()
        // The links (and the app socket, in open()) reach the agent through a forwarder that holds it weakly: the
        // agent holds them, so an open link or a connected app never keeps a stopped agent alive (issue 26 item 1).
        agent.links.responder = AgentForwarder(agent)
        agent.links.refused = { [weak agent] refusal in agent?.sessionRefused(refusal) }
        agent.links.directConnections = { [weak agent] preamble, channel in
            guard let agent else { return channel.close(promise: nil) }
            agent.handoff.directConnectionArrived(preamble, on: channel)
        }
        agent.rebuildHashIndex()
        // The session listener and the app socket are their services' (issue 26 item 1): bound by open(), closed here
        // if it fails.
        var listener: PeerListener?
        var appSocket: AppListener?
        do {
            try await agent.open(listener: &listener, appSocket: &appSocket)
        } catch {
            await agent.stopBroker()
            agent.discovery.socket?.close()
            agent.links.closeAll()
            await listener?.close()
            await agent.appSocket(appSocket).close()
            throw error
        }
        agent.watchFolders(apps: configuration.apps == nil ? appFolders : [])
        var services: [any Service] = [
            // First, so it stops last: after the app socket, with what apps sent saved.
            agent.searchService(),
            agent.sessionService(listener: listener),
            agent.appSocketService(socket: agent.appSocket(appSocket)),
            agent.syncService(),
            agent.discoveryService(),
            associations,
        ]
        // After the app socket and advertising, so it stops before them: its document is resigned first (issue 27).
        if configuration.recentDocuments.isEnabled { services.append(agent.recentDocumentsSource()) }
        if let media = agent.mediaSource() { services.append(media) }
        // Apps on the session bus (issue 28 item 1): closed before advertising stops, as the socket's apps are.
        if let dbusApps = agent.dbusAppService() { services.append(dbusApps) }
        // Last, so it stops first: the notifications are withdrawn while the offers are still known (issue 16).
        if configuration.desktopNotifications { services.append(NotificationService(agent: agent)) }
        return AgentServices(agent: agent, services: services)
    }

    /// Binds the session listener (into `bound`, for the session service), the advert transport and the app socket
    /// (into `appSocket`, for the app socket service), over the ``AgentConfiguration/peerConnections`` and
    /// ``AgentConfiguration/appConnections`` configured (issue 26 item 3).
    func open(listener bound: inout PeerListener?, appSocket: inout AppListener?) async throws {
        var host = configuration.host
        var adverts: (any AdvertTransport)?
        // A port the system picks is free for TCP; the adverts' UDP socket on the same number may not be (another
        // program's UDP socket): then both are picked again, a few times (a collision seen in a full test run).
        for attempt in 1...8 {
            let listener: PeerListener
            do {
                listener = try await links.serve(host: host, port: configuration.port)
            } catch let error as BatonAgentError where host == AgentConfiguration.anyHost && error.code == .addressUnavailable {
                // No IPv6 on this machine: IPv4 only.
                host = "0.0.0.0"
                listener = try await links.serve(host: host, port: configuration.port)
                logger.notice("\(error.message); IPv4 only")
            }
            bound = listener
            port = listener.port
            do {
                adverts = try await configuration.peerConnections.adverts(
                    host: host,
                    port: port,
                    discoveryPort: configuration.discoveryPort,
                    loop: loop,
                    log: { [logger] line in logger.info("\(Agent.logLine(line))") },
                    warn: { [logger] line in logger.warning("\(line)") },
                    clock: configuration.clock
                ) { [weak self] datagram, source in
                    self?.receiveAdvert(datagram, from: source)
                }
                break
            } catch let error as BatonAgentError where error.code == .addressInUse && configuration.port == 0 && attempt < 8 {
                await listener.close()
                bound = nil
            }
        }
        guard let adverts else { throw BatonAgentError(.addressInUse, "no port free for both TCP and UDP after 8 tries") }
        discovery.attach(adverts, sessionPort: port)
        let apps = configuration.appConnections.transport(clock: configuration.clock)
        appSocket = try await apps.listen(path: socketPath, handler: AgentForwarder(self), loop: loop)
        try? Data("\(port)\n".utf8).write(to: store.folder.appendingPathComponent("agent-port"))
        try? Data("\(socketPath)\n".utf8).write(to: store.folder.appendingPathComponent("agent-socket"))
        let roster = state.withLockedValue(\.roster)
        log("agent for \(identity.name) (\(identity.id.short)) on \(Self.joinHostPort(host, port)); \(roster.activeMembers.count) devices, key epoch \(roster.accountKey.epoch)")
        log("apps connect at \(socketPath); \(registry.apps.count) apps registered; multicast \(adverts.multicastIsOn ? "on port \(configuration.discoveryPort ?? 0)" : "off")")
        refreshTargets()
        syncTrigger.ring()
    }

    /// The broker stops: the current activity's goodbye goes out and everything waiting fails (advertising's
    /// shutdown, the first of the services').
    func stopBroker() async {
        await handoff.stop()
    }

    func log(_ line: String, _ metadata: Logger.Metadata? = nil) {
        logger.info("\(Self.logLine(line))", metadata: metadata)
    }

    /// The most UTF-8 bytes one log line carries. Lines name what peers and files supplied (a document's path in a
    /// synced folder, an error a peer sent, a title): a peer's 400 KB `baton-folder://` path went whole into one line
    /// (issue 25 item 6). Far above any line the agent writes of its own.
    static let logLineBytes = 2_048

    /// `line` cut to ``logLineBytes`` with how many bytes were left out ("… (N more bytes)").
    static func logLine(_ line: String) -> String {
        line.clipped(toBytes: logLineBytes)
    }

    /// The clock the agent reads (``AgentConfiguration/clock``): wall time for what other devices see, uptime for
    /// deadlines (issue 26 item 2).
    var clock: AgentClock { configuration.clock }

    /// Calls `observer` on every change of the nearby table (an advert that added, replaced or removed an entry).
    public func observeNearby(_ observer: @escaping @Sendable (DeviceID, NearbyTable.Change) -> Void) {
        discovery.observe(observer)
    }

    // MARK: The account

    /// Re-reads the roster after a merge: a new account key (someone was removed) means new advert keys, a new type
    /// hash index, and no more links to or entries from removed devices.
    func rosterChanged() {
        guard let roster = try? store.roster() else { return }
        state.withLockedValue { $0.roster = roster }
        // After a rotation every nearby entry goes: its type hash was keyed by the old key, so no app here would
        // match it any more (issue 25 item 9: a continuation then failed noApp). Observers hear of each removal.
        let rotated = discovery.rosterChanged(roster)
        if rotated {
            log("account key changed (epoch \(roster.accountKey.epoch)): adverts sealed anew")
            rebuildHashIndex()
        }
        links.closeDisallowed()
        refreshTargets()
    }

    /// The keyed hash of every (team, type) an app here can continue, so an advert's hash names the app at once.
    func rebuildHashIndex() {
        state.withLockedValue { state in
            let keys = AdvertKeys(state.roster.accountKey)
            var index: [[UInt8]: [(team: String, type: String)]] = [:]
            for app in registry.apps where app.isIdentityResolved {
                guard let team = app.teamIdentifier else { continue }
                for type in app.claimedActivityTypes.sorted() {
                    index[keys.typeHash(team: team, activityType: type), default: []].append((team, type))
                }
            }
            state.hashIndex = index
        }
    }

    /// The agent addresses to advertise to and sync with: `--peer` addresses, peers added since, and the recorded
    /// addresses of the other active members.
    func syncTargets() -> [String] {
        var addresses = configuration.peers
        for address in extraPeers.withLockedValue({ $0 }) + store.knownPeerAddresses(excluding: identity.id) where !addresses.contains(address) {
            addresses.append(address)
        }
        return addresses
    }

    /// Resolves the targets of unicast adverts.
    func refreshTargets() {
        let resolved = syncTargets().compactMap(Self.socketAddress)
        discovery.setTargets(resolved)
    }

    /// `host:port` or `[v6]:port` as a socket address; nil when it does not parse or resolve.
    static func socketAddress(_ text: String) -> SocketAddress? {
        guard let (host, port) = splitHostPort(text) else { return nil }
        return try? SocketAddress.makeAddressResolvingHost(host, port: port)
    }

    /// `host:port`, with the host in brackets when it is IPv6 (`[fe80::1%eth0]:47810`): what ``splitHostPort(_:)`` reads.
    public static func joinHostPort(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Splits `host:port` or `[v6]:port`.
    public static func splitHostPort(_ text: String) -> (String, Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65_535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}
