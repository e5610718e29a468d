import Foundation
import GRDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The on-device index of activities eligible for search (SEMANTICS G1; issue 15): one SQLite file in WAL mode, mode
/// 0600, with an FTS5 table over the title, keywords and description.
///
/// Every operation is `async` and runs on GRDB's own queues, never blocking Swift's cooperative pool. Failures are
/// ``SearchError``s: a file that is not an index is ``SearchError/Code/damaged`` (with what to do), never a crash.
/// Several processes may open the same file (SQLite's locks; a writer waits up to ``busyTimeout``).
public final class SearchIndex: Sendable {
    /// How long a write waits for another process's write to finish before ``SearchError/Code/unwritable``.
    public static let busyTimeout: TimeInterval = 5
    /// Rows deleted per statement when deleting a list of persistent identifiers (SQLite's variable limit is 32766;
    /// smaller batches keep each statement short).
    static let deleteBatchSize = 500

    /// The index file.
    public let path: String
    public let limits: SearchLimits
    public let ranking: SearchRanking
    let pool: DatabasePool

    /// Opens the index at `path`, making an empty one (mode 0600) when there is none. The folder must exist.
    ///
    /// Synchronous: it opens the file and runs the migrations, milliseconds normally, but up to ``busyTimeout`` while
    /// another process holds the write lock; an agent should open it off Swift's cooperative pool.
    ///
    /// - Throws: ``SearchError`` `damaged` when the file is not an index (remove it with ``discard(at:)``),
    ///   `unwritable` when it cannot be created or opened, `newerSchema` when a newer Baton wrote it.
    public init(path: String, limits: SearchLimits = .default, ranking: SearchRanking = .default) throws {
        self.path = path
        self.limits = limits
        self.ranking = ranking
        try Self.createPrivateFile(at: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(Self.busyTimeout)
        configuration.label = "BatonSearch"
        // The file may be written by any program of this user (issue 25 item 6): no connection trusts its schema
        // (functions its triggers, views and indexes call must be innocuous, and no virtual table may be used from
        // them) until the schema has been checked to be exactly ours.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA trusted_schema = OFF")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // Before the migrations write anything: a schema that is not exactly ours (a planted trigger, view or
            // table, the FTS table gone) is damage, and nothing the file defines has run yet.
            try pool.read { db in try Self.verifySchema(db, path: path, allowingEmpty: true) }
            try Self.migrator.migrate(pool)
            // Our own triggers keep activities_fts in step, which an untrusted schema may not do: the writer trusts
            // it, and every write checks first that it is still exactly ours (``write(_:)``). Readers never do.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA trusted_schema = ON") }
        } catch {
            throw Self.searchError(error, path: path)
        }
    }

    /// The index's file name in an agent's state folder.
    public static let fileName = "search.sqlite"

    /// Renames a damaged index to `PATH.damaged` (replacing an older one) and removes its WAL and shared-memory
    /// files, so the next ``init(path:limits:ranking:)`` makes an empty one and the old file stays for a look.
    public static func setAside(at path: String) throws {
        if rename(path, path + ".damaged") != 0 && errno != ENOENT {
            throw SearchError(.unwritable, "Cannot move \(path) aside: \(String(cString: strerror(errno))).")
        }
        try discard(at: path)
    }

    /// Removes the index file and its WAL and shared-memory files, so the next ``init(path:limits:ranking:)`` makes
    /// an empty one: what to do with a `damaged` index. Nothing else (the account, the agent's state) is touched.
    public static func discard(at path: String) throws {
        for file in [path, path + "-wal", path + "-shm"] where unlink(file) != 0 && errno != ENOENT {
            throw SearchError(.unwritable, "Cannot remove \(file): \(String(cString: strerror(errno))).")
        }
    }

    // MARK: Saving and deleting (G1, G3)

    /// Saves `entry` as of `now`; an entry of the same app with the same persistent identifier is replaced (keeping its
    /// ``SearchResult/id``). An entry without a persistent identifier replaces the entry `replacing` names when that is
    /// the same app's and has none either (how an agent keeps one entry per live activity object); otherwise it is new.
    /// Then the oldest entries leave until the index is within ``limits``.
    ///
    /// - Returns: the entry's id.
    /// - Throws: ``SearchError`` `tooLarge` when a field is above its limit, `invalidEntry`, `damaged`, `unwritable`.
    @discardableResult
    public func save(_ entry: SearchEntry, replacing: Int64? = nil, now: Date = Date()) async throws -> Int64 {
        let row = try StoredRow(entry, limits: limits)
        let limits = self.limits
        return try await write { db in
            try Self.insert(row, replacing: replacing, now: now, limits: limits, db)
        }
    }

    /// Saves `entries` in one transaction, each as ``save(_:replacing:now:)`` would one after another (so a later
    /// entry with the same persistent identifier replaces an earlier one, and the caps apply after each): for a
    /// batch, such as rebuilding an index or `baton bench search`, where a transaction per entry would wait on the
    /// disk once per entry. Nothing is saved when any entry is refused.
    ///
    /// - Returns: the entries' ids, in order.
    /// - Throws: as ``save(_:replacing:now:)``.
    @discardableResult
    public func save(_ entries: [SearchEntry], now: Date = Date()) async throws -> [Int64] {
        let limits = self.limits
        let rows = try entries.map { try StoredRow($0, limits: limits) }
        return try await write { db in
            try rows.map { try Self.insert($0, replacing: nil, now: now, limits: limits, db) }
        }
    }

    /// One save inside a write transaction: ``save(_:replacing:now:)``'s upsert, then eviction.
    private static func insert(
        _ row: StoredRow,
        replacing: Int64?,
        now: Date,
        limits: SearchLimits,
        _ db: Database
    ) throws -> Int64 {
        let entry = row.entry
        if let replacing, entry.persistentIdentifier == nil {
            try db.execute(
                sql: """
                    UPDATE activities SET (persistentIdentifier, bundleIdentifier, activityType, title, keywords,
                        description, contentType, thumbnail, relatedUniqueIdentifier, webpageURL, expirationDate,
                        savedAt, payload, bytes) = (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    WHERE id = ? AND bundleIdentifier = ? AND persistentIdentifier IS NULL
                    """,
                arguments: row.arguments(savedAt: now) + [replacing, entry.bundleIdentifier]
            )
            if db.changesCount == 1 {
                try evict(db, limits: limits, keeping: replacing)
                return replacing
            }
        }
        let id = try Int64.fetchOne(
            db.cachedStatement(
                sql: """
                INSERT INTO activities (persistentIdentifier, bundleIdentifier, activityType, title, keywords,
                    description, contentType, thumbnail, relatedUniqueIdentifier, webpageURL, expirationDate,
                    savedAt, payload, bytes)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (bundleIdentifier, persistentIdentifier) DO UPDATE SET
                    bundleIdentifier = excluded.bundleIdentifier, activityType = excluded.activityType,
                    title = excluded.title, keywords = excluded.keywords, description = excluded.description,
                    contentType = excluded.contentType, thumbnail = excluded.thumbnail,
                    relatedUniqueIdentifier = excluded.relatedUniqueIdentifier, webpageURL = excluded.webpageURL,
                    expirationDate = excluded.expirationDate, savedAt = excluded.savedAt,
                    payload = excluded.payload, bytes = excluded.bytes
                RETURNING id
                """
            ),
            arguments: row.arguments(savedAt: now)
        )
        guard let id else {
            throw SearchError(.database, "SQLite saved the entry but returned no row id.")
        }
        try evict(db, limits: limits, keeping: id)
        return id
    }

    /// Deletes `bundleIdentifier`'s entries with these persistent identifiers (G3;
    /// `deleteSavedUserActivities(withPersistentIdentifiers:)`): an app deletes only what it saved.
    ///
    /// - Returns: how many entries were deleted; identifiers not in the index are ignored.
    @discardableResult
    public func delete(persistentIdentifiers: [String], of bundleIdentifier: String) async throws -> Int {
        guard !persistentIdentifiers.isEmpty else { return 0 }
        return try await write { db in
            var deleted = 0
            var start = persistentIdentifiers.startIndex
            while start < persistentIdentifiers.endIndex {
                let end = min(start + Self.deleteBatchSize, persistentIdentifiers.endIndex)
                let batch = Array(persistentIdentifiers[start..<end])
                let marks = Array(repeating: "?", count: batch.count).joined(separator: ", ")
                try db.execute(
                    sql: "DELETE FROM activities WHERE bundleIdentifier = ? AND persistentIdentifier IN (\(marks))",
                    arguments: [bundleIdentifier] + StatementArguments(batch)
                )
                deleted += db.changesCount
                start = end
            }
            return deleted
        }
    }

    /// Deletes every entry `bundleIdentifier` saved (G3; `deleteAllSavedUserActivities()`), or every entry of every
    /// app when it is nil (a person clearing the index).
    ///
    /// - Returns: how many entries were deleted.
    @discardableResult
    public func deleteAll(of bundleIdentifier: String? = nil) async throws -> Int {
        try await write { db in
            if let bundleIdentifier {
                try db.execute(sql: "DELETE FROM activities WHERE bundleIdentifier = ?", arguments: [bundleIdentifier])
            } else {
                try db.execute(sql: "DELETE FROM activities")
            }
            return db.changesCount
        }
    }

    /// The entry with this id, unless it has expired or is gone (G2: what `baton search --continue ID` continues).
    public func entry(id: Int64, now: Date = Date()) async throws -> SearchEntry? {
        let limits = self.limits
        return try await read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT \(StoredRow.columns(limits)) FROM activities
                    WHERE id = ? AND (expirationDate IS NULL OR expirationDate > ?)
                    """,
                arguments: [id, now.timeIntervalSince1970]
            ).map { try StoredRow.entry(from: $0, limits: limits, db) }
        }
    }

    /// Deletes the entries whose expiration date is not after `now` (G1: expired entries are purged).
    ///
    /// - Returns: how many entries were deleted.
    @discardableResult
    public func purgeExpired(now: Date = Date()) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM activities WHERE expirationDate IS NOT NULL AND expirationDate <= ?",
                arguments: [now.timeIntervalSince1970]
            )
            return db.changesCount
        }
    }

    /// How many entries the index holds and their bytes (what ``limits`` bound).
    public func statistics() async throws -> SearchIndexStatistics {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT entries, bytes FROM totals WHERE id = 1") else {
                throw SearchError(.damaged, "The search index at \(self.path) has lost its totals; remove it to start an empty index.")
            }
            return SearchIndexStatistics(entries: try row.required("entries"), bytes: try row.required("bytes"))
        }
    }

    // MARK: Internals

    /// Removes the oldest entries (except `keeping`, the one just saved) until the index is within `limits`.
    private static func evict(_ db: Database, limits: SearchLimits, keeping id: Int64) throws {
        func totals() throws -> (entries: Int, bytes: Int) {
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT entries, bytes FROM totals WHERE id = 1")) else {
                throw SearchError(.damaged, "The search index has lost its totals; remove it to start an empty index.")
            }
            return (try row.required("entries"), try row.required("bytes"))
        }
        var current = try totals()
        if current.entries > limits.maximumEntries {
            try db.execute(
                sql: """
                    DELETE FROM activities WHERE id IN (
                        SELECT id FROM activities WHERE id != ? ORDER BY savedAt, id LIMIT ?)
                    """,
                arguments: [id, current.entries - limits.maximumEntries]
            )
            current = try totals()
        }
        while current.bytes > limits.maximumBytes, current.entries > 1 {
            try db.execute(
                sql: """
                    DELETE FROM activities WHERE id = (
                        SELECT id FROM activities WHERE id != ? ORDER BY savedAt, id LIMIT 1)
                    """,
                arguments: [id]
            )
            guard db.changesCount > 0 else { break }
            current = try totals()
        }
    }

    /// Runs `body` in a write transaction, after checking the schema is still exactly ours: another program may
    /// change the file while it is open, and a trigger it plants would run inside our writes (issue 25 item 6).
    private func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let path = self.path
        do {
            return try await pool.write { db in
                try Self.verifySchema(db, path: path, allowingEmpty: false)
                return try body(db)
            }
        } catch let error as CancellationError {
            throw error  // the caller's task was cancelled: not the index's failure
        } catch {
            throw Self.searchError(error, path: path)
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch let error as CancellationError {
            throw error
        } catch {
            throw Self.searchError(error, path: path)
        }
    }

    /// Makes `path` an empty file with mode 0600 if there is none, and tightens an existing one to 0600. SQLite gives
    /// the WAL and shared-memory files the same mode as the database file.
    private static func createPrivateFile(at path: String) throws {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SearchError(
                .unwritable,
                "Cannot open or create the search index at \(path): \(String(cString: strerror(errno))). Check that the folder exists and is yours."
            )
        }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0 else {
            throw SearchError(.unwritable, "Cannot make \(path) private (mode 0600): \(String(cString: strerror(errno))).")
        }
    }

    /// GRDB's and SQLite's errors as ``SearchError``s, saying what to do.
    static func searchError(_ error: any Error, path: String) -> SearchError {
        if let error = error as? SearchError { return error }
        guard let error = error as? DatabaseError else {
            return SearchError(.database, "The search index at \(path) failed: \(error).")
        }
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return SearchError(
                .damaged,
                "The search index at \(path) is damaged (\(error.message ?? "\(error.resultCode)")). Remove it (and its -wal and -shm files) to start a new, empty index; the account and paired devices are not affected, only saved search entries are lost."
            )
        case .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_BUSY,
            .SQLITE_LOCKED, .SQLITE_AUTH:
            return SearchError(
                .unwritable,
                "The search index at \(path) cannot be written (\(error.message ?? "\(error.resultCode)")). Check the disk has room and the file and its folder are yours."
            )
        default:
            return SearchError(.database, "The search index at \(path) failed: \(error.message ?? "\(error.resultCode)").")
        }
    }
}

/// What ``SearchIndex/statistics()`` reports.
public struct SearchIndexStatistics: Sendable, Hashable {
    /// Entries in the index, expired ones not yet purged included.
    public var entries: Int
    /// The bytes they count against ``SearchLimits/maximumBytes``.
    public var bytes: Int

    public init(entries: Int, bytes: Int) {
        self.entries = entries
        self.bytes = bytes
    }
}
