import GRDB

extension SearchIndex {
    /// One object of a database's schema as `sqlite_master` lists it (its page number aside).
    struct SchemaObject: Hashable, Sendable, CustomStringConvertible {
        var type: String
        var name: String
        var table: String
        var sql: String?

        var description: String { "\(type) \(name)" }
    }

    /// The objects of the schema each migration of ``migrator`` leaves (tables, indexes, triggers, the FTS5 table and
    /// its shadow tables, GRDB's migration table), read from in-memory databases migrated up to it, in the migrations'
    /// order: what an index file written by this Baton or an earlier one holds, exactly (issue 25 item 6).
    static let expectedSchemas: Result<[(migration: String, schema: Set<SchemaObject>)], SearchError> = {
        do {
            return .success(
                try migrator.migrations.map { migration in
                    let reference = try DatabaseQueue()
                    try migrator.migrate(reference, upTo: migration)
                    return (migration, try reference.read(schema))
                }
            )
        } catch {
            return .failure(SearchError(.database, "Cannot make the search index's reference schema: \(error)."))
        }
    }()

    /// Every object in `db`'s schema. Reading `sqlite_master` runs nothing the file defines.
    static func schema(_ db: Database) throws -> Set<SchemaObject> {
        var objects = Set<SchemaObject>()
        for row in try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master") {
            objects.insert(
                SchemaObject(
                    type: try row.checked("type") ?? "",
                    name: try row.checked("name") ?? "",
                    table: try row.checked("tbl_name") ?? "",
                    sql: try row.checked("sql")
                )
            )
        }
        return objects
    }

    /// Checks, before anything is written or read through the file's own tables, that its schema is nothing or
    /// exactly ours (issue 25 item 6). A file of the same user may have been written by anything: a trigger planted in
    /// it would run inside our saves (a recursive CTE ran 30 million steps per save), a view or an extra table is not
    /// ours to query, and a missing FTS table makes every search fail. Such a file is ``SearchError/Code/damaged``,
    /// as garbage is, so an agent sets it aside and starts an empty index.
    ///
    /// When `allowingEarlier` (on open, before the migrations run), the schema an earlier migration left is accepted
    /// too, exactly, when GRDB's migration table lists exactly the migrations up to it: the migrations then bring it up
    /// to date. Otherwise (before every write) only the current schema is: the save path relies on it (since v2 the
    /// saves add their new entries to the FTS index, not the insert trigger).
    ///
    /// A file with other objects and GRDB's migration table (a real table, so reading it runs nothing) listing a
    /// migration this Baton does not know is ``SearchError/Code/newerSchema`` instead. An empty file is accepted only
    /// when `allowingEarlier` (on open, before the migrations make the schema).
    static func verifySchema(_ db: Database, path: String, allowingEarlier: Bool) throws {
        let found = try schema(db)
        if found.isEmpty && allowingEarlier { return }
        let versions = try expectedSchemas.get()
        guard let current = versions.last?.schema else {
            throw SearchError(.database, "The search index has no migrations.")
        }
        if found == current { return }
        if allowingEarlier, let index = versions.firstIndex(where: { $0.schema == found }),
            try migrator.appliedIdentifiers(db) == Set(versions[...index].map(\.migration))
        {
            return
        }
        let hasMigrations = found.contains { $0.type == "table" && $0.name == "grdb_migrations" }
        if hasMigrations, try migrator.hasBeenSuperseded(db) {
            throw SearchError(
                .newerSchema,
                "The search index at \(path) was written by a newer version of Baton; update Baton, or remove the file to start an empty index."
            )
        }
        let extra = found.subtracting(current).map(\.description).sorted()
        let missing = current.subtracting(found).map(\.description).sorted()
        var differences: [String] = []
        if !extra.isEmpty { differences.append("not ours: \(list(extra))") }
        if !missing.isEmpty { differences.append("missing or changed: \(list(missing))") }
        if differences.isEmpty { differences.append("its migrations do not match its tables") }
        throw SearchError(
            .damaged,
            "The search index at \(path) is damaged: its schema is not the one Baton makes (\(differences.joined(separator: "; "))). Remove it (and its -wal and -shm files) to start a new, empty index; the account and paired devices are not affected, only saved search entries are lost."
        )
    }

    /// At most five names, then how many more: the names come from the file.
    private static func list(_ names: [String]) -> String {
        let shown = names.prefix(5).map { $0.count > 80 ? String($0.prefix(80)) + "…" : $0 }
        return shown.joined(separator: ", ") + (names.count > 5 ? " and \(names.count - 5) more" : "")
    }

    /// The schema, one migration per change (SEMANTICS G1). Never edit a registered migration: add another.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // `id` is the rowid (what results name and the FTS table points at). `bytes` is what the entry counts
            // against SearchLimits.maximumBytes; `totals` keeps the sums, so a save need not scan the table.
            try db.execute(sql: """
                CREATE TABLE activities (
                    id INTEGER PRIMARY KEY,
                    persistentIdentifier TEXT,
                    bundleIdentifier TEXT NOT NULL,
                    activityType TEXT NOT NULL,
                    title TEXT NOT NULL,
                    keywords TEXT NOT NULL,
                    description TEXT,
                    contentType TEXT,
                    thumbnail BLOB,
                    relatedUniqueIdentifier TEXT,
                    webpageURL TEXT,
                    expirationDate REAL,
                    savedAt REAL NOT NULL,
                    payload BLOB NOT NULL,
                    bytes INTEGER NOT NULL
                );
                -- An app's persistent identifiers are its own (G3): two apps may use the same one. NULLs never collide.
                CREATE UNIQUE INDEX activities_key ON activities(bundleIdentifier, persistentIdentifier);
                CREATE INDEX activities_savedAt ON activities(savedAt, id);
                CREATE INDEX activities_expirationDate ON activities(expirationDate) WHERE expirationDate IS NOT NULL;

                -- What ranking needs of each entry besides the FTS index (recency, expiry), kept by the triggers in
                -- a table of its own: a search looks it up for every match, and these rows are 20-odd bytes where an
                -- activities row carries the text, thumbnail and payload (an index of 100,000 entries: 2-3 MB here
                -- against tens of MB), so ranking stays within the page cache and near raw FTS5 (ARCHITECTURE,
                -- "On-device search", item 7).
                CREATE TABLE activities_rank (
                    id INTEGER PRIMARY KEY,
                    savedAt REAL NOT NULL,
                    expirationDate REAL
                );

                -- External content: the text lives once, in activities; the triggers keep the index in step.
                -- unicode61 with diacritics removed (café = cafe), prefix indexes for 2 and 3 characters (groc*).
                CREATE VIRTUAL TABLE activities_fts USING fts5(
                    title, keywords, description,
                    content = 'activities', content_rowid = 'id',
                    tokenize = 'unicode61 remove_diacritics 2',
                    prefix = '2 3'
                );
                CREATE TRIGGER activities_after_insert AFTER INSERT ON activities BEGIN
                    INSERT INTO activities_fts(rowid, title, keywords, description)
                        VALUES (new.id, new.title, new.keywords, new.description);
                    INSERT INTO activities_rank(id, savedAt, expirationDate)
                        VALUES (new.id, new.savedAt, new.expirationDate);
                    UPDATE totals SET entries = entries + 1, bytes = bytes + new.bytes WHERE id = 1;
                END;
                CREATE TRIGGER activities_after_delete AFTER DELETE ON activities BEGIN
                    INSERT INTO activities_fts(activities_fts, rowid, title, keywords, description)
                        VALUES ('delete', old.id, old.title, old.keywords, old.description);
                    DELETE FROM activities_rank WHERE id = old.id;
                    UPDATE totals SET entries = entries - 1, bytes = bytes - old.bytes WHERE id = 1;
                END;
                CREATE TRIGGER activities_after_update AFTER UPDATE ON activities BEGIN
                    INSERT INTO activities_fts(activities_fts, rowid, title, keywords, description)
                        VALUES ('delete', old.id, old.title, old.keywords, old.description);
                    INSERT INTO activities_fts(rowid, title, keywords, description)
                        VALUES (new.id, new.title, new.keywords, new.description);
                    UPDATE activities_rank SET savedAt = new.savedAt, expirationDate = new.expirationDate
                        WHERE id = new.id;
                    UPDATE totals SET bytes = bytes - old.bytes + new.bytes WHERE id = 1;
                END;

                CREATE TABLE totals (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    entries INTEGER NOT NULL,
                    bytes INTEGER NOT NULL
                );
                INSERT INTO totals (id, entries, bytes) VALUES (1, 0, 0);
                """)
        }
        // Issue 29 item 2: Baton's saves put new entries into the FTS index themselves, after the transaction's other
        // inserts, not through the insert trigger. A statement that needs a statement journal (an INSERT into
        // activities, with its UNIQUE index) makes SQLite call xSavepoint on every virtual table written earlier in the
        // transaction, and FTS5 then flushes its pending terms to a new segment: interleaved, a batch of 1,000 saves
        // wrote a segment per save and spent its time merging them (3.5x raw FTS5 inserts). A save transaction holds
        // the one row of activities_fts_deferred from its start to its end (never committed), and the insert trigger
        // indexes a new row only without it, so a row any other writer inserts is still indexed (an external-content
        // 'delete' of a row the index never saw, by a later update or eviction, would corrupt it). The update and
        // delete triggers stay: the save path puts its pending rows in before any statement that fires them. Prefix
        // indexes for 1 to 12 characters, so every keystroke of a word being typed is answered from one ("g",
        // "groc", "groceries"; a prefix without an index of its length merges the doclists of every word it starts,
        // the whole index's, 0.4-1.7 ms for a common word; lengths 9-12 cost no measurable indexing time and 3% of
        // the file), the same tokenizer; 'rebuild' fills the new table from activities.
        migrator.registerMigration("v2") { db in
            try db.execute(sql: """
                CREATE TABLE activities_fts_deferred (id INTEGER PRIMARY KEY CHECK (id = 1));
                DROP TRIGGER activities_after_insert;
                CREATE TRIGGER activities_after_insert AFTER INSERT ON activities BEGIN
                    INSERT INTO activities_fts(rowid, title, keywords, description)
                        SELECT new.id, new.title, new.keywords, new.description
                        WHERE NOT EXISTS (SELECT 1 FROM activities_fts_deferred);
                    INSERT INTO activities_rank(id, savedAt, expirationDate)
                        VALUES (new.id, new.savedAt, new.expirationDate);
                    UPDATE totals SET entries = entries + 1, bytes = bytes + new.bytes WHERE id = 1;
                END;
                DROP TABLE activities_fts;
                CREATE VIRTUAL TABLE activities_fts USING fts5(
                    title, keywords, description,
                    content = 'activities', content_rowid = 'id',
                    tokenize = 'unicode61 remove_diacritics 2',
                    prefix = '1 2 3 4 5 6 7 8 9 10 11 12'
                );
                INSERT INTO activities_fts(activities_fts) VALUES ('rebuild');
                """)
        }
        return migrator
    }
}
