import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the handoff coordinator asks of the rest of the agent, as typed calls (issue 26 item 1: no service reaches
/// into another's state). The coordinator holds its host weakly (the agent holds the coordinator), and calls it on
/// its loop only.
protocol HandoffHost: AnyObject, Sendable {
    /// The installed app with this bundle identifier (the registry as it is now).
    func installedApp(_ bundle: String) -> AppRecord?
    /// Where an activity goes here (D1–D4, E1–E4: the router as it is now).
    func route(_ request: RouteRequest) -> RouteDecision
    /// Whether the process behind an app's connection is still the one that said hello (ISSUE 10 item 4).
    func isStillTheApp(_ connection: IPCConnection) -> Bool
    /// A state as it leaves for another device (C9: file URLs in synced folders in travel form).
    func travelling(_ data: Data) -> Data
    /// A state as it arrived from another device (C9: URLs made this device's, documents not here yet).
    func arriving(_ data: Data) -> Agent.ArrivedState
    /// Whether the documents at `paths` are here now (C9); `.present` before the app's trust is checked.
    func documents(at paths: [String]) -> HandoffBroker.DocumentsCheck
}

extension HandoffCoordinator {
    /// The host as the coordinator's state keeps it: weakly.
    struct WeakHost {
        weak var host: (any HandoffHost)?
    }

    /// The I/O context the coordinator keeps for a continuation the broker runs, by the broker's id (the broker keeps
    /// its one record, with its deadlines: issue 26 item 2; this decides nothing): where its state comes from, who
    /// waits for its outcome, what stops its fetch.
    struct Record {
        /// The offer continued; nil for a search result (G2), whose state is here already.
        var entry: NearbyTable.Entry?
        /// The router's reason for the app chosen.
        var reason: String
        /// Uptime nanoseconds when it was asked for.
        var started: UInt64
        var waiter: CheckedContinuation<ContinuationOutcome, Never>
        /// What stops its fetch while it runs.
        var work: PeerLink.Cancel?
    }
}
