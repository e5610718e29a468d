import BatonCore
import BatonSearch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// On-device search (issue 15; SEMANTICS G1-G3): the agent keeps `STATE/search.sqlite`, saves what its own apps say
/// is eligible for search, deletes what an app asks, purges what expired, and continues a result through the same
/// path as a handoff (G2). Everything touching the file runs in the search service's one loop, in the order it was
/// asked, off the app socket's event loop and never blocking Swift's cooperative pool (SQLite runs on GRDB's queues).
extension Agent {
    /// The search loop's state, handed from the loop to ``drainSearch(_:)`` at shutdown.
    struct SearchLoopState: Sendable {
        /// The index, nil when it could not be opened.
        var index: SearchIndex?
        /// The file it was opened from (device and inode): when `baton search --rebuild` or a person replaces or
        /// removes the file, the next job opens the new one instead of writing to the old.
        var file: FileID?
        /// The row of each live activity without a persistent identifier.
        var rows: [SearchKeeper.RowKey: Int64] = [:]
    }

    /// A file's device and inode.
    struct FileID: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64

        init?(path: String) {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }
    }

    /// Runs the index until the task is cancelled (the service's graceful shutdown): opens it, then does each job in
    /// order and purges expired entries every `purgeInterval`.
    func searchLoop() async -> SearchLoopState {
        let keeper = search
        var loop = SearchLoopState()
        await reopenSearchIndex(&loop)
        var nextPurge = ContinuousClock.now
        while !Task.isCancelled {
            for job in keeper.take() {
                await perform(job, &loop)
            }
            if ContinuousClock.now >= nextPurge {
                await checkFile(&loop)
                if let index = loop.index {
                    do {
                        let purged = try await index.purgeExpired()
                        if purged > 0 { logger.info("search: purged \(purged) expired entries (G1)") }
                    } catch {
                        await recover(from: error, &loop)
                    }
                }
                nextPurge = ContinuousClock.now + keeper.purgeInterval
            }
            await keeper.bell.wait(timeout: ContinuousClock.now.duration(to: nextPurge))
        }
        return loop
    }

    /// Does what was asked before the shutdown (the app socket has closed by now: nothing more comes), outside the
    /// cancelled loop so the writes are not cancelled with it.
    func drainSearch(_ state: SearchLoopState) async {
        var loop = state
        for job in search.take() {
            await perform(job, &loop)
        }
    }

    /// Does one job against the index (saves are dropped with a log line while it cannot be opened; requests are
    /// answered with the error).
    private func perform(_ job: SearchKeeper.Job, _ loop: inout SearchLoopState) async {
        if case .forget(let app) = job {
            loop.rows = loop.rows.filter { $0.key.app != app }
            return
        }
        await checkFile(&loop)
        guard let index = loop.index else {
            return job.fail(SearchError(.unwritable, "The search index at \(search.path) cannot be opened; the agent's log says why."))
        }
        do {
            switch job {
            case .save(let bundle, let key, let data):
                let entry: SearchEntry
                do {
                    let payload = try ActivityPayload(decoding: data)
                    // Only what the app itself marked (G1); a payload saying otherwise is not indexed.
                    guard payload.isEligibleForSearch else { return }
                    // An identifier longer than `delete` can name could never be deleted (G3): not indexed.
                    if let identifier = payload.persistentIdentifier, identifier.utf8.count > IPCMessage.maximumPersistentIdentifierLength {
                        return logger.notice(
                            "search: \(bundle)'s activity is not indexed: its persistent identifier is over \(IPCMessage.maximumPersistentIdentifierLength) bytes",
                            metadata: ["app": "\(bundle)"]
                        )
                    }
                    entry = try SearchEntry(activity: payload, bundleIdentifier: bundle)
                } catch {
                    return logger.notice("search: \(bundle)'s activity cannot be indexed: \(error)", metadata: ["app": "\(bundle)"])
                }
                do {
                    let id = try await index.save(entry, replacing: entry.persistentIdentifier == nil ? loop.rows[key] : nil)
                    loop.rows[key] = id
                    logger.debug("search: saved \(bundle)'s activity as entry \(id)", metadata: ["app": "\(bundle)"])
                } catch let error as SearchError where error.code == .tooLarge || error.code == .invalidEntry {
                    logger.notice("search: \(bundle)'s activity is not indexed: \(error.message)", metadata: ["app": "\(bundle)"])
                }
            case .delete(let bundle, let identifiers, let reply):
                if let identifiers {
                    reply(.success(try await index.delete(persistentIdentifiers: identifiers, of: bundle)))
                } else {
                    reply(.success(try await index.deleteAll(of: bundle)))
                }
            case .lookup(let id, let reply):
                reply(.success(try await index.entry(id: id)))
            case .forget:
                break
            }
        } catch {
            job.fail(error as? SearchError ?? SearchError(.database, "\(error)"))
            // The shutdown cancelled the loop mid-write (GRDB's async writes are cancellable): a save is done again
            // by the drain.
            if error is CancellationError, case .save = job { return search.post(job) }
            await recover(from: error, &loop)
        }
    }

    /// After a failure: a damaged index is set aside and a new, empty one started (the account is not touched);
    /// other failures are logged and the index kept.
    private func recover(from error: any Error, _ loop: inout SearchLoopState) async {
        if error is CancellationError { return }  // the shutdown, not a failure
        guard let error = error as? SearchError, error.code == .damaged else {
            return logger.warning("search: \(error)")
        }
        logger.error("search: \(error.message)")
        loop.index = nil
        await reopenSearchIndex(&loop)
    }

    /// Opens the index again when its file is no longer the one opened (replaced, removed), or when it is not open.
    private func checkFile(_ loop: inout SearchLoopState) async {
        guard loop.index == nil || FileID(path: search.path) != loop.file else { return }
        await reopenSearchIndex(&loop)
    }

    /// Opens the index on a thread of its own (opening waits up to ``SearchIndex/busyTimeout`` for another process's
    /// lock). A damaged file is moved aside to `search.sqlite.damaged` and a new one made. Rows of live activities
    /// are forgotten: they belonged to the old file.
    private func reopenSearchIndex(_ loop: inout SearchLoopState) async {
        let keeper = search
        let logger = self.logger
        loop.index = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Self.openIndex(keeper, logger: logger))
            }
        }
        loop.file = FileID(path: keeper.path)
        loop.rows = [:]
    }

    private static func openIndex(_ keeper: SearchKeeper, logger: Logger) -> SearchIndex? {
        do {
            return try SearchIndex(path: keeper.path, limits: keeper.limits)
        } catch let error as SearchError where error.code == .damaged {
            logger.error("search: \(error.message) Setting it aside as \(keeper.path).damaged and starting an empty index.")
            do {
                try SearchIndex.setAside(at: keeper.path)
                return try SearchIndex(path: keeper.path, limits: keeper.limits)
            } catch {
                logger.error("search: no index: \(error)")
                return nil
            }
        } catch {
            logger.error("search: no index: \(error)")
            return nil
        }
    }

    // MARK: What apps and command lines ask

    /// IPC `index` from `bundle`'s connection (G1): queued for the search loop.
    func indexActivity(_ activity: UInt64, payload: Data, bundle: String, app: UInt64) {
        search.post(.save(bundle: bundle, key: SearchKeeper.RowKey(app: app, activity: activity), payload: payload))
    }

    /// IPC `delete` (G3): `bundle`'s entries with these identifiers, or all of its entries; answered with `deleted`.
    func deleteSaved(_ request: UInt64, identifiers: [String]?, bundle: String, on connection: IPCConnection) {
        search.post(
            .delete(bundle: bundle, identifiers: identifiers) { result in
                switch result {
                case .success(let count):
                    connection.send(.deletedSaved(request: request, count: UInt64(count), failure: nil))
                case .failure(let error):
                    connection.send(
                        .deletedSaved(request: request, count: 0, failure: SearchIndexFailure(.init(rawValue: error.code.name), error.message))
                    )
                }
            }
        )
    }

    /// The saved entry `id`, unless it is gone or expired.
    func savedEntry(_ id: Int64) async -> Result<SearchEntry?, SearchError> {
        await withCheckedContinuation { continuation in
            search.post(.lookup(id: id) { continuation.resume(returning: $0) })
        }
    }

    /// Continues search result `id` here (G2): its app gets it as it would get a handoff, launched first when it
    /// does not run, `willContinue` and then the state, or why not (C5). Nothing is fetched: the state was saved here.
    public func continueSaved(id: Int64) async -> ContinuationOutcome {
        let started = DispatchTime.now().uptimeNanoseconds
        func failed(_ failure: ContinuationOutcome.Failure, _ message: String, app: String = "") -> ContinuationOutcome {
            ContinuationOutcome(
                app: app, reason: "", failure: failure, message: message,
                microseconds: (DispatchTime.now().uptimeNanoseconds - started) / 1000
            )
        }
        let entry: SearchEntry
        switch await savedEntry(id) {
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
        let id = state.withLockedValue { state in
            defer { state.nextRequest += 1 }
            return HandoffBroker.ContinuationID(state.nextRequest)
        }
        let reason = "G2: saved for search by \(app.bundleIdentifier) on this device"
        return await withTaskCancellationHandler {
            await withCheckedContinuation { waiter in
                let actions = state.withLockedValue { state -> [HandoffBroker.Action] in
                    let running = state.apps[app.bundleIdentifier].flatMap { $0.channel.isActive ? $0.appID : nil }
                    state.continuationRecords[id] = ContinuationRecord(entry: nil, reason: reason, started: started, waiter: waiter)
                    let route = HandoffBroker.Route.saved(
                        bundle: app.bundleIdentifier, activityType: entry.activityType, running: running, payload: entry.payload
                    )
                    return state.broker.continueAsked(id, route: route)
                }
                perform(actions)
            }
        } onCancel: {
            broker { $0.cancel(id) }
        }
    }
}

/// The device's search index (issue 15): opened at start, written in order, purged hourly. It stops after the app
/// socket (services stop in reverse order), so what apps sent before the shutdown is saved.
struct SearchService: Service, CustomStringConvertible {
    let agent: Agent
    var description: String { "search index" }

    func run() async {
        let state = await cancelWhenGracefulShutdown { await agent.searchLoop() }
        await agent.drainSearch(state)
    }
}
