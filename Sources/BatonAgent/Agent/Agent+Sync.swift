import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// Roster sync's I/O on the agent's side: one sync over the agent's links, and the state folder changing. The
/// decisions and their state (which peer to sync when, back-off, what was logged) are ``SyncService``'s; the agent
/// keeps only its ``SyncService/Trigger`` (issue 26 item 1).
extension Agent {
    /// The sync service of this agent: it reads the roster from the store, the targets and the open links from the
    /// agent, and syncs through ``sync(with:)``, holding the agent weakly (a stopped agent syncs no more).
    func syncService() -> SyncService {
        SyncService(
            trigger: syncTrigger,
            interval: configuration.syncInterval,
            roster: { [store] in try? store.roster().encoded() },
            targets: { [weak self] in self?.syncTargets() ?? [] },
            openLink: { [links] target in links.open(at: target).map(ObjectIdentifier.init) },
            sync: { [weak self] target in await self?.sync(with: target) ?? .failed("the agent has stopped") },
            logger: logger,
            clock: clock
        )
    }

    /// One roster sync over the (reused) link to `address`.
    func sync(with address: String) async -> RosterSyncSchedule.Outcome {
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
            syncTrigger.resyncAll()
        }
        syncTrigger.ring()
    }
}
