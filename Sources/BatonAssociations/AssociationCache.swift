import BatonCore
import BatonRegistry
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The association files fetched, on disk: one ``AssociationRecord`` per domain in `associations/DOMAIN.json` in
/// the state folder, written atomically (``AtomicFile``, mode 0600), so `baton aasa fetch`, `baton aasa status` and
/// the agent share them. A file that cannot be read back is renamed `DOMAIN.json.damaged`, reported, and the domain
/// fetched again: never a crash, never silently trusted.
public struct AssociationCache: Sendable {
    /// The folder's name inside the state folder.
    public static let folderName = "associations"

    /// The folder holding the records.
    public let folder: URL

    /// The cache of the state folder `stateFolder`.
    public init(stateFolder: URL) {
        folder = stateFolder.appendingPathComponent(Self.folderName)
    }

    /// Whether `domain` is a name that may become a file name (letters, digits, `-` and `.`, not leading with `.`).
    public static func isStorable(_ domain: String) -> Bool {
        !domain.isEmpty && domain.utf8.count <= AssociationRecord.maximumDomainLength && !domain.hasPrefix(".")
            && domain.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2E }
    }

    func file(_ domain: String) -> URL { folder.appendingPathComponent("\(domain).json") }

    /// The record of `domain`, nil when there is none.
    /// - Throws: ``AssociationFetchError`` `cacheCorrupt` when the file cannot be read back (it is then set aside).
    public func read(_ domain: String) throws -> AssociationRecord? {
        let domain = domain.lowercased()
        guard Self.isStorable(domain), let data = FileManager.default.contents(atPath: file(domain).path) else { return nil }
        do {
            return try AssociationRecord(decoding: data, domain: domain)
        } catch {
            try? FileManager.default.removeItem(atPath: file(domain).path + ".damaged")
            try? FileManager.default.moveItem(atPath: file(domain).path, toPath: file(domain).path + ".damaged")
            throw error
        }
    }

    /// Every record, and the files that could not be read (set aside), sorted by domain.
    public func readAll() -> (records: [AssociationRecord], problems: [AssociationFetchError]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        var records: [AssociationRecord] = []
        var problems: [AssociationFetchError] = []
        for name in names.sorted() where name.hasSuffix(".json") && !name.hasPrefix(".") {
            do {
                if let record = try read(String(name.dropLast(5))) { records.append(record) }
            } catch let error as AssociationFetchError {
                problems.append(error)
            } catch {
                problems.append(AssociationFetchError(.cacheCorrupt, "\(name): \(error)"))
            }
        }
        return (records, problems)
    }

    /// Writes `record` (atomically, 0600).
    /// - Throws: ``AssociationFetchError`` `stateUnwritable`.
    public func store(_ record: AssociationRecord) throws {
        guard Self.isStorable(record.domain) else {
            throw AssociationFetchError(.stateUnwritable, "\(record.domain) is not a domain name that can be cached")
        }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try AtomicFile.store(try record.encoded(), at: file(record.domain)) { AssociationFetchError(.stateUnwritable, AtomicFile.describe($0)) }
    }

    /// Records the outcome of a fetch of `domain` at `now` and returns the record written: a success replaces the
    /// JSON and its times; a failure keeps the last good JSON (it counts until it expires) and counts the failure.
    ///
    /// The read and the write hold the cache folder's lock (`flock` on `.lock`): `baton aasa fetch` and the agent
    /// both record here, and without it a failure the agent records could put back the record it read just before
    /// another process stored a fresh file, losing that file.
    @discardableResult
    public func record(_ domain: String, _ result: Result<AssociationFetcher.Fetched, AssociationFetchError>, policy: AssociationPolicy, now: Date) throws -> AssociationRecord {
        try withLock { try updateRecord(domain, result, policy: policy, now: now) }
    }

    /// The lock file's name in the cache folder (a dot: never read as a record).
    static let lockFileName = ".lock"

    /// Runs `body` holding an exclusive `flock` on the cache folder's lock file. Opened read-only, so taking the lock
    /// writes nothing the agent's folder watcher would report.
    func withLock<T>(_ body: () throws -> T) throws -> T {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let lockPath = folder.appendingPathComponent(Self.lockFileName).path
        let descriptor = open(lockPath, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw AssociationFetchError(.stateUnwritable, "cannot open \(lockPath)") }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX) == 0 else { throw AssociationFetchError(.stateUnwritable, "cannot lock \(lockPath)") }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }

    private func updateRecord(_ domain: String, _ result: Result<AssociationFetcher.Fetched, AssociationFetchError>, policy: AssociationPolicy, now: Date) throws -> AssociationRecord {
        var record = (try? read(domain)) ?? nil ?? AssociationRecord(domain: domain)
        record.lastAttempt = now
        switch result {
        case .success(let fetched):
            record.url = fetched.url
            record.json = fetched.json
            record.signed = fetched.signed
            record.fetchedAt = now
            record.expiresAt = now.addingTimeInterval(policy.lifetime(maxAge: fetched.maxAge))
            record.lastErrorCode = nil
            record.lastErrorMessage = nil
            record.failures = 0
        case .failure(let error):
            record.lastErrorCode = error.code.name
            record.lastErrorMessage = String(error.message.prefix(AssociationRecord.maximumMessageLength / 4))
            record.failures += 1
        }
        try store(record)
        return record
    }
}
