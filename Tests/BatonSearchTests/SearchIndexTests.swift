import BatonSearch
import Foundation
import GRDB
import Testing

/// The index itself (SEMANTICS G1, G3; issue 15): a real SQLite file in a temporary folder per test.
@Suite("SearchIndex (G1, G3)")
struct SearchIndexTests {
    @Test("G1: a saved entry is found by a word of its title, with every field kept and the word marked")
    func g1IndexAndFind() async throws {
        try await withIndex { index in
            let saved = SearchEntry(
                persistentIdentifier: "list-1",
                bundleIdentifier: "com.example.shopsnap",
                activityType: "com.example.shopsnap.list",
                title: "Weekend groceries",
                keywords: ["shopping", "food"],
                contentDescription: "Milk, eggs and bread for Saturday",
                contentType: "public.text",
                thumbnailData: Data([0x89, 0x50, 0x4E, 0x47]),
                relatedUniqueIdentifier: "note-42",
                webpageURL: "https://example.com/lists/1",
                expirationDate: Date(timeIntervalSince1970: 2_000_000_000),
                payload: Data("payload".utf8)
            )
            let id = try await index.save(saved, now: Self.now)
            let results = try await index.search("weekend", now: Self.now)
            #expect(results.count == 1)
            let result = try #require(results.first)
            #expect(result.id == id)
            #expect(result.entry == SearchEntry(
                persistentIdentifier: "list-1", bundleIdentifier: "com.example.shopsnap",
                activityType: "com.example.shopsnap.list", title: "Weekend groceries", keywords: ["food", "shopping"],
                contentDescription: "Milk, eggs and bread for Saturday", contentType: "public.text",
                thumbnailData: Data([0x89, 0x50, 0x4E, 0x47]), relatedUniqueIdentifier: "note-42",
                webpageURL: "https://example.com/lists/1", expirationDate: Date(timeIntervalSince1970: 2_000_000_000),
                payload: Data("payload".utf8)))
            #expect(result.title.rendered() == "[Weekend] groceries")
            #expect(result.savedAt == Self.now)
            #expect(result.score > 0)
            // Keywords and the description are searched too; a word found nowhere finds nothing.
            #expect(try await index.search("shopping", now: Self.now).map(\.id) == [id])
            let byDescription = try await index.search("saturday", now: Self.now)
            #expect(byDescription.map(\.id) == [id])
            #expect(byDescription.first?.snippet.matches == ["Saturday"])
            #expect(try await index.search("tuesday", now: Self.now).isEmpty)
            // Every word must match.
            #expect(try await index.search("weekend tuesday", now: Self.now).isEmpty)
            #expect(try await index.search("weekend eggs", now: Self.now).map(\.id) == [id])
        }
    }

    @Test("G1: saving the same persistent identifier replaces the entry and keeps its id")
    func g1ReplaceByPersistentIdentifier() async throws {
        try await withIndex { index in
            let first = try await index.save(Self.entry("Draft letter", id: "doc-7"), now: Self.now)
            let second = try await index.save(Self.entry("Final letter", id: "doc-7"), now: Self.now.addingTimeInterval(5))
            #expect(first == second)
            #expect(try await index.statistics().entries == 1)
            #expect(try await index.search("draft", now: Self.now).isEmpty)
            #expect(try await index.search("letter", now: Self.now).map(\.entry.title) == ["Final letter"])
            // Without a persistent identifier, each save is its own entry.
            try await index.save(Self.entry("Loose note"), now: Self.now)
            try await index.save(Self.entry("Loose note"), now: Self.now)
            #expect(try await index.statistics().entries == 3)
        }
    }

    @Test("G1: an expired entry is never returned, and purging removes it")
    func g1ExpiryHidesAndPurges() async throws {
        try await withIndex { index in
            try await index.save(Self.entry("Boarding pass", id: "old", expires: Self.now.addingTimeInterval(60)), now: Self.now)
            try await index.save(Self.entry("Boarding pass return", id: "new"), now: Self.now)
            #expect(try await index.search("boarding", now: Self.now).count == 2)
            let later = Self.now.addingTimeInterval(60)
            #expect(try await index.search("boarding", now: later).map(\.entry.persistentIdentifier) == ["new"])
            #expect(try await index.statistics().entries == 2)
            #expect(try await index.purgeExpired(now: later) == 1)
            #expect(try await index.statistics().entries == 1)
            #expect(try await index.search("boarding", now: Self.now).map(\.entry.persistentIdentifier) == ["new"])
        }
    }

    @Test("G1: an entry without a persistent identifier replaces the one it names only if that is the same app's and has none")
    func g1ReplacingByRowForEntriesWithoutIdentifier() async throws {
        try await withIndex { index in
            let first = try await index.save(Self.entry("Draft one"), now: Self.now)
            let again = try await index.save(Self.entry("Draft one, edited"), replacing: first, now: Self.now)
            #expect(again == first)
            #expect(try await index.search("draft", now: Self.now).map(\.entry.title) == ["Draft one, edited"])
            #expect(try await index.entry(id: first, now: Self.now)?.title == "Draft one, edited")
            // Another app cannot overwrite it, and a row with an identifier is not replaced this way.
            let foreign = try await index.save(Self.entry("Draft two", app: "com.example.other"), replacing: first, now: Self.now)
            #expect(foreign != first)
            let named = try await index.save(Self.entry("Named", id: "named"), now: Self.now)
            #expect(try await index.save(Self.entry("Unnamed"), replacing: named, now: Self.now) != named)
            #expect(try await index.statistics().entries == 4)
            // Gone or expired entries are not found by id.
            #expect(try await index.entry(id: 9_999, now: Self.now) == nil)
            let expiring = try await index.save(Self.entry("Soon gone", expires: Self.now.addingTimeInterval(60)), now: Self.now)
            #expect(try await index.entry(id: expiring, now: Self.now.addingTimeInterval(61)) == nil)
        }
    }

    @Test("G3: entries are deleted by persistent identifier, or all at once")
    func g3DeleteByIdentifierAndAll() async throws {
        try await withIndex { index in
            for name in ["alpha", "beta", "gamma"] {
                try await index.save(Self.entry("Trip \(name)", id: name), now: Self.now)
            }
            try await index.save(Self.entry("Trip without id"), now: Self.now)
            // Another app's entry with the same identifier is its own (G3: an app deletes only what it saved).
            try await index.save(Self.entry("Trip alpha elsewhere", id: "alpha", app: "com.example.other"), now: Self.now)
            #expect(try await index.delete(persistentIdentifiers: ["alpha", "gamma", "missing"], of: "com.example.app") == 2)
            #expect(try await index.search("elsewhere", now: Self.now).count == 1)
            #expect(try await index.deleteAll(of: "com.example.other") == 1)
            let left = try await index.search("trip", now: Self.now).map(\.entry.title).sorted()
            #expect(left == ["Trip beta", "Trip without id"])
            #expect(try await index.search("alpha", now: Self.now).isEmpty)
            #expect(try await index.deleteAll() == 2)
            #expect(try await index.search("trip", now: Self.now).isEmpty)
            #expect(try await index.statistics() == SearchIndexStatistics(entries: 0, bytes: 0))
            // Many identifiers at once (more than one batch).
            let many = (0..<1_200).map { "id-\($0)" }
            #expect(try await index.delete(persistentIdentifiers: many, of: "com.example.app") == 0)
        }
    }

    @Test("G1: a title match ranks above a description match, even an older one; recency orders equal matches")
    func g1RankingTitleAboveDescription() async throws {
        try await withIndex { index in
            let week: TimeInterval = 7 * 24 * 3600
            try await index.save(Self.entry("Lemon tart", id: "title"), now: Self.now.addingTimeInterval(-4 * week))
            try await index.save(
                Self.entry("Dessert ideas", id: "description", description: "A tart with lemon curd and cream"),
                now: Self.now
            )
            try await index.save(Self.entry("Supper", id: "keywords", keywords: ["lemon"]), now: Self.now)
            // bm25 saturates term frequency (k1 = 1.2), so weights 10 : 5 : 1 count for less than their ratio: the old
            // title match still beats the fresh description match, but a fresh keyword match may pass it.
            let order = try await index.search("lemon", now: Self.now).compactMap(\.entry.persistentIdentifier)
            #expect(order.count == 3)
            #expect(order.last == "description")
            // Same age and length: title above keywords above description.
            try await index.save(Self.entry("Quince jam", id: "q-title"), now: Self.now)
            try await index.save(Self.entry("Pantry", id: "q-keywords", keywords: ["quince"]), now: Self.now)
            try await index.save(Self.entry("Preserves", id: "q-description", description: "quince"), now: Self.now)
            let sameAge = try await index.search("quince", now: Self.now).compactMap(\.entry.persistentIdentifier)
            #expect(sameAge == ["q-title", "q-keywords", "q-description"])
            // Two equal title matches: the more recent first.
            try await index.save(Self.entry("Plum cake", id: "older"), now: Self.now.addingTimeInterval(-week))
            try await index.save(Self.entry("Plum cake", id: "newer"), now: Self.now)
            #expect(try await index.search("plum", now: Self.now).map(\.entry.persistentIdentifier) == ["newer", "older"])
        }
    }

    @Test("G1: diacritics are ignored both ways (café = cafe), and the last word matches as a prefix")
    func g1DiacriticsAndPrefix() async throws {
        try await withIndex { index in
            try await index.save(Self.entry("Café Noir opening hours", id: "accent"), now: Self.now)
            try await index.save(Self.entry("Cafe menu", id: "plain"), now: Self.now)
            try await index.save(Self.entry("Groceries for Sunday", id: "groceries"), now: Self.now)
            let byPlain = Set(try await index.search("cafe", now: Self.now).compactMap(\.entry.persistentIdentifier))
            let byAccent = Set(try await index.search("CAFÉ", now: Self.now).compactMap(\.entry.persistentIdentifier))
            #expect(byPlain == ["accent", "plain"])
            #expect(byAccent == ["accent", "plain"])
            #expect(try await index.search("groc", now: Self.now).map(\.entry.persistentIdentifier) == ["groceries"])
            #expect(try await index.search("gr", now: Self.now).map(\.entry.persistentIdentifier) == ["groceries"])
            #expect(try await index.search("g", now: Self.now).map(\.entry.persistentIdentifier) == ["groceries"])
            let marked = try #require(try await index.search("café noi", now: Self.now).first)
            #expect(marked.title.rendered() == "[Café] [Noir] opening hours")
            // Only the last word is a prefix: a cut earlier word must be whole.
            #expect(try await index.search("groc sunday", now: Self.now).isEmpty)
            #expect(try await index.search("groceries sun", now: Self.now).count == 1)
            // Once the text ends in whitespace the last word is finished, and must be whole too.
            #expect(try await index.search("groc ", now: Self.now).isEmpty)
            #expect(try await index.search("groceries ", now: Self.now).count == 1)
        }
    }

    @Test("G1: a batch save is one transaction that saves every entry as single saves would, or none when one is refused")
    func g1BatchSave() async throws {
        try await withIndex(limits: SearchLimits(maximumEntries: 3)) { index in
            let ids = try await index.save(
                [
                    Self.entry("Batch one", id: "one"), Self.entry("Batch two", id: "two"),
                    Self.entry("Batch two, edited", id: "two"), Self.entry("Batch three"), Self.entry("Batch four"),
                ],
                now: Self.now
            )
            #expect(ids.count == 5)
            #expect(ids[1] == ids[2])
            // The cap applies after each save, oldest first out: "one" left when "four" came.
            let titles = try await index.search("batch", now: Self.now).map(\.entry.title).sorted()
            #expect(titles == ["Batch four", "Batch three", "Batch two, edited"])
            let refused = [Self.entry("Batch five"), Self.entry("Too big", payload: Data(count: (1 << 20) + 1))]
            let error = await #expect(throws: SearchError.self) { try await index.save(refused, now: Self.now) }
            #expect(error?.code == .tooLarge)
            #expect(try await index.search("five", now: Self.now).isEmpty)
        }
    }

    @Test("G1: hostile queries (FTS5 syntax, quotes, unbalanced parentheses, 10 KB) never throw; no words, no results")
    func g1HostileQueriesNeverThrow() async throws {
        try await withIndex { index in
            try await index.save(Self.entry("NEAR the OR gate", id: "syntax", description: "AND NOT col:umn"), now: Self.now)
            let hostile = [
                "\"", "\"\"", "\"unbalanced", "NEAR(", "NEAR(a b", "NEAR(near, 2)", "*", "**", "a*b*", "-", "-near",
                "(", ")", "((near)", "near)", "^near", "title:near", "{title}: near", "AND", "OR OR", "NOT", "near AND",
                "near OR", "+", ":", "'", "`", "\\", "\u{0}", "\u{E000}near\u{E001}", "near\u{0}gate", "🙂", "👩‍👩‍👧",
                "   ", "", "...", "*?!%$#@", String(repeating: "(", count: 500),
            ]
            for query in hostile {
                await #expect(throws: Never.self, "query \(query.debugDescription)") {
                    _ = try await index.search(query, now: Self.now)
                }
            }
            for query in ["", "   ", "...", "*", "\"", "(", "-", "*?!%$#@", "🙂"] {
                #expect(try await index.search(query, now: Self.now).isEmpty, "query \(query.debugDescription)")
            }
            // Operator words are plain words here.
            #expect(try await index.search("NEAR(", now: Self.now).map(\.entry.persistentIdentifier) == ["syntax"])
            #expect(try await index.search("or gate", now: Self.now).count == 1)
            #expect(try await index.search("col:umn", now: Self.now).count == 1)
            // 10 KB of random printable text, several times.
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<5 {
                let text = String((0..<10_240).map { _ in Character(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &generator))) })
                await #expect(throws: Never.self) { _ = try await index.search(text, now: Self.now) }
            }
            await #expect(throws: Never.self) {
                _ = try await index.search(String(repeating: "near ", count: 2_048), now: Self.now)
            }
        }
    }

    @Test("G1: the index holds at most its entry cap and byte cap, oldest saved first out")
    func g1CapsOldestFirstOut() async throws {
        try await withIndex(limits: SearchLimits(maximumEntries: 3)) { index in
            for number in 1...5 {
                try await index.save(Self.entry("Note \(number)", id: "n\(number)"), now: Self.now.addingTimeInterval(Double(number)))
            }
            #expect(try await index.statistics().entries == 3)
            let kept = try await index.search("note", now: Self.now).compactMap(\.entry.persistentIdentifier).sorted()
            #expect(kept == ["n3", "n4", "n5"])
        }
        let payload = Data(repeating: 7, count: 1_000)
        try await withIndex(limits: SearchLimits(maximumBytes: 3_500)) { index in
            for number in 1...6 {
                try await index.save(
                    Self.entry("Photo \(number)", id: "p\(number)", payload: payload),
                    now: Self.now.addingTimeInterval(Double(number))
                )
            }
            let statistics = try await index.statistics()
            #expect(statistics.entries == 3)
            #expect(statistics.bytes <= 3_500)
            let kept = try await index.search("photo", now: Self.now).compactMap(\.entry.persistentIdentifier).sorted()
            #expect(kept == ["p4", "p5", "p6"])
            // An entry saved with an earlier clock is still the one kept: the just-saved entry never evicts itself.
            try await index.save(Self.entry("Photo late", id: "late", payload: payload), now: Self.now)
            #expect(try await index.search("late", now: Self.now).count == 1)
        }
    }

    @Test("G1: a thumbnail, payload or entry above its limit is refused as tooLarge, and nothing is saved")
    func g1TooLarge() async throws {
        try await withIndex(limits: SearchLimits(maximumBytes: 10_000, maximumThumbnailBytes: 100, maximumPayloadBytes: 2_000)) { index in
            var big = Self.entry("Big picture", id: "big")
            big.thumbnailData = Data(count: 101)
            let thumbnailError = await #expect(throws: SearchError.self) { try await index.save(big, now: Self.now) }
            #expect(thumbnailError?.code == .tooLarge)
            let payloadError = await #expect(throws: SearchError.self) {
                try await index.save(Self.entry("Heavy", payload: Data(count: 2_001)), now: Self.now)
            }
            #expect(payloadError?.code == .tooLarge)
            let textError = await #expect(throws: SearchError.self) {
                try await index.save(Self.entry(String(repeating: "word ", count: 4_000)), now: Self.now)
            }
            #expect(textError?.code == .tooLarge)
            let invalid = await #expect(throws: SearchError.self) {
                try await index.save(SearchEntry(bundleIdentifier: "", activityType: "t", title: "x"), now: Self.now)
            }
            #expect(invalid?.code == .invalidEntry)
            let statistics = try await index.statistics()
            #expect(statistics.entries == 0)
        }
    }

    @Test("A file that is not an index is reported as damaged, with what to do; discarding it gives an empty index")
    func damagedFileIsReported() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            var generator = SystemRandomNumberGenerator()
            let garbage = Data((0..<8_192).map { _ in UInt8.random(in: 0...255, using: &generator) })
            try garbage.write(to: URL(fileURLWithPath: path))
            let error = #expect(throws: SearchError.self) { _ = try SearchIndex(path: path) }
            #expect(error?.code == .damaged)
            #expect(error?.message.contains(path) == true)
            #expect(error?.message.contains("Remove it") == true)
            try SearchIndex.discard(at: path)
            let index = try SearchIndex(path: path)
            try await index.save(Self.entry("Fresh start"), now: Self.now)
            #expect(try await index.search("fresh", now: Self.now).count == 1)
        }
        // An index that worked, overwritten afterwards.
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            do {
                let index = try SearchIndex(path: path)
                try await index.save(Self.entry("Soon overwritten"), now: Self.now)
            }
            try Data(repeating: 0xA5, count: 4_096).write(to: URL(fileURLWithPath: path))
            let error = #expect(throws: SearchError.self) { _ = try SearchIndex(path: path) }
            #expect(error?.code == .damaged)
        }
    }

    @Test("An index whose rows hold values of the wrong kind (written by something else) is reported damaged, never a crash")
    func hostileRowsAreDamage() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            let index = try SearchIndex(path: path)
            try await index.save(Self.entry("Hostile neighbour"), now: Self.now)
            // Another program writes through SQLite itself: a content type that is not UTF-8, a save time that is text.
            let other = try DatabaseQueue(path: path)
            try await other.write { db in
                try db.execute(sql: "UPDATE activities SET contentType = X'FFFE41', savedAt = 'yesterday'")
            }
            let error = await #expect(throws: SearchError.self) { _ = try await index.search("neighbour", now: Self.now) }
            #expect(error?.code == .damaged, "\(String(describing: error))")
            #expect(error?.message.contains("baton search --rebuild") == true)
            let id = try await other.read { db in try Int64.fetchOne(db, sql: "SELECT id FROM activities") }
            let lookup = await #expect(throws: SearchError.self) { _ = try await index.entry(id: try #require(id), now: Self.now) }
            #expect(lookup?.code == .damaged)
        }
    }

    @Test("G1: the index file and its WAL are private (mode 0600); a missing folder is unwritable")
    func g1FileModeAndUnwritable() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            let index = try SearchIndex(path: path)
            try await index.save(Self.entry("Private"), now: Self.now)
            for file in [path, path + "-wal"] {
                let attributes = try FileManager.default.attributesOfItem(atPath: file)
                #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(file)")
            }
            let error = #expect(throws: SearchError.self) { _ = try SearchIndex(path: folder + "/missing/search.sqlite") }
            #expect(error?.code == .unwritable)
        }
    }

    @Test("G1: entries survive closing and reopening, and a second SearchIndex on the same file sees the first's saves")
    func g1PersistsAndSharesTheFile() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            let id: Int64
            do {
                let index = try SearchIndex(path: path)
                id = try await index.save(Self.entry("Kept across restarts", id: "kept"), now: Self.now)
            }
            let reopened = try SearchIndex(path: path)
            #expect(try await reopened.search("restarts", now: Self.now).map(\.id) == [id])
            // Two openers of one file (the agent and `baton search`, later): WAL lets one read while the other writes.
            let other = try SearchIndex(path: path)
            try await reopened.save(Self.entry("Written by the first", id: "first"), now: Self.now)
            #expect(try await other.search("first", now: Self.now).count == 1)
            try await other.delete(persistentIdentifiers: ["kept"], of: "com.example.app")
            #expect(try await reopened.search("restarts", now: Self.now).isEmpty)
        }
    }

    // MARK: Helpers

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func entry(
        _ title: String,
        id: String? = nil,
        keywords: [String] = [],
        description: String? = nil,
        expires: Date? = nil,
        payload: Data = Data(),
        app: String = "com.example.app"
    ) -> SearchEntry {
        SearchEntry(
            persistentIdentifier: id, bundleIdentifier: app, activityType: "com.example.app.view",
            title: title, keywords: keywords, contentDescription: description, expirationDate: expires, payload: payload
        )
    }

    func withIndex(limits: SearchLimits = .default, _ body: (SearchIndex) async throws -> Void) async throws {
        try await withFolder { folder in
            try await body(try SearchIndex(path: folder + "/search.sqlite", limits: limits))
        }
    }
}

/// A fresh temporary folder for `body`, removed afterwards.
func withFolder(_ body: (String) async throws -> Void) async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-search-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    try await body(folder)
}
