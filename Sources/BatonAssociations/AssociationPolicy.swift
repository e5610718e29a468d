#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How long association files count, and how soon a failed fetch is tried again (SEMANTICS E4). Values, so tests
/// use seconds where the agent uses hours; `AgentConfiguration.associations` holds the agent's.
public struct AssociationPolicy: Sendable, Hashable {
    /// The shortest a file counts, whatever its `max-age` (`no-cache` included): a site cannot make every device
    /// fetch on every page view.
    public var minimumLifetime: TimeInterval = 3600
    /// The longest a file counts, whatever its `max-age`: a site that withdraws an app is heard within a week.
    public var maximumLifetime: TimeInterval = 7 * 86_400
    /// How long a file counts when the server sends no `max-age`.
    public var defaultLifetime: TimeInterval = 86_400
    /// How far into its lifetime a file is fetched again, so a good file is replaced before it expires.
    public var refreshFraction = 0.8
    /// The wait after the first failed fetch; it doubles with each further failure...
    public var retryInitial: TimeInterval = 60
    /// ...up to this.
    public var retryMaximum: TimeInterval = 3600
    /// How many fetches run at once.
    public var concurrentFetches = 4
    /// How long a TCP connection may take.
    public var connectTimeout: Duration = .seconds(5)
    /// How long a whole fetch may take (connection, TLS, answer).
    public var totalTimeout: Duration = .seconds(10)

    /// The agent's defaults.
    public init() {}

    /// How long a file fetched with `maxAge` (seconds, nil when absent) counts: clamped to the bounds.
    public func lifetime(maxAge: Int?) -> TimeInterval {
        guard let maxAge else { return defaultLifetime }
        return min(max(TimeInterval(maxAge), minimumLifetime), maximumLifetime)
    }

    /// When a file fetched at `fetchedAt` and counting until `expiresAt` is fetched again.
    public func refresh(fetchedAt: Date, expiresAt: Date) -> Date {
        fetchedAt.addingTimeInterval(max(0, expiresAt.timeIntervalSince(fetchedAt)) * refreshFraction)
    }

    /// The wait after `failures` failed fetches in a row (at least one): doubling from ``retryInitial`` up to
    /// ``retryMaximum``.
    public func backoff(failures: Int) -> TimeInterval {
        let doublings = min(max(failures - 1, 0), 30)
        return min(retryInitial * Double(1 << doublings), retryMaximum)
    }
}
