@_exported import BatonEmbedded
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Several devices of one account whose agents run wholly inside this process (issue 26 item 3, as grpc-swift-2's
/// in-process transport beside its network one): sessions and adverts on one ``MemoryNetwork`` at virtual ports, apps
/// connected in memory (no socket file), and, with ``Time/virtual``, every timer of every agent on one virtual clock
/// that moves only by ``advance(by:)``. The agents are the same as ``LocalDevices``' (they are its agents); only what
/// carries their bytes and times their deadlines differs. Pairing still runs over TLS on loopback once, before any agent
/// starts (``LocalDevices/start(names:apps:network:clock:configure:)``).
public final class InMemoryDevices: Sendable {
    /// Whose time the agents read.
    public enum Time: Sendable {
        /// The system's clocks, as agents on the network.
        case system
        /// A clock of their own, standing still until ``InMemoryDevices/advance(by:)``: a minute's deadline is a call.
        case virtual
    }

    /// The devices, with their agents in the order of the names given.
    public let devices: LocalDevices
    /// The network their sessions and adverts go over.
    public let network: MemoryNetwork
    /// The clock they read, when virtual.
    let clock: VirtualClock?
    /// The folder of the bundles ``start(names:infoPlists:clock:configure:)`` wrote, removed by ``shutdown()``.
    let bundles: URL?

    /// The devices' agents, in the order of the names given.
    public var agents: [Agent] { devices.agents }

    init(devices: LocalDevices, network: MemoryNetwork, clock: VirtualClock?, bundles: URL? = nil) {
        self.devices = devices
        self.network = network
        self.clock = clock
        self.bundles = bundles
    }

    /// Makes identities for `names`, pairs them (over loopback TLS, once), and starts an agent for each in memory
    /// knowing `apps` (run in this process: connect a `BatonApplication` per device at its agent's `socketPath`);
    /// rosters are synced so every device knows every other. `configure` changes each agent's configuration last.
    public static func start(
        names: [String],
        apps: AppRegistry,
        clock time: Time = .virtual,
        configure: @Sendable (inout AgentConfiguration) -> Void = { _ in }
    ) async throws -> InMemoryDevices {
        try await start(names: names, apps: apps, clock: time, bundles: nil, configure: configure)
    }

    static func start(
        names: [String],
        apps: AppRegistry,
        clock time: Time,
        bundles: URL?,
        configure: @Sendable (inout AgentConfiguration) -> Void
    ) async throws -> InMemoryDevices {
        let network = MemoryNetwork()
        // The virtual wall clock starts at the real time: what pairing wrote into the rosters was stamped by it.
        let clock = time == .virtual ? VirtualClock(wall: UInt64(Date().timeIntervalSince1970 * 1000)) : nil
        let devices = try await LocalDevices.start(names: names, apps: apps, network: network, clock: clock?.clock, configure: configure)
        return InMemoryDevices(devices: devices, network: network, clock: clock, bundles: bundles)
    }

    /// ``start(names:apps:clock:configure:)`` for the app bundles (`Name.app`) in `appFolders`.
    public static func start(
        names: [String],
        appFolders: [URL],
        clock time: Time = .virtual,
        configure: @Sendable (inout AgentConfiguration) -> Void = { _ in }
    ) async throws -> InMemoryDevices {
        try await start(names: names, apps: AppRegistry.load(searchPaths: appFolders), clock: time, configure: configure)
    }

    /// ``start(names:apps:clock:configure:)`` for the apps these `Info.plist` files (XML or binary) describe, as if
    /// each were installed as a bundle with no executable (as ``LocalDevices/start(names:infoPlists:configure:paired:)``
    /// makes them): the apps run in this process and are never launched. The bundles are written to a temporary
    /// folder, removed by ``shutdown()``.
    /// - Throws: ``BatonAgentError`` `stateUnwritable` when the bundles cannot be written; an `Info.plist` that does
    ///   not load is not registered, and the agent answers its app `unknownApp`.
    public static func start(
        names: [String],
        infoPlists: [Data],
        clock time: Time = .virtual,
        configure: @Sendable (inout AgentConfiguration) -> Void = { _ in }
    ) async throws -> InMemoryDevices {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-memory-apps-\(UUID().uuidString)")
        do {
            for (index, plist) in infoPlists.enumerated() {
                let bundle = folder.appendingPathComponent("App\(index).app")
                try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
                try plist.write(to: bundle.appendingPathComponent("Info.plist"))
            }
            return try await start(names: names, apps: AppRegistry.load(searchPaths: [folder]), clock: time, bundles: folder, configure: configure)
        } catch let error as BatonAgentError {
            try? FileManager.default.removeItem(at: folder)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw BatonAgentError(.stateUnwritable, "cannot write the apps' bundles under \(folder.path): \(error)")
        }
    }

    /// The agents' wall time now: the virtual clock's (it started at the real time and moves only by
    /// ``advance(by:)``), or the system's. What to count from when a test sets a date the agents judge, such as
    /// an activity's `expirationDate` (A10).
    public var now: Date {
        guard let clock else { return Date() }
        return Date(timeIntervalSince1970: Double(clock.wall) / 1000)
    }

    /// Moves the agents' virtual clock on by `duration`, running every timer it passes (an advert's refresh, a nearby
    /// entry's expiry, a deadline) in order, each with the time it was due; returns when they have run.
    /// - Throws: ``BatonAgentError`` `protocolViolation` when the devices run on the system's time (``Time/system``).
    public func advance(by duration: Duration) async throws {
        guard let clock else {
            throw BatonAgentError(.protocolViolation, "these devices run on the system's clock: start them with clock: .virtual to advance time")
        }
        try await clock.advance(by: duration)
    }

    /// Stops every agent and removes the state folders.
    public func shutdown() async {
        await devices.shutdown()
        if let bundles { try? FileManager.default.removeItem(at: bundles) }
    }
}
