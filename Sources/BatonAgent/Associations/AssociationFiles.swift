import BatonAssociations
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The association files an agent holds (SEMANTICS E4): each domain's record, as read from the cache or fetched
/// since, with its file parsed once. A value: ``AssociationService``'s loop owns the one that changes and sends the
/// agent a copy after each change, from which the agent builds its router (issue 26 item 1). No I/O, no clock: the
/// time is passed in.
struct AssociationFiles: Sendable {
    private struct Entry: Sendable {
        var record: AssociationRecord
        var association: AppSiteAssociation?
    }

    private var entries: [String: Entry] = [:]

    init() {}

    /// Every record held, by domain (what `baton aasa status` shows from the cache).
    var records: [AssociationRecord] {
        entries.values.map(\.record).sorted { $0.domain < $1.domain }
    }

    /// The record held for `domain`, if any.
    func record(_ domain: String) -> AssociationRecord? {
        entries[domain]?.record
    }

    /// The records of `domains` held.
    func records(of domains: Set<String>) -> [AssociationRecord] {
        domains.compactMap { entries[$0]?.record }
    }

    /// Takes what the cache holds (`readAll()`); returns the records that differ from those held.
    mutating func absorb(_ records: [AssociationRecord]) -> [AssociationRecord] {
        var changed: [AssociationRecord] = []
        for record in records where entries[record.domain]?.record != record {
            keep(record)
            changed.append(record)
        }
        return changed
    }

    /// Keeps `record`, just fetched (written to the cache or not).
    mutating func keep(_ record: AssociationRecord) {
        entries[record.domain] = Entry(record: record, association: try? record.association())
    }

    /// The approvals at `now`: every file still valid; for the others, why not (E4).
    func approvals(now: Date) -> DomainApprovals {
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

    /// The domains whose files `registry`'s apps need: every `activitycontinuation:` and `applinks:` domain.
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
