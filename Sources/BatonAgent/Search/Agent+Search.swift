import BatonCore
import BatonSearch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Logging

/// On-device search's side in the agent (issue 15; SEMANTICS G1-G3): what apps and command lines ask of the index,
/// passed to the ``SearchService`` through its ``SearchQueue`` (the one handle the agent keeps: the service owns the
/// index and its state, issue 26 item 1), and continuing a result through the same path as a handoff (G2).
extension Agent {
    /// The search service of this agent: `STATE/search.sqlite`, with the configured limits.
    func searchService() -> SearchService {
        SearchService(queue: search, stateFolder: store.folder, limits: configuration.searchLimits, logger: logger, clock: clock)
    }

    // MARK: What apps and command lines ask

    /// IPC `delete` (G3): `bundle`'s entries with these identifiers, or all of its entries; answered with `deleted`.
    func deleteSaved(_ request: UInt64, identifiers: [String]?, bundle: String, on connection: IPCConnection) {
        search.delete(bundle: bundle, identifiers: identifiers) { result in
            switch result {
            case .success(let count):
                connection.send(.deletedSaved(request: request, count: UInt64(count), failure: nil))
            case .failure(let error):
                connection.send(
                    .deletedSaved(request: request, count: 0, failure: SearchIndexFailure(.init(rawValue: error.code.name), error.message))
                )
            }
        }
    }

    /// Continues search result `id` here (G2): its app gets it as it would get a handoff, launched first when it
    /// does not run, `willContinue` and then the state, or why not (C5). Nothing is fetched: the state was saved here.
    public func continueSaved(id: Int64) async -> ContinuationOutcome {
        let started = clock.uptimeNanoseconds()
        func failed(_ failure: ContinuationOutcome.Failure, _ message: String, app: String = "") -> ContinuationOutcome {
            ContinuationOutcome(
                app: app, reason: "", failure: failure, message: message,
                microseconds: (clock.uptimeNanoseconds() - started) / 1000
            )
        }
        let entry: SearchEntry
        switch await search.entry(id: id) {
        case .failure(let error):
            return failed(.searchFailed, error.description)
        case .success(nil):
            return failed(.notFound, "no saved activity \(id) (it was deleted, replaced, or has expired); `baton search` lists them")
        case .success(let found?):
            entry = found
        }
        guard let app = registry.app(bundleIdentifier: entry.bundleIdentifier) else {
            return failed(ContinuationOutcome.Failure(.noApp), "\(entry.bundleIdentifier), which saved it, is not installed here", app: entry.bundleIdentifier)
        }
        let reason = "G2: saved for search by \(app.bundleIdentifier) on this device"
        // Whether the app runs is looked up by the handoff coordinator, on its loop.
        let route = HandoffBroker.Route.saved(bundle: app.bundleIdentifier, activityType: entry.activityType, running: nil, payload: entry.payload)
        return await handoff.continueActivity(entry: nil, reason: reason, started: started, route: route)
    }
}
