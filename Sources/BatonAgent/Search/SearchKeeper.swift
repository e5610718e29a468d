import BatonSearch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// What the search service is asked to do (issue 15; SEMANTICS G1-G3), posted from the app socket's loop and done in
/// order, one at a time, by ``Agent/searchLoop()``: an app's saves reach the index in the order it sent them.
final class SearchKeeper: Sendable {
    /// One piece of work for the index.
    enum Job: Sendable {
        /// An app's activity, eligible for search, with its state now (IPC `index`): decoded and saved by the loop.
        case save(bundle: String, key: RowKey, payload: Data)
        /// An app's saved entries by persistent identifier, or all of them (IPC `delete`; G3).
        case delete(bundle: String, identifiers: [String]?, reply: @Sendable (Result<Int, SearchError>) -> Void)
        /// One entry by its id, for a continuation (G2).
        case lookup(id: Int64, reply: @Sendable (Result<SearchEntry?, SearchError>) -> Void)
        /// An app's connection closed: its live activities' rows are no longer replaced by later saves.
        case forget(app: UInt64)

        /// Answers a request with `error`; a save or a forget has nobody waiting.
        func fail(_ error: SearchError) {
            switch self {
            case .delete(_, _, let reply): reply(.failure(error))
            case .lookup(_, let reply): reply(.failure(error))
            case .save, .forget: break
            }
        }
    }

    /// A live activity: the app's connection and the app's own number for it. Its saves replace one entry while it
    /// lives, when it has no persistent identifier (with one, the identifier decides: G3).
    struct RowKey: Hashable, Sendable {
        var app: UInt64
        var activity: UInt64
    }

    /// `STATE/search.sqlite`.
    let path: String
    let limits: SearchLimits
    /// How often expired entries are purged (G1): they are never returned anyway, so this only frees space.
    let purgeInterval: Duration
    let bell = Doorbell()
    private let inbox = NIOLockedValueBox<[Job]>([])

    init(stateFolder: URL, limits: SearchLimits, purgeInterval: Duration = .seconds(3_600)) {
        path = stateFolder.appendingPathComponent(SearchIndex.fileName).path
        self.limits = limits
        self.purgeInterval = purgeInterval
    }

    /// Queues `job` for the loop.
    func post(_ job: Job) {
        inbox.withLockedValue { $0.append(job) }
        bell.ring()
    }

    /// The jobs posted since the last call, oldest first.
    func take() -> [Job] {
        inbox.withLockedValue { jobs in
            defer { jobs.removeAll() }
            return jobs
        }
    }
}
