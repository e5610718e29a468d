import BatonAssociations
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// The agent's association files (SEMANTICS E4): the records read from the cache and fetched since, the
/// ``AssociationSchedule`` that says when to fetch, and the events waiting for ``Agent/associationLoop()``. Small
/// synchronous state under locks; the loop does the I/O.
final class AssociationKeeper: Sendable {
    /// What the loop is told.
    enum Event: Sendable {
        /// The registry changed: the wanted domains may have.
        case appsChanged
        /// Something wrote the cache folder (`baton aasa fetch`, or this agent).
        case cacheChanged
        /// A fetch of this domain ended.
        case fetched(String, Result<AssociationFetcher.Fetched, AssociationFetchError>)
    }

    struct Entry: Sendable {
        var record: AssociationRecord
        var association: AppSiteAssociation?
    }

    let policy: AssociationPolicy
    let cache: AssociationCache
    /// Nil when the fetcher cannot be made (an unreadable --cacert): nothing is fetched, the cache still counts.
    let fetcher: Result<AssociationFetcher, AssociationFetchError>
    let bell = Doorbell()
    let schedule: NIOLockedValueBox<AssociationSchedule>
    let entries = NIOLockedValueBox<[String: Entry]>([:])
    let inbox = NIOLockedValueBox<[Event]>([])

    init(configuration: AgentConfiguration) {
        policy = configuration.associations
        cache = AssociationCache(stateFolder: configuration.store.folder)
        schedule = NIOLockedValueBox(AssociationSchedule(policy: configuration.associations))
        let environment = ProcessInfo.processInfo.environment
        fetcher = Result {
            try AssociationFetcher(
                extraRootFiles: configuration.associationRootFiles + AssociationFetcher.rootFiles(environment: environment),
                resolve: configuration.associationResolve,
                connectTimeout: configuration.associations.connectTimeout,
                totalTimeout: configuration.associations.totalTimeout
            )
        }.mapError { $0 as? AssociationFetchError ?? AssociationFetchError(.tlsFailed, "\($0)") }
    }

    /// Tells the loop something happened.
    func post(_ event: Event) {
        inbox.withLockedValue { $0.append(event) }
        bell.ring()
    }

    func takeEvents() -> [Event] {
        inbox.withLockedValue { events in
            defer { events = [] }
            return events
        }
    }

    /// Reads the whole cache into memory; returns the records that changed and the files that were damaged.
    func reload() -> (changed: [AssociationRecord], problems: [AssociationFetchError]) {
        let (records, problems) = cache.readAll()
        let changed = entries.withLockedValue { entries in
            var changed: [AssociationRecord] = []
            for record in records where entries[record.domain]?.record != record {
                entries[record.domain] = Entry(record: record, association: try? record.association())
                changed.append(record)
            }
            return changed
        }
        return (changed, problems)
    }

    /// Keeps `record`, just written.
    func keep(_ record: AssociationRecord) {
        let association = try? record.association()
        entries.withLockedValue { $0[record.domain] = Entry(record: record, association: association) }
    }

    /// The approvals at `now`: every file still valid; for the others, why not (E4).
    func approvals(now: Date) -> DomainApprovals {
        let entries = entries.withLockedValue { $0 }
        var valid: [String: AppSiteAssociation] = [:]
        var unavailable: [String: String] = [:]
        for (domain, entry) in entries {
            let record = entry.record
            if record.isValid(at: now), let association = entry.association {
                valid[domain] = association
                continue
            }
            let failure = record.lastError.map { "the last fetch failed with \($0)" } ?? "no fetch was tried since"
            if let expires = record.expiresAt, record.json != nil {
                unavailable[domain] = "the file for \(domain) expired at \(Self.timestamp(expires)), and \(failure)"
            } else if let error = record.lastError {
                unavailable[domain] = "no fetch of \(domain)'s file has succeeded; the last failed with \(error)"
            }
        }
        return DomainApprovals(valid, unavailable: unavailable)
    }

    /// The domains whose files the installed apps need: every `activitycontinuation:` and `applinks:` domain.
    static func wantedDomains(_ registry: AppRegistry) -> Set<String> {
        var domains: Set<String> = []
        for app in registry.apps {
            for domain in app.associatedDomains {
                switch domain.service {
                case .activityContinuation, .appLinks:
                    let name = domain.approvingDomain.lowercased()
                    if AssociationCache.isStorable(name) { domains.insert(name) }
                default:
                    continue
                }
            }
        }
        return domains
    }

    /// A time as people and logs read it: ISO 8601 in UTC, to the second.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
