import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

/// The active members of a state folder's roster, for the TLS verification callback of every handshake
/// (``PeerPolicy/activeMembers(of:)``): read afresh whenever the file changed, and otherwise from memory (issue 11:
/// reading and decoding the roster in every handshake was on a cold continuation's path, on both devices).
///
/// "Changed" is the file's identity and times as `stat` shows them (``FileStatus``: device, inode, size, modification
/// and status change times, type, permissions, owner): every write of the roster replaces the file (``AtomicFile``), which gives it a new inode, and
/// a `chmod` changes its status time, so a removal, a merge or a permissions problem is seen by the very next
/// handshake, as when the file was read every time. Only a roster that was read without error is kept.
final class ActiveMembers: Sendable {
    let store: AccountStore
    private let cached = NIOLockedValueBox<(stamp: FileStatus, members: Set<DeviceID>)?>(nil)

    init(store: AccountStore) {
        self.store = store
    }

    /// The ids of the roster's active members; none when it cannot be read (every peer is refused, as before).
    func current() -> Set<DeviceID> {
        let stamp = FileStatus(path: store.rosterURL.path)
        if let stamp, let cached = cached.withLockedValue({ $0 }), cached.stamp == stamp { return cached.members }
        // Stamped before the read: a file replaced meanwhile has another stamp by the next handshake, which reads it.
        guard let roster = try? store.roster() else {
            cached.withLockedValue { $0 = nil }
            return []
        }
        let members = Set(roster.activeMembers.map(\.id))
        if let stamp { cached.withLockedValue { $0 = (stamp, members) } }
        return members
    }
}
