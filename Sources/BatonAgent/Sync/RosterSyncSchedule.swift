#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Roster sync's decisions as a pure state machine (issue 26 items 1 and 2; ARCHITECTURE "Services"): which targets a
/// round syncs, when a failed one is due again, and which outcomes are worth a log line.
///
/// Events in, one `mutating func` each, the time passed in as uptime nanoseconds; no I/O, no clock, no tasks:
/// ``SyncService`` does those. A listed target is synced when this device's roster changed since the last sync with
/// it, when the link it was synced over is no longer the one open to it (closed or replaced: the peer may have
/// restarted), or after ``resyncAll()`` (a damaged peer cache, ISSUE 10 item 8). A target whose sync failed is tried
/// again after `interval`, doubling with each failure in a row up to 12 times it (1x, 2x, 4x, 8x, 12x, 12x, ...).
/// An outcome is logged when it differs from the last one of the same target: a peer that stays away is one line.
struct RosterSyncSchedule: Sendable {
    /// How one sync ended.
    enum Outcome: Sendable, Equatable {
        /// In step: what the log says, the link it went over, and the roster this device now holds in common with it.
        case synced(String, link: ObjectIdentifier, sent: Data)
        /// Not in step, and why.
        case failed(String)
    }

    /// An outcome worth a log line: it differs from the last one of its target.
    enum Report: Sendable, Equatable {
        case synced(String)
        /// The failure, and the seconds until the target is tried again.
        case failed(String, retryIn: Double)
    }

    /// What is remembered of each target address.
    private struct Record: Sendable, Equatable {
        /// The roster sent and the link it went over, after the last sync that worked.
        var roster: Data?
        var link: ObjectIdentifier?
        /// Failures in a row, and when to try again (uptime nanoseconds).
        var failures = 0
        var retryAt: UInt64?
        var lastOutcome: String?
    }

    /// Seconds between the first failure of a target and its next try (`--interval`).
    let interval: Double
    private var records: [String: Record] = [:]

    /// A schedule that knows no target yet: each is due at its first round.
    init(interval: Double) {
        self.interval = interval
    }

    /// Whether `target` is synced in a round that started at `now`, given this device's roster then (nil when it
    /// cannot be read: every target not waiting out a failure is synced, and the sync says why it fails) and the
    /// link open to the target now.
    func isDue(_ target: String, roster: Data?, openLink: ObjectIdentifier?, now: UInt64) -> Bool {
        guard let record = records[target] else { return true }
        if let retryAt = record.retryAt { return retryAt <= now }
        // In step, over the session still open.
        let inStep = roster != nil && record.roster == roster && record.link != nil && record.link == openLink
        return !inStep
    }

    /// A sync of `target` ended at `now`. Returns the line to log, when the outcome differs from its last one.
    mutating func ended(_ target: String, _ outcome: Outcome, now: UInt64) -> Report? {
        var record = records[target] ?? Record()
        let text: String
        let report: Report
        switch outcome {
        case .synced(let line, let link, let sent):
            record.roster = sent
            record.link = link
            record.failures = 0
            record.retryAt = nil
            text = line
            report = .synced(line)
        case .failed(let line):
            record.failures += 1
            let delay = Self.retryDelay(failures: record.failures, interval: interval)
            record.retryAt = now + UInt64(delay * 1e9)
            record.roster = nil
            text = line
            report = .failed(line, retryIn: delay)
        }
        let changed = record.lastOutcome != text
        record.lastOutcome = text
        records[target] = record
        return changed ? report : nil
    }

    /// Every target is synced again at the next round, in step or not, and a failed one without waiting out its
    /// delay (the peer cache was damaged and is rebuilt from syncs). What was last logged is kept.
    mutating func resyncAll() {
        for target in records.keys {
            records[target]?.link = nil
            records[target]?.retryAt = nil
        }
    }

    /// The targets listed now: any other is forgotten (a peer removed, or an address that changed).
    mutating func listed(_ targets: [String]) {
        records = records.filter { targets.contains($0.key) }
    }

    /// How long after `now` the next failed target is due; nil (wait for an event) when none waits.
    func nextRetry(now: UInt64) -> Duration? {
        guard let next = records.values.compactMap(\.retryAt).min() else { return nil }
        return .nanoseconds(Int64(next > now ? next - now : 0))
    }

    /// Failures in a row of `target`, for display and tests.
    func failures(of target: String) -> Int? { records[target]?.failures }

    /// Seconds from the `failures`-th failure in a row to the next try: `interval`, doubling, at most 12 times it.
    static func retryDelay(failures: Int, interval: Double) -> Double {
        interval * Double(min(1 << min(max(failures, 1) - 1, 4), 12))
    }
}
