@testable import BatonSearch
import Foundation
import GRDB
import Testing

/// The v2 write path (issue 29 item 2; SEMANTICS G1): saves put new entries into the FTS index themselves, at the end
/// of the transaction or before any statement whose trigger writes it. The FTS index must see every operation in
/// order, so FTS5's own integrity check (which compares it with the activities table) runs after each step, and the
/// searches must return exactly the entries saved. A v1 file is migrated on open.
@Suite("SearchIndex indexing (issue 29, G1)")
struct SearchIndexingTests {
    static let now = SearchIndexTests.now
    static let app = "com.example.app"

    static func entry(_ title: String, id: String? = nil) -> SearchEntry {
        SearchIndexTests.entry(title, id: id, app: app)
    }

    /// FTS5's integrity check with rank 1: the index holds exactly the terms of the rows of activities. It throws
    /// (SQLITE_CORRUPT_VTAB) otherwise. And no save left its activities_fts_deferred row committed (other writers'
    /// inserts would go unindexed).
    static func checkIntegrity(_ path: String) async throws {
        let other = try DatabaseQueue(path: path)
        let deferred = try await other.write { db in
            try db.execute(sql: "INSERT INTO activities_fts(activities_fts, rank) VALUES ('integrity-check', 1)")
            return try Int.fetchOne(db, sql: "SELECT count(*) FROM activities_fts_deferred")
        }
        try other.close()
        #expect(deferred == 0)
    }

    /// The persistent identifiers (or titles, for entries without one) `query` finds, sorted.
    static func found(_ query: String, in index: SearchIndex) async throws -> [String] {
        try await index.search(query, limit: 100, now: now).map { $0.entry.persistentIdentifier ?? $0.entry.title }
            .sorted()
    }

    @Test("issue 29, G1: a v1 index opens, is migrated to v2 and keeps its entries, found by 1- and 4-character prefixes")
    func v1IndexIsMigrated() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            // A v1 file as a Baton before v2 left it: its insert trigger put each row into activities_fts.
            do {
                let old = try DatabaseQueue(path: path)
                try SearchIndex.migrator.migrate(old, upTo: "v1")
                try await old.write { db in
                    let rows = [
                        ("list-1", "Weekend groceries"), ("list-2", "Grocery receipts"), ("plan", "Garden plan"),
                    ]
                    for (id, title) in rows {
                        try db.execute(
                            sql: """
                                INSERT INTO activities (persistentIdentifier, bundleIdentifier, activityType, title,
                                    keywords, savedAt, payload, bytes)
                                VALUES (?, ?, 'com.example.app.view', ?, '', ?, x'', 10)
                                """,
                            arguments: [id, Self.app, title, Self.now.timeIntervalSince1970]
                        )
                    }
                }
                let fts = try await old.read { db in
                    try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'activities_fts'")
                }
                #expect(fts?.contains("prefix = '2 3'") == true)
                try old.close()
            }
            let index = try SearchIndex(path: path)
            #expect(try await Self.found("weekend", in: index) == ["list-1"])
            #expect(try await Self.found("g", in: index) == ["list-1", "list-2", "plan"])
            #expect(try await Self.found("groc", in: index) == ["list-1", "list-2"])
            #expect(try await Self.found("garde", in: index) == ["plan"])
            #expect(try await index.statistics() == SearchIndexStatistics(entries: 3, bytes: 30))
            try await Self.checkIntegrity(path)

            // The migrated file is v2: its FTS table has the new prefix indexes, and saves keep the index whole.
            let check = try DatabaseQueue(path: path)
            let (migrations, fts) = try await check.read { db in
                (
                    try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier"),
                    try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'activities_fts'")
                )
            }
            try check.close()
            #expect(migrations == ["v1", "v2"])
            #expect(fts?.contains("prefix = '1 2 3 4 5 6 7 8 9 10 11 12'") == true)
            try await index.save(
                [Self.entry("Grocery list", id: "list-2"), Self.entry("Gravel", id: "path")],
                now: Self.now
            )
            try await Self.checkIntegrity(path)
            #expect(try await Self.found("gr", in: index) == ["list-1", "list-2", "path"])
            #expect(try await Self.found("receipts", in: index).isEmpty)
        }
    }

    @Test("issue 25 item 6: a file with v1's schema whose migrations table lists v2 is damaged, not migrated")
    func v1SchemaClaimingV2IsDamaged() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            let old = try DatabaseQueue(path: path)
            try SearchIndex.migrator.migrate(old, upTo: "v1")
            try await old.write { db in
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v2')")
            }
            try old.close()
            let error = #expect(throws: SearchError.self) { _ = try SearchIndex(path: path) }
            #expect(error?.code == .damaged, "\(String(describing: error))")
        }
    }

    @Test("issue 29, G1: mixed batches (new entries, replacements in one batch, replacing:, eviction, deletes) keep the FTS index whole")
    func mixedBatchesKeepTheIndexWhole() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            let index = try SearchIndex(path: path, limits: SearchLimits(maximumEntries: 6))

            // A later entry with the same persistent identifier replaces an earlier one of the same batch.
            let first = try await index.save(
                [
                    Self.entry("Alpha one", id: "a"), Self.entry("Bravo", id: "b"), Self.entry("Alpha two", id: "a"),
                    Self.entry("Charlie"),
                ],
                now: Self.now
            )
            #expect(first[0] == first[2])
            try await Self.checkIntegrity(path)
            #expect(try await Self.found("alpha", in: index) == ["a"])
            #expect(try await index.search("one", now: Self.now).isEmpty)
            #expect(try await Self.found("two", in: index) == ["a"])
            #expect(try await index.statistics().entries == 3)

            // `replacing:` updates the entry without a persistent identifier in place.
            let delta = try await index.save(
                Self.entry("Delta"),
                replacing: first[3],
                now: Self.now.addingTimeInterval(1)
            )
            #expect(delta == first[3])
            try await Self.checkIntegrity(path)
            #expect(try await index.search("charlie", now: Self.now).isEmpty)
            #expect(try await Self.found("delta", in: index) == ["Delta"])

            // Over the cap of 6, the oldest leave after each entry: "Alpha two" (now), then "Delta" (now + 1).
            let echoes = (1...5).map { Self.entry("Echo \($0)", id: "e\($0)") }
            try await index.save(
                Array(echoes[0..<3]) + [Self.entry("Bravo new", id: "b")] + Array(echoes[3...]),
                now: Self.now.addingTimeInterval(2)
            )
            try await Self.checkIntegrity(path)
            #expect(try await Self.found("echo", in: index) == ["e1", "e2", "e3", "e4", "e5"])
            #expect(try await Self.found("bravo", in: index) == ["b"])
            #expect(try await index.search("alpha", now: Self.now).isEmpty)
            #expect(try await index.search("delta", now: Self.now).isEmpty)
            #expect(try await index.statistics().entries == 6)

            // Entries older than the rest: the first evicts "Bravo new" (the oldest but itself), the second evicts the
            // first, which the FTS index has not seen yet (saved in this very batch).
            try await index.save(
                [Self.entry("Foxtrot 1", id: "f1"), Self.entry("Foxtrot 2", id: "f2")],
                now: Self.now.addingTimeInterval(1)
            )
            try await Self.checkIntegrity(path)
            #expect(try await Self.found("foxtrot", in: index) == ["f2"])
            #expect(try await index.search("bravo", now: Self.now).isEmpty)
            #expect(try await Self.found("echo", in: index) == ["e1", "e2", "e3", "e4", "e5"])

            // A refused entry saves nothing of its batch.
            let refused = SearchEntry(bundleIdentifier: "", activityType: "", title: "Golf")
            await #expect(throws: SearchError.self) {
                try await index.save([Self.entry("Golf", id: "g")] + [refused], now: Self.now.addingTimeInterval(3))
            }
            #expect(try await index.search("golf", now: Self.now).isEmpty)

            // Deletes, then new saves in the same index.
            #expect(try await index.delete(persistentIdentifiers: ["e1", "f2"], of: Self.app) == 2)
            try await Self.checkIntegrity(path)
            #expect(try await Self.found("echo", in: index) == ["e2", "e3", "e4", "e5"])
            #expect(try await index.search("foxtrot", now: Self.now).isEmpty)
            try await index.save(
                [Self.entry("Hotel", id: "h"), Self.entry("Hotel again", id: "h")],
                now: Self.now.addingTimeInterval(4)
            )
            try await Self.checkIntegrity(path)
            #expect(try await index.search("hotel", now: Self.now).map(\.entry.title) == ["Hotel again"])
            #expect(try await index.deleteAll(of: Self.app) == 5)
            try await Self.checkIntegrity(path)
            #expect(try await index.search("e", now: Self.now).isEmpty)
            #expect(try await index.statistics() == SearchIndexStatistics(entries: 0, bytes: 0))
        }
    }

    @Test("issue 29, G1: a row another program inserts into activities is still indexed by the trigger, and evicting it keeps the index whole")
    func otherWritersRowsAreIndexed() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            let index = try SearchIndex(path: path, limits: SearchLimits(maximumEntries: 2))
            try await index.save(Self.entry("Milk and eggs", id: "m"), now: Self.now)
            let other = try DatabaseQueue(path: path)
            try await other.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO activities (persistentIdentifier, bundleIdentifier, activityType, title, keywords,
                            savedAt, payload, bytes)
                        VALUES ('o', ?, 'com.example.app.view', 'Oat milk', '', ?, x'', 10)
                        """,
                    arguments: [Self.app, Self.now.addingTimeInterval(-1).timeIntervalSince1970]
                )
            }
            try other.close()
            try await Self.checkIntegrity(path)
            #expect(try await Self.found("milk", in: index) == ["m", "o"])
            // Over the cap of 2, the oldest leaves: the other program's row, through the delete trigger.
            try await index.save(Self.entry("Milk again", id: "n"), now: Self.now)
            try await Self.checkIntegrity(path)
            #expect(try await Self.found("milk", in: index) == ["m", "n"])
        }
    }
}
