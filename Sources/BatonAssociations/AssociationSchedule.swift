#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// When to fetch which domain's association file, as a pure state machine (SEMANTICS E4; docs/ARCHITECTURE.md,
/// "Association files over HTTPS").
///
/// Events in, one `mutating func` each, the time passed in: the domains wanted changed (apps installed or removed),
/// a record was read from the cache, a fetch finished, time passed. Actions out: fetch a domain, a file expired (the
/// router must stop trusting it), and wake me at a time. No I/O, no clock, no tasks: ``AssociationService`` does
/// those. A domain is fetched when it has no valid record, again at ``AssociationPolicy/refreshFraction`` of its
/// lifetime, and after a failure once the backoff has passed; at most ``AssociationPolicy/concurrentFetches`` at once.
public struct AssociationSchedule: Sendable {
    /// What to do.
    public enum Action: Sendable, Hashable {
        /// Fetch this domain's file now.
        case fetch(String)
        /// This domain's file expired without a fresh one: approvals must be rebuilt without it.
        case expired(String)
        /// Call ``timePassed(now:)`` at this time (replaces any earlier wake; with none, wait for an event).
        case wake(at: Date)
    }

    private enum Phase: Sendable, Hashable {
        /// Waiting for the next fetch, due at this time.
        case waiting(until: Date)
        /// A fetch is running.
        case fetching
    }

    private struct Domain: Sendable, Hashable {
        var phase: Phase
        /// When the file held now stops counting; nil when there is none.
        var expiresAt: Date?
        /// Failed fetches since the last success.
        var failures = 0
    }

    /// The bounds and backoff.
    public let policy: AssociationPolicy
    private var domains: [String: Domain] = [:]

    /// A schedule with nothing wanted.
    public init(policy: AssociationPolicy) {
        self.policy = policy
    }

    /// The domains wanted now (every associated domain of every app, lowercased), with the cache's records of them.
    /// A new domain is due at once, unless its record says when (``recordRead(_:now:)``); domains no longer wanted
    /// are forgotten.
    public mutating func wantedDomainsChanged(_ wanted: Set<String>, known records: [AssociationRecord] = [], now: Date) -> [Action] {
        for domain in domains.keys where !wanted.contains(domain) { domains[domain] = nil }
        for domain in wanted where domains[domain] == nil {
            domains[domain] = Domain(phase: .waiting(until: now))
            if let record = records.first(where: { $0.domain == domain }) { adopt(record, now: now) }
        }
        return due(now: now)
    }

    /// A record of a wanted domain was read from the cache (another program wrote it): its next fetch is
    /// scheduled from it. Ignored while a fetch of the domain runs (its result comes next).
    public mutating func recordRead(_ record: AssociationRecord, now: Date) -> [Action] {
        adopt(record, now: now)
        return due(now: now)
    }

    private mutating func adopt(_ record: AssociationRecord, now: Date) {
        guard var domain = domains[record.domain], domain.phase != .fetching else { return }
        domain.failures = record.failures
        domain.expiresAt = record.json == nil ? nil : record.expiresAt
        var next = now
        if record.failures > 0, let attempt = record.lastAttempt {
            next = attempt.addingTimeInterval(policy.backoff(failures: record.failures))
        } else if let fetched = record.fetchedAt, let expires = domain.expiresAt {
            next = policy.refresh(fetchedAt: fetched, expiresAt: expires)
        }
        domain.phase = .waiting(until: next)
        domains[record.domain] = domain
    }

    /// A fetch succeeded: the file counts until `expiresAt`, and is fetched again at the refresh point.
    public mutating func fetchSucceeded(_ name: String, fetchedAt: Date, expiresAt: Date, now: Date) -> [Action] {
        guard var domain = domains[name] else { return due(now: now) }
        domain.failures = 0
        domain.expiresAt = expiresAt
        domain.phase = .waiting(until: policy.refresh(fetchedAt: fetchedAt, expiresAt: expiresAt))
        domains[name] = domain
        return due(now: now)
    }

    /// A fetch failed: the file held (if any) still counts until it expires; the next try waits the backoff.
    public mutating func fetchFailed(_ name: String, now: Date) -> [Action] {
        guard var domain = domains[name] else { return due(now: now) }
        domain.failures += 1
        domain.phase = .waiting(until: now.addingTimeInterval(policy.backoff(failures: domain.failures)))
        domains[name] = domain
        return due(now: now)
    }

    /// Time passed: what is due now.
    public mutating func timePassed(now: Date) -> [Action] {
        due(now: now)
    }

    /// Failed fetches in a row for `domain`, for display and tests.
    public func failures(of domain: String) -> Int? { domains[domain]?.failures }

    /// The fetches due (as many as may run), the files that expired, and the next wake.
    private mutating func due(now: Date) -> [Action] {
        var actions: [Action] = []
        var running = domains.values.filter { $0.phase == .fetching }.count
        for name in domains.keys.sorted() {
            guard var domain = domains[name] else { continue }
            if let expires = domain.expiresAt, expires <= now {
                domain.expiresAt = nil
                actions.append(.expired(name))
            }
            if case .waiting(let until) = domain.phase, until <= now, running < policy.concurrentFetches {
                domain.phase = .fetching
                running += 1
                actions.append(.fetch(name))
            }
            domains[name] = domain
        }
        var next: Date?
        for domain in domains.values {
            var times: [Date] = domain.expiresAt.map { [$0] } ?? []
            // A fetch due but held back by the concurrency limit waits for a running one to finish, not a timer.
            if case .waiting(let until) = domain.phase, until > now { times.append(until) }
            for time in times where next.map({ time < $0 }) ?? true { next = time }
        }
        if let next { actions.append(.wake(at: next)) }
        return actions
    }
}
