import BatonAssociations
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ServiceLifecycle

/// Association files over HTTPS (issue 14 part 1; SEMANTICS E3, E4): the domains every installed app claims are
/// fetched in the background, cached in the state folder, fetched again before they expire and after failures, and
/// the router is rebuilt with the approvals whenever they change. Nothing of it is on the continuation path: a
/// continuation reads the router built last, and a slow or hanging server only holds its own fetch task.
extension Agent {
    /// The approvals the cache gives at start, before any fetch (so a restart does not forget them).
    static func startingApprovals(_ keeper: AssociationKeeper, logger: Logger) -> DomainApprovals {
        // A damaged file is set aside by the read; with no record its domain is fetched at once.
        for problem in keeper.reload().problems { logger.warning("\(problem)") }
        return keeper.approvals(now: Date())
    }

    /// Runs the schedule (``AssociationSchedule``): its actions become fetch tasks, router rebuilds and the loop's
    /// next wake. Ends when the task is cancelled (the service's graceful shutdown), cancelling running fetches.
    func associationLoop() async {
        let keeper = associations
        if case .failure(let error) = keeper.fetcher {
            logger.error("association files will not be fetched: \(error)")
        }
        var wanted: Set<String>?
        var wakeAt: Date?
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let now = Date()
                var actions: [AssociationSchedule.Action] = []
                let fresh = AssociationKeeper.wantedDomains(registry)
                if fresh != wanted {
                    wanted = fresh
                    // The cache says which of them are fresh already.
                    let known = keeper.entries.withLockedValue { entries in fresh.compactMap { entries[$0]?.record } }
                    actions += keeper.schedule.withLockedValue { $0.wantedDomainsChanged(fresh, known: known, now: now) }
                }
                var approvalsChanged = false
                for event in keeper.takeEvents() {
                    switch event {
                    case .appsChanged:
                        break  // the wanted domains were read above
                    case .cacheChanged:
                        let (changed, problems) = keeper.reload()
                        for problem in problems { logger.warning("\(problem)") }
                        for record in changed { actions += keeper.schedule.withLockedValue { $0.recordRead(record, now: now) } }
                        approvalsChanged = approvalsChanged || !changed.isEmpty
                    case .fetched(let domain, let result):
                        actions += recordFetch(domain, result, now: now)
                        approvalsChanged = true
                    }
                }
                actions += keeper.schedule.withLockedValue { $0.timePassed(now: now) }
                for action in actions {
                    switch action {
                    case .fetch(let domain):
                        guard case .success(let fetcher) = keeper.fetcher else { continue }
                        group.addTask {
                            let result: Result<AssociationFetcher.Fetched, AssociationFetchError>
                            do {
                                result = .success(try await fetcher.fetch(domain))
                            } catch let error as AssociationFetchError {
                                result = .failure(error)
                            } catch {
                                result = .failure(AssociationFetchError(.malformed, "\(domain): \(error)"))
                            }
                            keeper.post(.fetched(domain, result))
                        }
                    case .expired(let domain):
                        logger.notice("the association file for \(domain) expired; pages of \(domain) go to the browser until a fetch succeeds (E4)")
                        approvalsChanged = true
                    case .wake(let at):
                        wakeAt = at
                    }
                }
                if approvalsChanged { rebuildRouter(now: now) }
                let timeout = wakeAt.map { Duration.milliseconds(max(0, Int64($0.timeIntervalSince(Date()) * 1000)) + 1) }
                await keeper.bell.wait(timeout: timeout)
                if let at = wakeAt, at <= Date() { wakeAt = nil }
            }
            group.cancelAll()
        }
    }

    /// Writes a fetch's outcome to the cache, logs it, and tells the schedule.
    func recordFetch(_ domain: String, _ result: Result<AssociationFetcher.Fetched, AssociationFetchError>, now: Date) -> [AssociationSchedule.Action] {
        let keeper = associations
        let record: AssociationRecord
        do {
            record = try keeper.cache.record(domain, result, policy: keeper.policy, now: now)
        } catch {
            logger.warning("cannot cache the association file for \(domain): \(Agent.logLine("\(error)"))")
            var unsaved = keeper.entries.withLockedValue { $0[domain]?.record } ?? AssociationRecord(domain: domain)
            unsaved.lastAttempt = now
            if case .success(let fetched) = result {
                unsaved.json = fetched.json
                unsaved.fetchedAt = now
                unsaved.expiresAt = now.addingTimeInterval(keeper.policy.lifetime(maxAge: fetched.maxAge))
            }
            record = unsaved
        }
        keeper.keep(record)
        switch result {
        case .success(let fetched):
            let apps = fetched.association.mentionedAppIDs.count
            logger.info("association file for \(domain) fetched from \(Agent.logLine(fetched.url))\(fetched.signed ? " (signed)" : ""): \(apps) app\(apps == 1 ? "" : "s"), until \(AssociationKeeper.timestamp(record.expiresAt ?? now))")
            return keeper.schedule.withLockedValue { $0.fetchSucceeded(domain, fetchedAt: now, expiresAt: record.expiresAt ?? now, now: now) }
        case .failure(let error):
            let still = record.isValid(at: now) ? "; the file fetched before counts until \(AssociationKeeper.timestamp(record.expiresAt ?? now))" : ""
            logger.warning("association file for \(domain) not fetched: \(Agent.logLine("\(error)"))\(still)")
            return keeper.schedule.withLockedValue { $0.fetchFailed(domain, now: now) }
        }
    }

    /// Builds the router again over the current registry with the approvals at `now`.
    func rebuildRouter(now: Date) {
        let approvals = associations.approvals(now: now)
        catalog.withLockedValue { $0.router = ActivityRouter(registry: $0.registry, approvals: approvals) }
    }

    /// Where this agent would send an activity now, and why: the router the next continuation uses (tests).
    public func route(_ request: RouteRequest) -> RouteDecision {
        router.route(request)
    }

    /// The association records this agent holds, by domain (what `baton aasa status` shows from the cache).
    public func associationRecords() -> [AssociationRecord] {
        associations.entries.withLockedValue { $0.values.map(\.record) }.sorted { $0.domain < $1.domain }
    }
}

/// Fetching association files in the background (issue 14): its loop sleeps until a fetch is due, a file expires,
/// the apps change or the cache folder is written.
struct AssociationService: Service, CustomStringConvertible {
    let agent: Agent
    var description: String { "association files" }

    func run() async {
        await cancelWhenGracefulShutdown { await agent.associationLoop() }
    }
}
