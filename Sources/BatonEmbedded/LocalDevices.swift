import BatonAgent
import BatonRegistry
import Foundation
import Logging
import ServiceLifecycle

/// Several devices of one account on this machine, each with its own state folder and its own agent on loopback:
/// the embedded mode (ISSUE 5 part 6) that tests, benchmarks and `baton demo` use. The agents run in this process
/// and speak to each other exactly as separate machines do: sealed adverts by unicast UDP, TLS 1.3 sessions.
public final class LocalDevices: Sendable {
    /// Where the state folders live (removed by ``shutdown()``).
    public let root: URL
    /// The devices' agents, in the order of the names given.
    public let agents: [Agent]
    /// Each agent's services, run in a group of its own (so one device can stop while the others run), in order.
    let running: [Running]

    /// One agent's services running: the group that stops them in order, and the task that runs it.
    struct Running: Sendable {
        let agent: Agent
        let group: ServiceGroup
        let task: Task<Void, Never>

        /// Starts running `services`.
        init(_ services: AgentServices) {
            let logger = services.agent.configuration.logger
            let group = services.group(logger: logger)
            self.agent = services.agent
            self.group = group
            task = Task {
                do {
                    try await group.run()
                } catch {
                    logger.error("the agent's services stopped: \(error)")
                }
            }
        }

        /// Stops the services, advertising first (with a goodbye for the current activity), fails whatever waits
        /// and closes every socket; returns when all of it is done.
        func stop() async {
            await group.triggerGracefulShutdown()
            await task.value
        }
    }

    init(root: URL, running: [Running]) {
        self.root = root
        self.agents = running.map(\.agent)
        self.running = running
    }

    /// Devices whose agents know the app bundles (`Name.app`) in `appFolders`, for code outside this package: no
    /// BatonRegistry import needed (issue 12 part 5). Otherwise as ``start(names:apps:configure:paired:)``.
    public static func start(
        names: [String],
        appFolders: [URL],
        configure: @Sendable (inout AgentConfiguration) -> Void = { _ in },
        paired: @Sendable (String, String, String) -> Void = { _, _, _ in }
    ) async throws -> LocalDevices {
        try await start(names: names, apps: AppRegistry.load(searchPaths: appFolders), configure: configure, paired: paired)
    }

    /// Devices whose agents know the apps these `Info.plist` files (XML or binary) describe, as if each were installed
    /// as a bundle with no executable: the apps run in this process (connect a `BatonApplication` per device) and are
    /// never launched. For code outside this package (issue 12 part 5).
    /// - Throws: ``BatonAgentError`` `stateUnwritable` when the bundles cannot be written; an `Info.plist` that does
    ///   not load is not registered (as a bad bundle on disk is not), and the agent answers its app `unknownApp`.
    public static func start(
        names: [String],
        infoPlists: [Data],
        configure: @Sendable (inout AgentConfiguration) -> Void = { _ in },
        paired: @Sendable (String, String, String) -> Void = { _, _, _ in }
    ) async throws -> LocalDevices {
        let root = newRoot()
        let folder = root.appendingPathComponent("apps")
        do {
            for (index, plist) in infoPlists.enumerated() {
                let bundle = folder.appendingPathComponent("App\(index).app")
                try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
                try plist.write(to: bundle.appendingPathComponent("Info.plist"))
            }
        } catch {
            try? FileManager.default.removeItem(at: root)
            throw BatonAgentError(.stateUnwritable, "cannot write the apps' bundles under \(folder.path): \(error)")
        }
        return try await start(names: names, root: root, apps: AppRegistry.load(searchPaths: [folder]), configure: configure, paired: paired)
    }

    /// Makes identities for `names`, pairs the first device with each other one over TLS 1.3 on loopback (`paired`
    /// sees each pairing code), starts an agent for each (ports picked by the system, multicast off, apps in this
    /// process trusted), tells each agent where the others are, and syncs rosters so every device knows every other.
    public static func start(
        names: [String],
        apps: AppRegistry,
        configure: @Sendable (inout AgentConfiguration) -> Void = { _ in },
        paired: @Sendable (String, String, String) -> Void = { _, _, _ in }
    ) async throws -> LocalDevices {
        try await start(names: names, root: newRoot(), apps: apps, configure: configure, paired: paired)
    }

    static func newRoot() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("baton-devices-\(UUID().uuidString)")
    }

    /// Devices as ``start(names:apps:configure:paired:)`` makes them, but whose agents run wholly in memory once paired
    /// (issue 26 item 3): sessions and adverts on `network` (one ``MemoryNetwork`` for them all, at virtual ports of
    /// ``memoryHost``), apps in this process only (``AppConnections/inMemory``: no socket file), and every timer on
    /// `clock` when one is given (a ``VirtualClock``'s). Pairing too is in memory (``MemoryAccountSession``): no
    /// socket is opened at all.
    package static func start(
        names: [String],
        apps: AppRegistry,
        network: MemoryNetwork,
        clock: AgentClock? = nil,
        configure: @Sendable (inout AgentConfiguration) -> Void = { _ in }
    ) async throws -> LocalDevices {
        try await start(names: names, root: newRoot(), apps: apps, configure: { configuration in
            configuration.host = memoryHost
            configuration.peerConnections = .inMemory(network)
            configuration.appConnections = .inMemory
            if let clock { configuration.clock = clock }
            configure(&configuration)
        }, paired: { _, _, _ in }, pairsInMemory: true)
    }

    /// Where agents in memory are (RFC 5737's documentation address): no interface here has it, so nothing of theirs
    /// could be a real socket.
    package static let memoryHost = "192.0.2.1"

    static func start(
        names: [String],
        root: URL,
        apps: AppRegistry,
        configure: @Sendable (inout AgentConfiguration) -> Void,
        paired: @Sendable (String, String, String) -> Void,
        pairsInMemory: Bool = false
    ) async throws -> LocalDevices {
        let stores = names.map { AccountStore(folder: root.appendingPathComponent($0)) }
        var identities: [DeviceIdentity] = []
        for (store, name) in zip(stores, names) {
            identities.append(try store.initialize(name: name).0)
        }
        for index in stores.indices.dropFirst() {
            let waiting = (stores[0], identities[0])
            let connecting = (stores[index], identities[index])
            let code = try await pairsInMemory
                ? pairInMemory(waiting: waiting, connecting: connecting)
                : pairOverLoopback(waiting: waiting, connecting: connecting)
            paired(names[0], names[index], code)
        }
        var running: [Running] = []
        do {
            for store in stores {
                var configuration = AgentConfiguration(store: store)
                configuration.host = "127.0.0.1"
                configuration.port = 0
                configuration.discoveryPort = nil
                configuration.apps = apps
                configuration.trustsThisProcess = true
                configuration.socketPath = store.folder.appendingPathComponent("agent.sock").path
                configuration.syncInterval = 60
                // Agents inside a test or the demo show nothing on the desktop (issue 16).
                configuration.desktopNotifications = false
                // Nor do they offer the machine's own recent documents (issue 27 item 2): a test turns it on.
                configuration.recentDocuments.isEnabled = false
                // Nor what the machine's media players play (issue 27 item 1).
                configuration.media.isEnabled = false
                // Nor serve apps on the session bus (issue 28 item 1): a test turns it on, with a bus of its own.
                configuration.dbusApps.isEnabled = false
                configuration.logger = Logger(label: "baton.agent", factory: { _ in SwiftLogNoOpLogHandler() })
                configure(&configuration)
                running.append(Running(try await Agent.build(configuration)))
            }
            let agents = running.map(\.agent)
            for agent in agents {
                for other in agents where other !== agent {
                    agent.addPeer(Agent.joinHostPort(other.configuration.host, other.port))
                }
            }
            // Two rounds: the first brings every roster to the first device, the second back out to all.
            for _ in 0..<2 {
                for agent in agents { await agent.syncNow() }
            }
        } catch {
            for agent in running { await agent.stop() }
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        return LocalDevices(root: root, running: running)
    }

    /// One pairing by numeric comparison, both people confirming: returns the code both sides showed.
    static func pairOverLoopback(waiting: (AccountStore, DeviceIdentity), connecting: (AccountStore, DeviceIdentity)) async throws -> String {
        let listener = try await AccountTransport.listen(host: "127.0.0.1", port: 0, identity: waiting.1, policy: .anyDevice)
        async let served: Void = listener.serveUntilDone(timeout: 10) { session in
            _ = try await AccountFlows.pair(initiator: false, over: session, identity: waiting.1, store: waiting.0) { _ in true }
            return true
        }
        let result = try await AccountTransport.withSession(host: "127.0.0.1", port: listener.port, identity: connecting.1, policy: .anyDevice) { session in
            try await AccountFlows.pair(initiator: true, over: session, identity: connecting.1, store: connecting.0) { _ in true }
        }
        try await served
        return result.code
    }

    /// One pairing as ``pairOverLoopback(waiting:connecting:)``, over a session in memory (both at ``memoryHost``).
    static func pairInMemory(waiting: (AccountStore, DeviceIdentity), connecting: (AccountStore, DeviceIdentity)) async throws -> String {
        let line = MemoryAccountSession.line(from: (connecting.1, memoryHost), to: (waiting.1, memoryHost))
        async let served = AccountFlows.pair(initiator: false, over: line.listener(), identity: waiting.1, store: waiting.0) { _ in true }
        let initiator = line.dialler()
        let result: AccountFlows.PairingResult
        do {
            result = try await AccountFlows.pair(initiator: true, over: initiator, identity: connecting.1, store: connecting.0) { _ in true }
        } catch {
            await initiator.close()  // ends both sides' messages: the other side's flow ends too
            throw error
        }
        await initiator.close()
        _ = try await served
        return result.code
    }

    /// Stops every agent and removes the state folders.
    public func shutdown() async {
        for agent in running { await agent.stop() }
        try? FileManager.default.removeItem(at: root)
    }

    /// Stops one device's agent, as ``shutdown()`` stops each (the goodbye of its current activity first), while
    /// the others run on; its state folder stays until ``shutdown()``.
    public func shutdown(_ agent: Agent) async {
        for device in running where device.agent === agent { await device.stop() }
    }
}
