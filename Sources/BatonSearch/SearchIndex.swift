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
            // Our statements rank with it (issue 29); the file's schema cannot call it (trusted_schema is off).
            try RankFunction.register(db)
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // Before the migrations write anything: a schema that is not exactly ours (a planted trigger, view or
            // table, the FTS table gone) is damage, and nothing the file defines has run yet.
            try pool.read { db in try Self.verifySchema(db, path: path, allowingEarlier: true) }
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
            var saving = try Saving(db, limits: limits)
            let id = try saving.save(row, replacing: replacing, now: now)
            try saving.finish()
            return id
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
            var saving = try Saving(db, limits: limits)
            let ids = try rows.map { try saving.save($0, replacing: nil, now: now) }
            try saving.finish()
            return ids
        }
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

    /// Runs `body` in a write transaction, after checking the schema is still exactly ours: another program may
    /// change the file while it is open, and a trigger it plants would run inside our writes (issue 25 item 6).
    private func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let path = self.path
        do {
            return try await pool.write { db in
                try Self.verifySchema(db, path: path, allowingEarlier: false)
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

extension SearchIndex {
    /// The saves of one write transaction (issue 29 item 2). New entries' text goes into activities_fts at the end,
    /// in one run of inserts, not one at a time between the other statements: an INSERT into activities (its UNIQUE
    /// index needs a statement journal) makes SQLite call xSavepoint on every virtual table already written in the
    /// transaction, and FTS5 then flushes its pending terms to a segment of their own, so interleaved inserts cost 3.5x
    /// raw FTS5 inserts. While it runs, the row of activities_fts_deferred tells the insert trigger to leave new rows
    /// to it (migration v2); ``finish()`` removes the row again, so it is never committed. The update and delete
    /// triggers write activities_fts themselves, so the pending rows go in first, before any statement that fires them:
    /// an external-content 'delete' of a row the index has not seen yet corrupts it.
    ///
    /// The totals are read once and then followed here (a new entry adds itself, an update its change in bytes); after
    /// an eviction, whose rows are not known here, they are read again.
    struct Saving {
        let db: Database
        let limits: SearchLimits
        /// New entries (id and row) not yet in activities_fts, in the order they were saved.
        private var pending: [(id: Int64, row: StoredRow)] = []
        private var entries: Int
        private var bytes: Int

        init(_ db: Database, limits: SearchLimits) throws {
            self.db = db
            self.limits = limits
            (entries, bytes) = try Self.totals(db)
            try db.execute(sql: "INSERT OR IGNORE INTO activities_fts_deferred (id) VALUES (1)")
        }

        /// One ``SearchIndex/save(_:replacing:now:)``: the entry's row inserted, or an existing one updated, then
        /// eviction.
        mutating func save(_ row: StoredRow, replacing: Int64?, now: Date) throws -> Int64 {
            let entry = row.entry
            if let replacing, entry.persistentIdentifier == nil {
                if let old = try Int.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT bytes FROM activities
                            WHERE id = ? AND bundleIdentifier = ? AND persistentIdentifier IS NULL
                            """
                    ),
                    arguments: [replacing, entry.bundleIdentifier]
                ) {
                    try update(replacing, oldBytes: old, with: row, savedAt: now)
                    return replacing
                }
            }
            // Most saves are new entries: one statement tries the insert, and only a conflict (the app's entry with
            // this persistent identifier exists) asks for the existing row.
            try db.cachedStatement(
                sql: """
                    INSERT INTO activities (persistentIdentifier, bundleIdentifier, activityType, title, keywords,
                        description, contentType, thumbnail, relatedUniqueIdentifier, webpageURL, expirationDate,
                        savedAt, payload, bytes)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (bundleIdentifier, persistentIdentifier) DO NOTHING
                    """
            ).execute(arguments: row.arguments(savedAt: now))
            if db.changesCount == 1 {
                let id = db.lastInsertedRowID
                pending.append((id, row))
                entries += 1
                bytes += row.bytes
                try evict(keeping: id)
                return id
            }
            guard
                let existing = try Row.fetchOne(
                    db.cachedStatement(
                        sql: "SELECT id, bytes FROM activities WHERE bundleIdentifier = ? AND persistentIdentifier = ?"
                    ),
                    arguments: [entry.bundleIdentifier, entry.persistentIdentifier]
                )
            else {
                throw SearchError(.database, "SQLite refused the entry but holds no entry it conflicts with.")
            }
            let id: Int64 = try existing.required("id")
            try update(id, oldBytes: try existing.required("bytes"), with: row, savedAt: now)
            return id
        }

        /// Replaces row `id` with `row` (keeping its persistent identifier), then evicts. The update trigger deletes
        /// the old text from activities_fts, so the pending rows (the row itself may be one) go in first.
        private mutating func update(_ id: Int64, oldBytes: Int, with row: StoredRow, savedAt: Date) throws {
            try flush()
            let entry = row.entry
            try db.cachedStatement(
                sql: """
                    UPDATE activities SET (bundleIdentifier, activityType, title, keywords, description, contentType,
                        thumbnail, relatedUniqueIdentifier, webpageURL, expirationDate, savedAt, payload, bytes)
                        = (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    WHERE id = ?
                    """
            ).execute(
                arguments: [
                    entry.bundleIdentifier, entry.activityType, row.title, row.keywords, row.description,
                    entry.contentType, entry.thumbnailData, entry.relatedUniqueIdentifier, entry.webpageURL,
                    entry.expirationDate?.timeIntervalSince1970, savedAt.timeIntervalSince1970, entry.payload,
                    row.bytes, id,
                ]
            )
            bytes += row.bytes - oldBytes
            try evict(keeping: id)
        }

        /// Puts the pending rows into activities_fts: before a statement whose trigger writes it, and at the end.
        mutating func flush() throws {
            guard !pending.isEmpty else { return }
            let statement = try db.cachedStatement(
                sql: "INSERT INTO activities_fts(rowid, title, keywords, description) VALUES (?, ?, ?, ?)"
            )
            for (id, row) in pending {
                try statement.execute(arguments: [id, row.title, row.keywords, row.description])
            }
            pending.removeAll(keepingCapacity: true)
        }

        /// Ends the transaction's saves: every saved entry is in activities_fts, and the insert trigger indexes new
        /// rows again. Called last in the transaction; when a save throws, the rollback undoes everything instead.
        mutating func finish() throws {
            try flush()
            try db.execute(sql: "DELETE FROM activities_fts_deferred")
        }

        /// Removes the oldest entries (except `keeping`, the one just saved) until the index is within ``limits``.
        private mutating func evict(keeping id: Int64) throws {
            if entries > limits.maximumEntries {
                try flush()
                try db.cachedStatement(
                    sql: """
                        DELETE FROM activities WHERE id IN (
                            SELECT id FROM activities WHERE id != ? ORDER BY savedAt, id LIMIT ?)
                        """
                ).execute(arguments: [id, entries - limits.maximumEntries])
                (entries, bytes) = try Self.totals(db)
            }
            while bytes > limits.maximumBytes, entries > 1 {
                try flush()
                try db.cachedStatement(
                    sql: """
                        DELETE FROM activities WHERE id = (
                            SELECT id FROM activities WHERE id != ? ORDER BY savedAt, id LIMIT 1)
                        """
                ).execute(arguments: [id])
                guard db.changesCount > 0 else { break }
                (entries, bytes) = try Self.totals(db)
            }
        }

        private static func totals(_ db: Database) throws -> (entries: Int, bytes: Int) {
            let statement = try db.cachedStatement(sql: "SELECT entries, bytes FROM totals WHERE id = 1")
            guard let row = try Row.fetchOne(statement) else {
                throw SearchError(.damaged, "The search index has lost its totals; remove it to start an empty index.")
            }
            return (try row.required("entries"), try row.required("bytes"))
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
