import GRDB

extension SearchIndex {
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
        return migrator
    }
}
