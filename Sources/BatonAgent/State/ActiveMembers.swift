import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The active members of a state folder's roster, for the TLS verification callback of every handshake
/// (``PeerPolicy/activeMembers(of:)``): read afresh whenever the file changed, and otherwise from memory (issue 11:
/// reading and decoding the roster in every handshake was on a cold continuation's path, on both devices).
///
/// "Changed" is the file's identity and times as `stat` shows them (device, inode, size, modification and status
/// change times, mode): every write of the roster replaces the file (``AtomicFile``), which gives it a new inode, and
/// a `chmod` changes its status time, so a removal, a merge or a permissions problem is seen by the very next
/// handshake, as when the file was read every time. Only a roster that was read without error is kept.
final class ActiveMembers: Sendable {
    let store: AccountStore
    private let cached = NIOLockedValueBox<(stamp: FileStamp, members: Set<DeviceID>)?>(nil)

    init(store: AccountStore) {
        self.store = store
    }

    /// The roster file's identity and times; nil when it cannot be examined.
    struct FileStamp: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: (Int, Int)
        var changed: (Int, Int)
        var mode: UInt32

        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = (info.st_mtim.tv_sec, info.st_mtim.tv_nsec)
            changed = (info.st_ctim.tv_sec, info.st_ctim.tv_nsec)
            mode = UInt32(info.st_mode)
        }

        static func == (lhs: FileStamp, rhs: FileStamp) -> Bool {
            lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.size == rhs.size && lhs.modified == rhs.modified
                && lhs.changed == rhs.changed && lhs.mode == rhs.mode
        }
    }

    /// The ids of the roster's active members; none when it cannot be read (every peer is refused, as before).
    func current() -> Set<DeviceID> {
        let stamp = FileStamp(path: store.rosterURL.path)
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
