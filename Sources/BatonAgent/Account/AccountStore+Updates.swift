import BatonCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension AccountStore {
    /// Reads, changes and writes the roster under an exclusive lock on the state folder, so an agent merging a
    /// peer's roster and a `baton remove` in another process cannot lose each other's change.
    public func updateRoster<T>(_ change: (inout Roster) throws -> T) throws -> T {
        try withStateLock {
            var roster = try self.roster()
            let before = roster
            let result = try change(&roster)
            if roster != before { try saveRoster(roster) }
            return result
        }
    }

    /// The state folder's lock file (``withStateLock(_:)``).
    static let lockFileName = "lock"

    /// Runs `body` holding an exclusive `flock` on the state folder's lock file: every read-modify-write of a state
    /// file goes through here, across processes.
    func withStateLock<T>(_ body: () throws -> T) throws -> T {
        try createFolderOnly()
        let lockPath = folder.appendingPathComponent(Self.lockFileName).path
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw AtomicFile.failure("cannot open \(lockPath)") }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX) == 0 else { throw AtomicFile.failure("cannot lock \(lockPath)") }
        defer { flock(descriptor, LOCK_UN) }
        // Leftovers of interrupted writes are removed only under the lock: outside it, they may be another
        // thread's write in progress.
        AtomicFile.removeLeftovers(in: folder)
        return try body()
    }

    // MARK: Invites

    /// Records a new invite and returns its secret (16 random bytes). Only the secret's SHA-256 is stored.
    public func createInvite(expires: Date) throws -> [UInt8] {
        let secret = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        try withStateLock {
            var invites = try self.invites()
            invites.append(["hash": .data(Data(SHA256.hash(data: secret))), "expires": .date(expires), "used": false])
            try AtomicFile.store(try BinaryPropertyListEncoder.encode(.array(invites)), at: invitesURL)
        }
        return secret
    }

    /// Marks the invite with this secret used. Exactly one caller succeeds per token. `now` is the system's clock,
    /// not an agent's (issue 26 item 2): `baton invite` dated the invite by it.
    /// - Throws: `inviteRejected` for an unknown, used or expired secret.
    public func consumeInvite(secret: [UInt8], now: Date = Date()) throws {
        let hash = Data(SHA256.hash(data: secret))
        try withStateLock {
            var invites = try self.invites()
            guard let index = invites.firstIndex(where: { $0["hash"]?.dataValue == hash }) else {
                throw BatonAgentError(.inviteRejected, "the invite token is not one this device issued")
            }
            guard invites[index]["used"]?.boolValue == false else {
                throw BatonAgentError(.inviteRejected, "the invite token was already used; ask for a new one")
            }
            guard let expires = invites[index]["expires"]?.dateValue, expires > now else {
                throw BatonAgentError(.inviteRejected, "the invite token has expired; ask for a new one")
            }
            invites[index] = ["hash": .data(hash), "expires": .date(expires), "used": true]
            try AtomicFile.store(try BinaryPropertyListEncoder.encode(.array(invites)), at: invitesURL)
        }
    }

    func invites() throws -> [PropertyList] {
        guard FileManager.default.fileExists(atPath: invitesURL.path) else { return [] }
        guard case .array(let list) = try readDocument(invitesURL, what: "invites") else {
            throw BatonAgentError(.stateCorrupt, "\(invitesURL.path): not a list of invites")
        }
        return list
    }
}
