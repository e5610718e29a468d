import BatonCore
import BatonSearch
import Foundation
import GRDB
import Testing

/// A search index file written by another program of the same user (issue 25 item 6; SEMANTICS G1): its schema is
/// checked on open, and what is read out of it is bounded.
@Suite("A hostile search.sqlite (issue 25 item 6, G1)")
struct HostileIndexFileTests {
    /// A trigger that counts to 30 million (seconds of work) into a table of its own on every save.
    static let plantedTrigger = """
        CREATE TABLE planted (steps INTEGER);
        CREATE TRIGGER planted_after_insert AFTER INSERT ON activities BEGIN
            INSERT INTO planted SELECT count(*) FROM (
                WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 30000000) SELECT n FROM c);
        END;
        """

    /// Makes a real index at `path` with one entry, then changes its schema through SQLite as another program would.
    static func plant(_ sql: String, at path: String) async throws {
        do {
            let index = try SearchIndex(path: path)
            try await index.save(SearchIndexTests.entry("Milk and eggs"), now: SearchIndexTests.now)
        }
        let other = try DatabaseQueue(path: path)
        try await other.write { db in try db.execute(sql: sql) }
        try other.close()
    }

    /// Shorter than any wait for SQLite's lock (``SearchIndex/busyTimeout``), however loaded the machine.
    static let noLockWait = Duration.milliseconds(Int(SearchIndex.busyTimeout * 500))

    @Test("issue 25 item 6: a planted trigger and table make the file damaged; set aside, a fresh index saves at once and the trigger never runs")
    func plantedTriggerIsSetAside() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            try await Self.plant(Self.plantedTrigger, at: path)
            let error = #expect(throws: SearchError.self) { _ = try SearchIndex(path: path) }
            #expect(error?.code == .damaged, "\(String(describing: error))")
            #expect(error?.message.contains("trigger planted_after_insert") == true, "\(String(describing: error))")
            #expect(error?.message.contains("table planted") == true)
            // What an agent does with a damaged file (SearchService.openIndex), timed: it must not wait for a lock (a
            // writer waits up to SearchIndex.busyTimeout, 5 s). Half of that, not a stopwatch's "fast": CI runs every
            // test at once on two cores, where this took 0.65 s once (milliseconds on a quiet machine).
            let started = ContinuousClock.now
            try SearchIndex.setAside(at: path)
            let index = try SearchIndex(path: path)
            try await index.save(SearchIndexTests.entry("Fresh milk"), now: SearchIndexTests.now)
            let elapsed = ContinuousClock.now - started
            #expect(elapsed < Self.noLockWait, "open and save took \(elapsed)")
            #expect(try await index.search("milk", now: SearchIndexTests.now).map(\.entry.title) == ["Fresh milk"])
            // The old file is kept for a look, and its trigger never ran.
            let old = try DatabaseQueue(path: path + ".damaged")
            #expect(try await old.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM planted") } == 0)
        }
    }

    @Test("issue 25 item 6: a trigger planted while the index is open is refused by the next save as damage, and never runs")
    func triggerPlantedWhileOpen() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            let index = try SearchIndex(path: path)
            try await index.save(SearchIndexTests.entry("Milk and eggs"), now: SearchIndexTests.now)
            let other = try DatabaseQueue(path: path)
            try await other.write { db in try db.execute(sql: Self.plantedTrigger) }
            let started = ContinuousClock.now
            let error = await #expect(throws: SearchError.self) {
                try await index.save(SearchIndexTests.entry("Bread"), now: SearchIndexTests.now)
            }
            #expect(error?.code == .damaged, "\(String(describing: error))")
            #expect(ContinuousClock.now - started < Self.noLockWait, "refused after waiting for a lock")
            #expect(try await other.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM planted") } == 0)
        }
    }

    @Test("issue 25 item 6: an extra view, an extra index, or the FTS table missing is damage too; our own file reopens")
    func otherSchemasAreDamaged() async throws {
        let changes = [
            "CREATE VIEW everything AS SELECT * FROM activities",
            "CREATE INDEX activities_title ON activities(title)",
            "DROP TABLE activities_fts",
            "CREATE TRIGGER quiet AFTER DELETE ON totals BEGIN SELECT 1; END",
        ]
        for change in changes {
            try await withFolder { folder in
                let path = folder + "/search.sqlite"
                try await Self.plant(change, at: path)
                let error = #expect(throws: SearchError.self, "\(change)") { _ = try SearchIndex(path: path) }
                #expect(error?.code == .damaged, "\(change): \(String(describing: error))")
            }
        }
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            try await Self.plant("SELECT 1", at: path)
            let index = try SearchIndex(path: path)
            #expect(try await index.search("milk", now: SearchIndexTests.now).count == 1)
        }
    }

    /// Makes `path` an index with one entry ("Milk and eggs", found by "milk") whose title another program then made
    /// `size` characters long, its triggers (which would index the long title) put back exactly as they were, so the
    /// schema is still ours.
    static func plantLongTitle(_ size: Int, at path: String) async throws {
        try await plant("SELECT 1", at: path)
        let other = try DatabaseQueue(path: path)
        try await other.write { db in
            let trigger = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'activities_after_update'")
            try db.execute(sql: "DROP TRIGGER activities_after_update")
            try db.execute(sql: "UPDATE activities SET title = printf('%.*c', ?, 'x'), description = printf('%.*c', ?, 'y')", arguments: [size, size])
            try db.execute(sql: try #require(trigger))
        }
        try other.close()
    }

    @Test("issue 25 item 6: a 40 MB title planted in the file comes out cut to the text limit, with how much more it had")
    func longTitleIsCutOnRead() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            try await Self.plantLongTitle(40_000_000, at: path)
            let index = try SearchIndex(path: path)
            let limit = index.limits.maximumTextBytes
            let results = try await index.search("milk", now: SearchIndexTests.now)
            let result = try #require(results.first)
            let more = "… (\(Clipping.grouped(40_000_000 - limit)) more characters)"
            #expect(result.entry.title == String(repeating: "x", count: limit) + more)
            #expect(result.entry.contentDescription == String(repeating: "y", count: limit) + more)
            #expect(result.title.plain.utf8.count < limit + 100)
            let entry = try #require(try await index.entry(id: result.id, now: SearchIndexTests.now))
            #expect(entry.title.hasSuffix("… (39,983,616 more characters)"))
            #expect(entry.bundleIdentifier == "com.example.app")
        }
    }
}
