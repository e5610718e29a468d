#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The key that seals adverts between the account's devices, with the epoch that orders rotations.
public struct AccountKey: Sendable, Hashable {
    /// Incremented by every rotation; the higher epoch wins a merge.
    public let epoch: UInt64
    /// 32 random bytes.
    public let key: [UInt8]
    /// The devices revoked when this key was made: none of them ever received it.
    public let excludes: Set<DeviceID>

    /// A key; `key` must be 32 bytes.
    public init(epoch: UInt64, key: [UInt8], excludes: Set<DeviceID>) {
        self.epoch = epoch
        self.key = key
        self.excludes = excludes
    }

    /// Which of two keys a merge keeps: the higher epoch, and for two keys of one epoch (two devices rotated at once)
    /// the larger key bytes, so every device picks the same one.
    static func newer(_ lhs: AccountKey, _ rhs: AccountKey) -> AccountKey {
        if lhs.epoch != rhs.epoch { return lhs.epoch > rhs.epoch ? lhs : rhs }
        return lhs.key.lexicographicallyPrecedes(rhs.key) ? rhs : lhs
    }
}

/// The account: the person's devices, as a grow-only set of members and a grow-only set of revocations, merged
/// whenever two members meet. Revocation wins: a revoked device stays revoked whatever order rosters meet in, so any
/// two members converge to the same roster (SEMANTICS C1; docs/ARCHITECTURE.md, "The account").
///
/// Every change that revokes a device also rotates the ``accountKey``; a merge that learns of a revocation the current
/// key predates rotates it too, so a removed device never holds the key in use once the others have met.
public struct Roster: Sendable, Hashable {
    /// A device in the account.
    public struct Member: Sendable, Hashable {
        /// The device id: the SHA-256 of ``certificate``.
        public let id: DeviceID
        /// The device's certificate (DER), pinned for every session with it.
        public let certificate: Data
        /// The name the person gave the device.
        public let name: String
        /// The member that added it (itself for the first device).
        public let addedBy: DeviceID
        /// When it was added.
        public let addedAt: Date

        /// A member; its id is derived from the certificate.
        public init(certificate: Data, name: String, addedBy: DeviceID?, addedAt: Date) {
            let id = DeviceID(certificateDER: certificate)
            self.id = id
            self.certificate = certificate
            self.name = name
            self.addedBy = addedBy ?? id
            self.addedAt = addedAt
        }
    }

    /// The removal of a device.
    public struct Revocation: Sendable, Hashable {
        /// The device removed.
        public let id: DeviceID
        /// The member that removed it.
        public let revokedBy: DeviceID
        /// When.
        public let revokedAt: Date

        /// A revocation.
        public init(id: DeviceID, revokedBy: DeviceID, revokedAt: Date) {
            self.id = id
            self.revokedBy = revokedBy
            self.revokedAt = revokedAt
        }
    }

    /// Every device ever added, revoked or not.
    public private(set) var members: [DeviceID: Member]
    /// Every removal.
    public private(set) var revocations: [DeviceID: Revocation]
    /// The key adverts are sealed with.
    public private(set) var accountKey: AccountKey

    /// A new account holding its first device.
    public init(founder: Member, key: [UInt8]) {
        members = [founder.id: founder]
        revocations = [:]
        accountKey = AccountKey(epoch: 1, key: key, excludes: [])
    }

    init(members: [DeviceID: Member], revocations: [DeviceID: Revocation], accountKey: AccountKey) {
        self.members = members
        self.revocations = revocations
        self.accountKey = accountKey
    }

    /// Whether `id` is a member that has not been revoked: the only devices sessions are opened with.
    public func isActive(_ id: DeviceID) -> Bool {
        members[id] != nil && revocations[id] == nil
    }

    /// The members not revoked, by name then id.
    public var activeMembers: [Member] {
        members.values.filter { revocations[$0.id] == nil }.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// Adds a device (pairing). Adding a revoked device does not bring it back: revocation wins.
    /// - Returns: whether the roster changed.
    @discardableResult
    public mutating func add(_ member: Member) -> Bool {
        guard let existing = members[member.id] else {
            members[member.id] = member
            return true
        }
        let kept = Self.earlier(existing, member)
        members[member.id] = kept
        return kept != existing
    }

    /// Removes a device and rotates the account key to `newKey` (32 random bytes).
    /// - Returns: whether the roster changed (false when the device was already revoked).
    @discardableResult
    public mutating func revoke(_ id: DeviceID, by revoker: DeviceID, at time: Date, newKey: [UInt8]) -> Bool {
        guard revocations[id] == nil else { return false }
        revocations[id] = Revocation(id: id, revokedBy: revoker, revokedAt: time)
        accountKey = AccountKey(epoch: accountKey.epoch + 1, key: newKey, excludes: Set(revocations.keys))
        return true
    }

    /// What a merge did.
    public struct MergeResult: Sendable, Hashable {
        /// Whether anything changed here.
        public var changed: Bool
        /// Whether this merge rotated the account key (a revocation arrived that the key predates).
        public var rotatedKey: Bool
    }

    /// Merges another member's roster into this one.
    /// - Parameter newKey: 32 random bytes, used only if the merge must rotate the key.
    @discardableResult
    public mutating func merge(_ other: Roster, newKey: [UInt8]) -> MergeResult {
        let before = self
        for member in other.members.values { add(member) }
        for revocation in other.revocations.values {
            if let existing = revocations[revocation.id] {
                revocations[revocation.id] = Self.earlier(existing, revocation)
            } else {
                revocations[revocation.id] = revocation
            }
        }
        accountKey = AccountKey.newer(accountKey, other.accountKey)
        var rotated = false
        if !Set(revocations.keys).isSubset(of: accountKey.excludes) {
            accountKey = AccountKey(epoch: accountKey.epoch + 1, key: newKey, excludes: Set(revocations.keys))
            rotated = true
        }
        return MergeResult(changed: self != before, rotatedKey: rotated)
    }

    /// Two records of one device: the earlier, then the one by the smaller id, so merges agree everywhere.
    static func earlier(_ lhs: Member, _ rhs: Member) -> Member {
        if lhs.addedAt != rhs.addedAt { return lhs.addedAt < rhs.addedAt ? lhs : rhs }
        if lhs.addedBy != rhs.addedBy { return lhs.addedBy < rhs.addedBy ? lhs : rhs }
        return lhs.name <= rhs.name ? lhs : rhs
    }

    static func earlier(_ lhs: Revocation, _ rhs: Revocation) -> Revocation {
        if lhs.revokedAt != rhs.revokedAt { return lhs.revokedAt < rhs.revokedAt ? lhs : rhs }
        return lhs.revokedBy <= rhs.revokedBy ? lhs : rhs
    }

    /// The member whose id starts with `prefix`, or whose name is `prefix`; `nil` when none or several match.
    public func member(named prefix: String) -> Member? {
        let byName = members.values.filter { $0.name == prefix }
        if byName.count == 1 { return byName.first }
        let byID = members.values.filter { $0.id.matches(prefix: prefix) }
        return byID.count == 1 ? byID.first : nil
    }
}
