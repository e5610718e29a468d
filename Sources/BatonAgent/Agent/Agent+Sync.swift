import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Logging

/// Roster sync (the sync service's work): event-driven, not periodic (issue 11 part 8). A round runs when the bell
/// rings: at start, when a file in the state folder changes (a merge, or another `baton` command), when a session
/// opens, and when a failed sync is due again. In a round a peer is synced only when this device's roster changed
/// since the last sync with it or the session it was synced over has closed since; a peer that failed is tried again
/// after `syncInterval`, doubling up to 12 times that.
extension Agent {
    /// What the sync loop remembers of each target address.
    struct SyncRecord {
        /// The roster sent and the link it went over, after the last sync that worked.
        var roster: Data?
        var link: ObjectIdentifier?
        /// Failures in a row, and when to try again (uptime nanoseconds).
        var failures = 0
        var retryAt: UInt64?
        var lastOutcome: String?
    }

    func syncLoop() async {
        var records: [String: SyncRecord] = [:]
        while !Task.isCancelled {
            await syncBell.wait(timeout: Self.nextRetry(records))
            guard !Task.isCancelled else { return }
            if resyncAll.withLockedValue({ value in defer { value = false }; return value }) {
                records = records.mapValues { record in
                    var record = record
                    record.link = nil
                    record.retryAt = nil
                    return record
                }
            }
            let now = DispatchTime.now().uptimeNanoseconds
            let roster = try? store.roster().encoded()
            let targets = syncTargets()
            for target in targets {
                var record = records[target] ?? SyncRecord()
                if let retryAt = record.retryAt, retryAt > now { continue }
                if record.retryAt == nil, let roster, record.roster == roster, let link = record.link,
                    links.open(at: target).map(ObjectIdentifier.init) == link
                {
                    continue  // in step, over the session still open
                }
                let outcome = await sync(with: target)
                switch outcome {
                case .synced(let text, let link, let sent):
                    record.roster = sent
                    record.link = link
                    record.failures = 0
                    record.retryAt = nil
                    if record.lastOutcome != text { logger.info("\(target): \(Agent.logLine(text))", metadata: ["peer": "\(target)"]) }
                    record.lastOutcome = text
                case .failed(let text):
                    record.failures += 1
                    let interval = configuration.syncInterval * Double(min(1 << min(record.failures - 1, 4), 12))
                    record.retryAt = DispatchTime.now().uptimeNanoseconds + UInt64(interval * 1e9)
                    record.roster = nil
                    if record.lastOutcome != text {
                        logger.notice("\(target): \(Agent.logLine(text)); trying again in \(PeerLink.format(interval))", metadata: ["peer": "\(target)"])
                    }
                    record.lastOutcome = text
                }
                records[target] = record
            }
            records = records.filter { targets.contains($0.key) }
        }
    }

    /// How long until the next failed sync is due again; nil (wait for the bell) when none is.
    static func nextRetry(_ records: [String: SyncRecord]) -> Duration? {
        guard let next = records.values.compactMap(\.retryAt).min() else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        return .nanoseconds(Int64(next > now ? next - now : 0))
    }

    /// How one sync ended.
    enum SyncOutcome {
        case synced(String, link: ObjectIdentifier, sent: Data)
        case failed(String)
    }

    /// One roster sync over the (reused) link to `address`.
    func sync(with address: String) async -> SyncOutcome {
        guard let (host, port) = Self.splitHostPort(address) else { return .failed("not a HOST:PORT address") }
        do {
            let link = try await links.connectReusing(host: host, port: port)
            let roster = try store.roster().encoded()
            let reply = await link.request(.sync(roster: roster, agentPort: self.port), timeout: AccountFlows.stepTimeout)
            switch reply {
            case .synced(let theirs, let theirPort):
                let merged = try AccountFlows.absorbSync(
                    roster: theirs,
                    agentPort: theirPort,
                    from: link.peer,
                    host: host,
                    dialed: address,
                    store: store,
                    log: { [logger] line in logger.info("\(Agent.logLine(line))", metadata: ["peer": "\(address)"]) }
                )
                rosterChanged()
                let sent = (try? merged.encoded()) ?? roster
                return .synced(
                    "synced: \(merged.activeMembers.count) devices, key epoch \(merged.accountKey.epoch)",
                    link: ObjectIdentifier(link),
                    sent: sent
                )
            case .failed(let reason, let text):
                return .failed("\(text) [\(reason)]")
            default:
                return .failed("unexpected reply")
            }
        } catch {
            return .failed("\(error)")
        }
    }

    /// A file in the state folder changed: another `baton` command (pair, remove, join) or this agent's own merge.
    /// The roster is read again, and peers not in step with it are synced.
    func stateFolderChanged() {
        rosterChanged()
        if (try? store.repairPeers()) == true {
            // The peer cache could not be read: set aside, and every peer synced again to rebuild it (ISSUE 10
            // item 8). The reason names a file here, so it stays in this device's log.
            logger.warning("\(store.folder.appendingPathComponent("peers.plist").path) was damaged: set aside as peers.plist.damaged, and rebuilt from syncs")
            resyncAll.withLockedValue { $0 = true }
        }
        syncBell.ring()
    }
}
