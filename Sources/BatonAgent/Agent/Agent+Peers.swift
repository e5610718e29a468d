#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Agent {
    /// Adds an agent address to advertise to and sync with (like `--peer`).
    public func addPeer(_ address: String) {
        extraPeers.withLockedValue { peers in
            if !peers.contains(address) { peers.append(address) }
        }
        refreshTargets()
    }

    /// Closes every session with other devices (the next request opens a new one): for measuring cold handoffs.
    public func closeLinks() {
        links.closeAll()
    }

    /// Syncs rosters with every known peer now, rather than at the next interval.
    public func syncNow() async {
        for target in syncTargets() {
            _ = await sync(with: target)
        }
    }
}
