import BatonAssociations
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Association files over HTTPS (issue 14 part 1; SEMANTICS E3, E4): the domains every installed app claims are
/// fetched in the background, cached in the state folder, fetched again before they expire and after failures, and
/// the agent is sent the files whenever they change, to rebuild its router. Nothing of it is on the continuation
/// path: a continuation reads the router built last, and a slow or hanging server only holds its own fetch task.
///
/// It owns its state (issue 26 item 1): the ``AssociationFiles`` held and the ``AssociationSchedule`` (the pure
/// decisions, time passed in) live in its loop, touched by nothing else; what it is told waits behind its
/// ``Trigger``, the one handle others hold. What it needs of the agent comes in at construction as narrow values:
/// the cache, the fetcher, the domains the apps claim (read at each turn), where to send the files, a clock. It
/// holds no agent.
struct AssociationService: Service, CustomStringConvertible {
    /// How the rest of the agent tells the service something changed: the one handle to it the agent keeps.
    final class Trigger: Sendable {
        /// What the loop is told.
        fileprivate enum Event: Sendable {
            /// The registry changed: the wanted domains may have.
            case appsChanged
            /// Something wrote the cache folder (`baton aasa fetch`, or this agent).
            case cacheChanged
            /// A fetch of this domain ended.
            case fetched(String, Result<AssociationFetcher.Fetched, AssociationFetchError>)
        }

        fileprivate let bell = Doorbell()
        private let inbox = NIOLockedValueBox<[Event]>([])

        init() {}

        /// The installed apps changed: the domains they claim are read again.
        func appsChanged() {
            post(.appsChanged)
        }

        /// Something wrote the cache folder: it is read again, and what another program fetched counts.
        func cacheChanged() {
            post(.cacheChanged)
        }

        fileprivate func post(_ event: Event) {
            inbox.withLockedValue { $0.append(event) }
            bell.ring()
        }

        fileprivate func takeEvents() -> [Event] {
            inbox.withLockedValue { events in
                defer { events = [] }
                return events
            }
        }
    }

    let trigger: Trigger
    let policy: AssociationPolicy
    let cache: AssociationCache
    /// A failure when the fetcher cannot be made (an unreadable --cacert): nothing is fetched, the cache still counts.
    let fetcher: Result<AssociationFetcher, AssociationFetchError>
    /// The domains the installed apps claim now (``AssociationFiles/wantedDomains(_:)``), read at each turn.
    let wantedDomains: @Sendable () -> Set<String>
    /// Where the files go after each change, with the time they were judged at (the agent rebuilds its router).
    let publish: @Sendable (AssociationFiles, Date) -> Void
    let logger: Logger
    /// The agent's clock: its wall time is the records', the schedule's and the files' lifetimes', and the loop's
    /// sleeps are timed on it.
    let clock: AgentClock
    /// What the cache held when the service was made: where its loop starts.
    private let starting: AssociationFiles

    var description: String { "association files" }

    /// Wall time now.
    private func now() -> Date {
        clock.date()
    }

    /// Reads the cache and publishes what it holds at once, before any fetch: a restart does not forget the files
    /// still valid, and the first router the agent builds trusts them. A damaged file is set aside by the read (its
    /// domain is then fetched at once) and logged.
    init(
        trigger: Trigger,
        policy: AssociationPolicy,
        cache: AssociationCache,
        fetcher: Result<AssociationFetcher, AssociationFetchError>,
        wantedDomains: @escaping @Sendable () -> Set<String>,
        publish: @escaping @Sendable (AssociationFiles, Date) -> Void,
        logger: Logger,
        clock: AgentClock = .system
    ) {
        self.trigger = trigger
        self.policy = policy
        self.cache = cache
        self.fetcher = fetcher
        self.wantedDomains = wantedDomains
        self.publish = publish
        self.logger = logger
        self.clock = clock
        var starting = AssociationFiles()
        let (records, problems) = cache.readAll()
        for problem in problems { logger.warning("\(problem)") }
        _ = starting.absorb(records)
        self.starting = starting
        publish(starting, now())
    }

    func run() async {
        await cancelWhenGracefulShutdown { await associationLoop() }
    }

    /// Runs the schedule (``AssociationSchedule``): its actions become fetch tasks, the files published and the
    /// loop's next wake. Ends when the task is cancelled (the service's graceful shutdown), cancelling running fetches.
    private func associationLoop() async {
        if case .failure(let error) = fetcher {
            logger.error("association files will not be fetched: \(error)")
        }
        var files = starting
        var schedule = AssociationSchedule(policy: policy)
        var wanted: Set<String>?
        var wakeAt: Date?
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let now = now()
                var actions: [AssociationSchedule.Action] = []
                let fresh = wantedDomains()
                if fresh != wanted {
                    wanted = fresh
                    // The cache says which of them are fresh already.
                    actions += schedule.wantedDomainsChanged(fresh, known: files.records(of: fresh), now: now)
                }
                var changed = false
                for event in trigger.takeEvents() {
                    switch event {
                    case .appsChanged:
                        break  // the wanted domains were read above
                    case .cacheChanged:
                        let (records, problems) = cache.readAll()
                        for problem in problems { logger.warning("\(problem)") }
                        let read = files.absorb(records)
                        for record in read { actions += schedule.recordRead(record, now: now) }
                        changed = changed || !read.isEmpty
                    case .fetched(let domain, let result):
                        let record = recordFetch(domain, result, held: files.record(domain), now: now)
                        files.keep(record)
                        switch result {
                        case .success:
                            actions += schedule.fetchSucceeded(domain, fetchedAt: now, expiresAt: record.expiresAt ?? now, now: now)
                        case .failure:
                            actions += schedule.fetchFailed(domain, now: now)
                        }
                        changed = true
                    }
                }
                actions += schedule.timePassed(now: now)
                for action in actions {
                    switch action {
                    case .fetch(let domain):
                        guard case .success(let fetcher) = fetcher else { continue }
                        group.addTask { [trigger] in
                            let result: Result<AssociationFetcher.Fetched, AssociationFetchError>
                            do {
                                result = .success(try await fetcher.fetch(domain))
                            } catch let error as AssociationFetchError {
                                result = .failure(error)
                            } catch {
                                result = .failure(AssociationFetchError(.malformed, "\(domain): \(error)"))
                            }
                            trigger.post(.fetched(domain, result))
                        }
                    case .expired(let domain):
                        logger.notice("the association file for \(domain) expired; pages of \(domain) go to the browser until a fetch succeeds (E4)")
                        changed = true
                    case .wake(let at):
                        wakeAt = at
                    }
                }
                if changed { publish(files, now) }
                let timeout = wakeAt.map { Duration.milliseconds(max(0, Int64($0.timeIntervalSince(self.now()) * 1000)) + 1) }
                await trigger.bell.wait(timeout: timeout, clock: clock)
                if let at = wakeAt, at <= self.now() { wakeAt = nil }
            }
            group.cancelAll()
        }
    }

    /// Writes a fetch's outcome to the cache and logs it; returns the record it made (kept in memory when the cache
    /// cannot be written, from `held`, the record held before).
    private func recordFetch(
        _ domain: String,
        _ result: Result<AssociationFetcher.Fetched, AssociationFetchError>,
        held: AssociationRecord?,
        now: Date
    ) -> AssociationRecord {
        let record: AssociationRecord
        do {
            record = try cache.record(domain, result, policy: policy, now: now)
        } catch {
            logger.warning("cannot cache the association file for \(domain): \(Agent.logLine("\(error)"))")
            var unsaved = held ?? AssociationRecord(domain: domain)
            unsaved.lastAttempt = now
            if case .success(let fetched) = result {
                unsaved.json = fetched.json
                unsaved.fetchedAt = now
                unsaved.expiresAt = now.addingTimeInterval(policy.lifetime(maxAge: fetched.maxAge))
            }
            record = unsaved
        }
        switch result {
        case .success(let fetched):
            let apps = fetched.association.mentionedAppIDs.count
            logger.info("association file for \(domain) fetched from \(Agent.logLine(fetched.url))\(fetched.signed ? " (signed)" : ""): \(apps) app\(apps == 1 ? "" : "s"), until \(AssociationFiles.timestamp(record.expiresAt ?? now))")
        case .failure(let error):
            let still = record.isValid(at: now) ? "; the file fetched before counts until \(AssociationFiles.timestamp(record.expiresAt ?? now))" : ""
            logger.warning("association file for \(domain) not fetched: \(Agent.logLine("\(error)"))\(still)")
        }
        return record
    }
}
