@testable import BatonSearch
import Foundation
import GRDB
import Testing

/// The query planner (SEMANTICS G1; issue 29): a common word is ranked within a window of recent entries, and the
/// results are still the exact ranking's.
@Suite("Search planning (G1, issue 29)")
struct SearchPlanTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("G1: a common word's best result is an old entry matching in its title, though the recent window holds only description matches")
    func g1OldTitleMatchBeatsRecentDescriptions() async throws {
        try await withFolder { folder in
            let index = try SearchIndex(path: folder + "/search.sqlite")
            func entry(_ title: String, _ description: String? = nil) -> SearchEntry {
                SearchEntry(
                    bundleIdentifier: "com.example.app", activityType: "com.example.app.view", title: title,
                    contentDescription: description, payload: Data()
                )
            }
            // 60 days ago, 500 entries without the word; 10 days ago, "Notes" as the whole title of an entry.
            try await index.save((0..<500).map { entry("Older \($0)") }, now: Self.now.addingTimeInterval(-60 * 86_400))
            let old = try await index.save(entry("Notes"), now: Self.now.addingTimeInterval(-10 * 86_400))
            // In the last 3 days, 3,000 entries with the word twice in a short description: a common word, past what
            // is ranked whole, and every match in the recent window is one of these. Each scores about 0.62 of the
            // bound; the old title match about 0.96 of it, times 0.71 for its age: it is the best result, and only a
            // window reaching back past 10 days finds it.
            for batch in 0..<6 {
                try await index.save(
                    (0..<500).map { entry("Entry \(batch * 500 + $0)", "notes and notes again") },
                    now: Self.now.addingTimeInterval(-Double(6 - batch) * 43_200)
                )
            }
            let planned = try await index.search("notes", limit: 10, now: Self.now)
            let exact = try await index.search("notes", limit: 10, now: Self.now, strategy: .exhaustive)
            #expect(exact.first?.id == old)
            #expect(planned.first?.id == old)
            #expect(planned.map(\.id) == exact.map(\.id))
            #expect(planned.first?.title.rendered() == "[Notes]")
        }
    }

    @Test("G1: planned results equal the exact ranking for common words and prefixes, with entries saved again (old rowids, new save times)")
    func g1PlannedEqualsExact() async throws {
        try await withFolder { folder in
            let index = try SearchIndex(path: folder + "/search.sqlite")
            let words = ["notes", "groceries", "grocery", "weekend", "trip", "plan", "draft", "paris", "green", "garden"]
                + (0..<200).map { "tail\($0)" }
            var seed: UInt64 = 0x5EED
            func next(_ bound: Int) -> Int {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int((seed >> 33) % UInt64(bound))
            }
            func text(_ count: Int) -> String {
                (0..<count).map { _ in words[next(3) == 0 ? next(10) : 10 + next(200)] }.joined(separator: " ")
            }
            let total = 6_000
            for start in stride(from: 0, to: total, by: 1_000) {
                let chunk = (start..<start + 1_000).map { number in
                    SearchEntry(
                        persistentIdentifier: "item-\(number)", bundleIdentifier: "com.example.app",
                        activityType: "com.example.app.view", title: text(2 + next(5)), keywords: [],
                        contentDescription: text(8 + next(20)), payload: Data()
                    )
                }
                try await index.save(chunk, now: Self.now.addingTimeInterval(-Double(total - start) * 900))
            }
            // Twenty old entries saved again an hour ago: their rowids stay old, their save times are recent.
            for number in stride(from: 100, to: 2_100, by: 100) {
                try await index.save(
                    SearchEntry(
                        persistentIdentifier: "item-\(number)", bundleIdentifier: "com.example.app",
                        activityType: "com.example.app.view", title: "notes on the garden", keywords: [],
                        contentDescription: "groceries for the weekend", payload: Data()
                    ),
                    now: Self.now.addingTimeInterval(-3_600)
                )
            }
            for query in ["notes", "groceries", "gr", "g", "garden", "weekend groceries", "notes gard"] {
                let planned = try await index.search(query, limit: 20, now: Self.now).map(\.id)
                let exact = try await index.search(query, limit: 20, now: Self.now, strategy: .exhaustive).map(\.id)
                if SearchQuery(query).terms.count == 1 {
                    #expect(planned == exact, "\(query)")
                } else {
                    // Several words are ranked in the window holding about 300 of their matches: recall, not identity.
                    let recall = Double(Set(planned.prefix(10)).intersection(exact.prefix(10)).count) / Double(max(1, min(10, exact.count)))
                    #expect(recall >= 0.9, "\(query): recall@10 \(recall), planned \(planned), exact \(exact)")
                }
            }
        }
    }

    @Test("issue 29: baton_rank gives FTS5's own bm25 times recency, row for row, when given FTS5's idfs")
    func rankFunctionIsBM25() async throws {
        try await withFolder { folder in
            let index = try SearchIndex(path: folder + "/search.sqlite")
            let entries = (0..<400).map { number in
                SearchEntry(
                    bundleIdentifier: "com.example.app", activityType: "com.example.app.view",
                    title: number % 7 == 0 ? "Weekend groceries \(number)" : "Entry \(number)",
                    keywords: number % 5 == 0 ? ["groceries"] : [],
                    contentDescription: String(repeating: "milk eggs ", count: 1 + number % 9) + (number % 3 == 0 ? "groceries weekend" : "bread"),
                    payload: Data()
                )
            }
            for (offset, entry) in entries.enumerated() {
                try await index.save(entry, now: Self.now.addingTimeInterval(-Double(400 - offset) * 3_600))
            }
            let ranking = index.ranking
            for query in ["groceries", "weekend groceries", "gro"] {
                let parsed = SearchQuery(query)
                let match = try #require(parsed.matchExpression)
                let pairs = try await index.pool.read { db -> [(Double, Double)] in
                    // FTS5's idfs, from every phrase's matches counted (the planner leaves a single phrase's out).
                    let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM activities") ?? 0
                    let idfs = try parsed.phrases.map { phrase in
                        SearchPlan.idf(
                            hits: try Int.fetchOne(db, sql: "SELECT count(*) FROM activities_fts WHERE activities_fts MATCH ?", arguments: [phrase]) ?? 0,
                            rows: rows
                        )
                    }
                    let idfMarks = String(repeating: ", ?", count: idfs.count)
                    var arguments: StatementArguments = [
                        ranking.titleWeight, ranking.keywordsWeight, ranking.descriptionWeight,
                        ranking.recencyShare, ranking.recencyShare, ranking.recencyHalfLife, ranking.recencyHalfLife,
                        Self.now.timeIntervalSince1970,
                        Self.now.timeIntervalSince1970, ranking.recencyShare, ranking.recencyHalfLife,
                        ranking.titleWeight, ranking.keywordsWeight, ranking.descriptionWeight,
                    ]
                    arguments += StatementArguments(idfs)
                    arguments += [match]
                    return try Row.fetchAll(
                        db,
                        sql: """
                            SELECT bm25(activities_fts, ?, ?, ?) * ((1.0 - ?) + ? * ? / (? + max(0.0, ? - r.savedAt))) AS builtIn,
                                baton_rank(activities_fts, r.savedAt, ?, ?, ?, ?, ?, ?\(idfMarks)) AS ours
                            FROM activities_fts JOIN activities_rank AS r ON r.id = activities_fts.rowid
                            WHERE activities_fts MATCH ?
                            """,
                        arguments: arguments
                    ).map { ($0["builtIn"], $0["ours"]) }
                }
                #expect(pairs.count > 20, "\(query)")
                for (builtIn, ours) in pairs {
                    #expect(abs(builtIn - ours) <= 1e-9 * abs(builtIn), "\(query): bm25 \(builtIn), baton_rank \(ours)")
                }
            }
        }
    }

    @Test("issue 29, issue 25 item 6: a file with rowids at Int64's ends, bogus totals and text save times is searched without a crash")
    func hostileNumbersAreSearched() async throws {
        try await withFolder { folder in
            let path = folder + "/search.sqlite"
            let index = try SearchIndex(path: path)
            try await index.save(
                (0..<1_200).map { number in
                    SearchEntry(
                        bundleIdentifier: "com.example.app", activityType: "com.example.app.view", title: "Notes \(number)",
                        contentDescription: "notes on the garden", payload: Data()
                    )
                },
                now: Self.now
            )
            // Another program of the same user writes the file: the schema stays ours, the numbers do not.
            let other = try DatabaseQueue(path: path)
            try await other.write { db in
                for id in [Int64.max, Int64.min, Int64.max - 1] {
                    try db.execute(
                        sql: """
                            INSERT INTO activities (id, bundleIdentifier, activityType, title, keywords, description, savedAt,
                                payload, bytes) VALUES (?, 'com.example.app', 'com.example.app.view', 'notes', '', 'notes', ?, x'', 0)
                            """,
                        arguments: [id, "not a time"]
                    )
                }
                try db.execute(sql: "UPDATE activities_rank SET savedAt = 'later' WHERE id % 7 = 0")
                try db.execute(sql: "UPDATE totals SET entries = 9223372036854775807")
            }
            try other.close()
            for query in ["notes", "n", "notes gard", "garden notes "] {
                for strategy in [SearchStrategy.planned, .exhaustive] {
                    do {
                        let results = try await index.search(query, limit: 20, now: Self.now, strategy: strategy)
                        #expect(results.count <= 20)
                    } catch let error as SearchError {
                        // A typed error is an answer too; a crash or a hang is not.
                        #expect(!error.message.isEmpty)
                    }
                }
            }
            try await index.deleteAll()
            try await index.save(SearchEntry(bundleIdentifier: "com.example.app", activityType: "t", title: "Notes again", payload: Data()), now: Self.now)
        }
    }

    @Test("issue 29: the bound's arithmetic: FTS5's idf, recency, and which save times cannot beat a score")
    func planArithmetic() {
        #expect(SearchPlan.idf(hits: 90, rows: 100) == 1e-6)
        #expect(abs(SearchPlan.idf(hits: 10, rows: 100) - log(90.5 / 10.5)) < 1e-12)
        let plan = SearchPlan(ranking: .default, now: 1_000_000)
        #expect(plan.recency(savedAt: 1_000_000) == 1)
        #expect(abs(plan.recency(savedAt: 1_000_000 - 7 * 86_400) - 0.75) < 1e-12)
        #expect(plan.oldestThatCannotBeat(score: 2, bound: 1) == .all)
        #expect(plan.oldestThatCannotBeat(score: 0.4, bound: 1) == .none)
        // A score of 0.75 of the bound: entries a half-life old or older cannot beat it.
        #expect(plan.oldestThatCannotBeat(score: 0.75, bound: 1) == .savedAtOrBefore(1_000_000 - 7 * 86_400))
        // The bound: each phrase's idf times k1 + 1, with the margin.
        #expect(abs(SearchPlan.relevanceBound(idfs: [1, 2]) - 3 * 2.2 * SearchPlan.boundMargin) < 1e-12)
    }
}
