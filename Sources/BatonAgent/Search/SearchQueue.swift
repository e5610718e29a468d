import BatonSearch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// How the rest of the agent asks the search service for work (issue 15; SEMANTICS G1-G3; issue 26 item 1): the one
/// handle to ``SearchService`` the agent keeps. Posted from the app socket's loop, done in order, one at a time, by
/// the service's loop: an app's saves reach the index in the order it sent them. Requests are answered by callback
/// (or by `await`, ``entry(id:)``); nothing of the index itself is reachable from here.
final class SearchQueue: Sendable {
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

    /// What the service's loop sleeps on between jobs.
    let bell = Doorbell()
    private let inbox = NIOLockedValueBox<[Job]>([])

    init() {}

    /// IPC `index` from app connection `app` (G1): activity `activity`'s state, saved if the app marked it eligible.
    func save(_ payload: Data, activity: UInt64, bundle: String, app: UInt64) {
        post(.save(bundle: bundle, key: RowKey(app: app, activity: activity), payload: payload))
    }

    /// IPC `delete` (G3): `bundle`'s entries with these identifiers, or all of its entries; `reply` gets the count.
    func delete(bundle: String, identifiers: [String]?, reply: @escaping @Sendable (Result<Int, SearchError>) -> Void) {
        post(.delete(bundle: bundle, identifiers: identifiers, reply: reply))
    }

    /// The saved entry `id`, unless it is gone or expired (G2).
    func entry(id: Int64) async -> Result<SearchEntry?, SearchError> {
        await withCheckedContinuation { continuation in
            post(.lookup(id: id) { continuation.resume(returning: $0) })
        }
    }

    /// App connection `app` closed: its live activities' later saves make new entries.
    func forget(app: UInt64) {
        post(.forget(app: app))
    }

    /// Queues `job` for the loop.
    func post(_ job: Job) {
        inbox.withLockedValue { $0.append(job) }
        bell.ring()
    }

    /// The jobs posted since the last call, oldest first (the service's loop alone takes them).
    func take() -> [Job] {
        inbox.withLockedValue { jobs in
            defer { jobs.removeAll() }
            return jobs
        }
    }
}
