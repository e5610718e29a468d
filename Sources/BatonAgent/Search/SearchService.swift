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

/// The device's search index (issue 15; SEMANTICS G1-G3; issue 26 item 1): keeps `STATE/search.sqlite`, saves what
/// the device's apps say is eligible for search, deletes what an app asks, purges what expired, and looks entries up
/// for a continuation (G2). Opened at start, written in order, purged hourly. It stops after the app socket (services
/// stop in reverse order), so what apps sent before the shutdown is saved.
///
/// It owns its state: the index, the file it was opened from, the rows of live activities, and the purge schedule
/// (``SearchIndexUpkeep``, whose decisions are pure), all in its own `run()`. It is built with narrow values: its
/// ``SearchQueue`` (the one handle the agent keeps), the state folder, the limits, the logger and an uptime clock; it
/// holds no agent. Everything touching the file runs in its one loop, in the order it was asked, off the app
/// socket's event loop and never blocking Swift's cooperative pool (SQLite runs on GRDB's queues).
struct SearchService: Service, CustomStringConvertible {
    /// The index while it runs, handed from the loop to the drain at shutdown.
    private struct Index: Sendable {
        /// The index, nil when it could not be opened.
        var index: SearchIndex?
        /// The file it was opened from: when it is replaced or removed, the next job opens the new one instead of
        /// writing to the old.
        var file: SearchIndexUpkeep.FileID?
        /// The row of each live activity without a persistent identifier.
        var rows: [SearchQueue.RowKey: Int64] = [:]
    }

    let queue: SearchQueue
    /// `STATE/search.sqlite`.
    let path: String
    let limits: SearchLimits
    /// How often expired entries are purged (G1).
    let purgeInterval: Duration
    let logger: Logger
    /// The agent's clock: its uptime is the purge schedule's time, and the loop's sleeps are timed on it.
    let clock: AgentClock

    var description: String { "search index" }

    /// Uptime nanoseconds.
    private func now() -> UInt64 {
        clock.uptimeNanoseconds()
    }

    init(
        queue: SearchQueue,
        stateFolder: URL,
        limits: SearchLimits,
        purgeInterval: Duration = .seconds(3_600),
        logger: Logger,
        clock: AgentClock = .system
    ) {
        self.queue = queue
        path = stateFolder.appendingPathComponent(SearchIndex.fileName).path
        self.limits = limits
        self.purgeInterval = purgeInterval
        self.logger = logger
        self.clock = clock
    }

    func run() async {
        let index = await cancelWhenGracefulShutdown { await indexLoop() }
        await drain(index)
    }

    /// Runs the index until the task is cancelled (the service's graceful shutdown): opens it, then does each job in
    /// order and purges expired entries when the upkeep says.
    private func indexLoop() async -> Index {
        var upkeep = SearchIndexUpkeep(purgeInterval: purgeInterval)
        var open = Index()
        await reopen(&open)
        while !Task.isCancelled {
            // The purge before the jobs: the one at start is then over before the first job is answered, so it never
            // looks at the file while whoever asked goes on (a test replacing the file saw it half made).
            if upkeep.isPurgeDue(now: now()) {
                await checkFile(&open)
                if let index = open.index {
                    do {
                        let purged = try await index.purgeExpired()
                        if purged > 0 { logger.info("search: purged \(purged) expired entries (G1)") }
                    } catch {
                        await recover(from: error, after: nil, &open)
                    }
                }
                upkeep.purged(now: now())
            }
            let jobs = queue.take()
            if !jobs.isEmpty {
                open = await performUncancelled(jobs, open)
            }
            let looked = now()
            await queue.bell.wait(timeout: upkeep.untilPurge(now: looked), from: looked, clock: clock)
        }
        return open
    }

    /// Does `jobs` to the end even when the shutdown cancels the loop meanwhile: they are out of the queue, so the drain
    /// would not see them, and a write cancelled half-way (GRDB's async write throws on cancellation) would lose an
    /// activity the app has been told is saved (G1; "nothing lost"). A task of its own does not inherit the loop's
    /// cancellation.
    private func performUncancelled(_ jobs: [SearchQueue.Job], _ index: Index) async -> Index {
        await Task {
            var open = index
            for job in jobs {
                await perform(job, &open)
            }
            return open
        }.value
    }

    /// Does what was asked before the shutdown (the app socket has closed by now: nothing more comes), outside the
    /// cancelled loop so the writes are not cancelled with it.
    private func drain(_ index: Index) async {
        var open = index
        for job in queue.take() {
            await perform(job, &open)
        }
    }

    /// Does one job against the index (saves are dropped with a log line while it cannot be opened; requests are
    /// answered with the error).
    private func perform(_ job: SearchQueue.Job, _ open: inout Index) async {
        if case .forget(let app) = job {
            open.rows = open.rows.filter { $0.key.app != app }
            return
        }
        await checkFile(&open)
        guard let index = open.index else {
            return job.fail(SearchError(.unwritable, "The search index at \(path) cannot be opened; the agent's log says why."))
        }
        do {
            switch job {
            case .save(let bundle, let key, let data):
                guard let entry = entry(of: data, bundle: bundle) else { return }
                do {
                    let id = try await index.save(entry, replacing: entry.persistentIdentifier == nil ? open.rows[key] : nil)
                    open.rows[key] = id
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
            await recover(from: error, after: job, &open)
        }
    }

    /// The entry an app's `index` makes, or nil (logged) when it is not indexed: only what the app itself marked
    /// (G1), with a persistent identifier `delete` can name (G3), in a payload that decodes.
    private func entry(of data: Data, bundle: String) -> SearchEntry? {
        do {
            let payload = try ActivityPayload(decoding: data)
            guard payload.isEligibleForSearch else { return nil }
            if let identifier = payload.persistentIdentifier, identifier.utf8.count > IPCMessage.maximumPersistentIdentifierLength {
                logger.notice(
                    "search: \(bundle)'s activity is not indexed: its persistent identifier is over \(IPCMessage.maximumPersistentIdentifierLength) bytes",
                    metadata: ["app": "\(bundle)"]
                )
                return nil
            }
            return try SearchEntry(activity: payload, bundleIdentifier: bundle)
        } catch {
            logger.notice("search: \(bundle)'s activity cannot be indexed: \(error)", metadata: ["app": "\(bundle)"])
            return nil
        }
    }

    /// After a failure of `job` (nil: the purge), as ``SearchIndexUpkeep/recovery(after:saving:)`` decides.
    private func recover(from error: any Error, after job: SearchQueue.Job?, _ open: inout Index) async {
        var saving = false
        if case .save? = job { saving = true }
        switch SearchIndexUpkeep.recovery(after: error, saving: saving) {
        case .none:
            return
        case .requeue:
            // Done again by the drain, after the loop ends.
            if let job { queue.post(job) }
        case .keep:
            logger.warning("search: \(error)")
        case .reopen:
            logger.error("search: \((error as? SearchError)?.message ?? "\(error)")")
            open.index = nil
            await reopen(&open)
        }
    }

    /// Opens the index again when its file is no longer the one opened (replaced, removed), or when it is not open.
    private func checkFile(_ open: inout Index) async {
        guard SearchIndexUpkeep.mustOpen(isOpen: open.index != nil, opened: open.file, onDisk: Self.fileID(at: path)) else { return }
        await reopen(&open)
    }

    /// Opens the index on a thread of its own (opening waits up to ``SearchIndex/busyTimeout`` for another process's
    /// lock). A damaged file is moved aside to `search.sqlite.damaged` and a new one made. Rows of live activities
    /// are forgotten: they belonged to the old file.
    private func reopen(_ open: inout Index) async {
        let (path, limits, logger) = (path, limits, logger)
        open.index = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Self.openIndex(path: path, limits: limits, logger: logger))
            }
        }
        open.file = Self.fileID(at: path)
        open.rows = [:]
    }

    private static func openIndex(path: String, limits: SearchLimits, logger: Logger) -> SearchIndex? {
        do {
            return try SearchIndex(path: path, limits: limits)
        } catch let error as SearchError where error.code == .damaged {
            logger.error("search: \(error.message) Setting it aside as \(path).damaged and starting an empty index.")
            do {
                try SearchIndex.setAside(at: path)
                return try SearchIndex(path: path, limits: limits)
            } catch {
                logger.error("search: no index: \(error)")
                return nil
            }
        } catch {
            logger.error("search: no index: \(error)")
            return nil
        }
    }

    /// The device and inode of the file at `path`, nil when there is none.
    static func fileID(at path: String) -> SearchIndexUpkeep.FileID? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return SearchIndexUpkeep.FileID(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }
}
