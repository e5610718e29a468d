import Foundation
import GRDB

extension SearchIndex {
    // MARK: Searching (G1)

    /// The entries matching `query`, best first: every word must match (the last also as a prefix while it is being
    /// typed, that is unless the text ends in whitespace), ranked by bm25 with the title and keywords above the
    /// description, and by recency (``ranking``). Expired entries are never returned.
    ///
    /// Any text is a valid query (``SearchQuery``): one without letters or digits returns no results, not an error.
    /// ``SearchStrategy/planned`` (the default) ranks only as much of the index as it must (``SearchPlan``: issue 29,
    /// ARCHITECTURE "On-device search", Query planning): for one word its results are the exact ranking's; for several,
    /// those of the newest window holding about 300 of their matches (recall@10 0.9 in `baton bench search`).
    /// ``SearchStrategy/exhaustive`` ranks every match.
    public func search(
        _ query: String,
        limit: Int = 20,
        now: Date = Date(),
        strategy: SearchStrategy = .planned
    ) async throws -> [SearchResult] {
        let parsed = SearchQuery(query)
        guard limit > 0, let match = parsed.matchExpression else { return [] }
        let phrases = parsed.phrases
        let plan = SearchPlan(ranking: ranking, now: now.timeIntervalSince1970)
        let marker = TextMarker(parsed)
        let limits = self.limits
        // One read, so one snapshot: the counts, every window and the rows returned agree.
        return try await read { db in
            guard let counts = try Self.counts(of: phrases, exact: strategy == .exhaustive, db) else { return [] }
            let ranked: [Ranked]
            switch strategy {
            case .exhaustive:
                ranked = try Self.rank(match, in: .all, limit: limit, plan: plan, counts: counts, db)
            case .planned:
                ranked = try Self.plannedRanking(match, counts: counts, limit: limit, plan: plan, db)
            }
            return try Self.results(ranked, marker: marker, limits: limits, db)
        }
    }

    /// One ranked match: its row and its `ordering` (bm25 × recency, negative, ascending is best first).
    struct Ranked: Sendable {
        var id: Int64
        var ordering: Double
    }

    /// Which rows a ranking statement considers.
    enum Rows {
        case all
        /// Rowids from the first up to (not including) the second: a slice of the most recent entries.
        case between(Int64, Int64)
        /// These rowids (entries saved again after the window's oldest, whose rowids are older).
        case ids([Int64])
    }

    /// How many rows each phrase matches, the index's rows, and the idf each phrase is ranked with: what
    /// ``RankFunction`` and ``SearchPlan``'s bound are made of.
    struct Counts: Sendable {
        var hits: [Int]
        var rows: Int
        /// The largest rowid, read once for the sample and the windows.
        var newest: Int64
        var idfs: [Double]
        /// The query's own matches (all its phrases in one row), estimated: the rarest phrase's for one phrase, else
        /// from the sample.
        var matches: Int
    }

    /// The counts for `phrases`, nil when the query cannot match.
    ///
    /// Exact: every phrase's matches counted, as FTS5's bm25 counts them for its idf (`count(*)` reads the phrase's
    /// doclist: 0.3–0.5 ms for a word in 13% of 100,000 entries, 1.8 ms for one letter). Otherwise estimated from the
    /// newest ``SearchPlan/sampleRows`` rowids, and counted whole only for a phrase the sample holds fewer than
    /// ``SearchPlan/minimumSampledHits`` of (a rare one: cheap to count, and an estimate from a few would be poor) or
    /// in ``SearchPlan/maximumSampledShare`` of its rows or more (near half the rows idf is near 0, and a small error
    /// in the count swings the phrase's weight against the others'). A
    /// query of one phrase is ranked with idf 1: its idf scales every score alike, and its count only plans.
    static func counts(of phrases: [String], exact: Bool, _ db: Database) throws -> Counts? {
        // Both from the file, which any program of this user may have written: kept to where the arithmetic below
        // cannot overflow (a rowid near Int64.max, a total of Int.max), never trusted to be consistent.
        let rows = SearchPlan.clamped(try Int.fetchOne(db.cachedStatement(sql: "SELECT entries FROM totals WHERE id = 1")) ?? 0)
        guard let newest = try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(id) FROM activities")) else { return nil }
        let sampleStart = newest > Int64.min + Int64(SearchPlan.sampleRows) ? newest - Int64(SearchPlan.sampleRows) + 1 : Int64.min
        let sampledRows = min(max(rows, 1), SearchPlan.sampleRows)
        var hits: [Int] = []
        for phrase in phrases {
            if !exact {
                let sampled = try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT count(*) FROM activities_fts WHERE activities_fts MATCH ? AND rowid >= ?"),
                    arguments: [phrase, sampleStart]
                ) ?? 0
                let share = Double(sampled) / Double(sampledRows)
                // A small index is counted whole: cheap, and its rowids may have gaps (deletions) the sample's range
                // would not account for.
                if phrases.count == 1
                    || (rows > SearchPlan.sampleRows && sampled >= SearchPlan.minimumSampledHits
                        && share < SearchPlan.maximumSampledShare)
                {
                    hits.append(SearchPlan.clamped((Double(sampled) * Double(max(rows, 1)) / Double(sampledRows)).rounded(.up)))
                    continue
                }
            }
            let count = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count(*) FROM activities_fts WHERE activities_fts MATCH ?"), arguments: [phrase]
            ) ?? 0
            guard count > 0 else { return nil }
            hits.append(count)
        }
        let total = max(rows, hits.max() ?? 0)
        if phrases.count == 1 { return Counts(hits: hits, rows: total, newest: newest, idfs: [1], matches: hits.first ?? 0) }
        var matches = hits.min() ?? 0
        if !exact, rows > SearchPlan.sampleRows {
            let sampled = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count(*) FROM activities_fts WHERE activities_fts MATCH ? AND rowid >= ?"),
                arguments: [phrases.joined(separator: " "), sampleStart]
            ) ?? 0
            matches = min(matches, SearchPlan.clamped((Double(sampled) * Double(rows) / Double(sampledRows)).rounded(.up)))
        }
        return Counts(hits: hits, rows: total, newest: newest, idfs: hits.map { SearchPlan.idf(hits: $0, rows: total) }, matches: matches)
    }

    /// ``SearchPlan``'s loop: few matches are ranked whole; otherwise windows of recent rowids, widened until the
    /// bound shows nothing outside can displace a result.
    static func plannedRanking(_ match: String, counts: Counts, limit: Int, plan: SearchPlan, _ db: Database) throws -> [Ranked] {
        let rows = counts.rows
        func rankAll() throws -> [Ranked] { try rank(match, in: .all, limit: limit, plan: plan, counts: counts, db) }
        let fewest = counts.matches
        let newest = counts.newest
        guard fewest > SearchPlan.rankAllMatches, (1...SearchPlan.maximumRowid).contains(newest) else {
            return try rankAll()
        }
        let bound = SearchPlan.relevanceBound(idfs: counts.idfs)
        // The best `limit` of the rows ranked so far: rowids from `rankedFrom` up, and `movedRanked`. Each round ranks
        // only the rows it adds (a slice of older rowids), so a query that needs three windows scans the widest once.
        var ranked: [Ranked] = []
        var rankedFrom = newest + 1
        var movedRanked: Set<Int64> = []
        // The first window holds about firstWindowMatches matches (multiplePhraseMatches for several phrases): rowids
        // run in save order, so a share of the newest rowids holds about that share of the matches.
        let windowMatches = counts.hits.count > 1 ? SearchPlan.multiplePhraseMatches : SearchPlan.firstWindowMatches
        let firstRows = Int64(SearchPlan.clamped(Double(windowMatches) * Double(rows) / Double(max(fewest, 1))))
        var start = newest + 1 - min(newest, max(Int64(min(limit, SearchPlan.maximumCount)), firstRows))
        for _ in 0..<SearchPlan.maximumRounds {
            // The newest entry outside the window, and its save time: entries outside saved later (saved again,
            // keeping their rowid) are ranked with the window, so every entry left out was saved at or before it.
            guard start > 1,
                let outside = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT savedAt FROM activities_rank WHERE id < ? ORDER BY id DESC LIMIT 1"),
                    arguments: [start]
                ),
                let boundary: Double = try outside.checked("savedAt")
            else { break }
            let moved = try Int64.fetchAll(
                db.cachedStatement(sql: "SELECT id FROM activities WHERE savedAt > ? AND id < ? LIMIT ?"),
                arguments: [boundary, start, SearchPlan.maximumMoved + 1]
            ).filter { !movedRanked.contains($0) }
            guard moved.count <= SearchPlan.maximumMoved else { break }
            var found = try rank(match, in: .between(start, rankedFrom), limit: limit, plan: plan, counts: counts, db)
            if !moved.isEmpty {
                found += try rank(match, in: .ids(moved), limit: limit, plan: plan, counts: counts, db)
                movedRanked.formUnion(moved)
            }
            rankedFrom = start
            // A moved entry ranked in an earlier round may be in this round's slice too: keep it once.
            var seen: Set<Int64> = []
            ranked = (ranked + found)
                .sorted { $0.ordering < $1.ordering || ($0.ordering == $1.ordering && $0.id > $1.id) }
                .filter { seen.insert($0.id).inserted }
            ranked = Array(ranked.prefix(limit))
            var next: Int64
            if ranked.count >= limit, let last = ranked.last {
                // Several phrases: the window holding about multiplePhraseMatches matches is the answer.
                if counts.hits.count > 1 { return ranked }
                switch plan.oldestThatCannotBeat(score: -last.ordering, bound: bound) {
                case .all:
                    return ranked
                case .none:
                    // The last result is so weak that even the oldest entry could pass it: a wider window has better.
                    next = start - 3 * (newest + 1 - start)
                case .savedAtOrBefore(let time):
                    if boundary <= time { return ranked }
                    // Reach back to the entries saved at `time`: start after the newest entry saved by then.
                    guard let before = try Int64.fetchOne(
                        db.cachedStatement(sql: "SELECT id FROM activities WHERE savedAt <= ? ORDER BY savedAt DESC, id DESC LIMIT 1"),
                        arguments: [time]
                    ) else {
                        return try rankAll()
                    }
                    next = before + 1
                }
            } else {
                // Fewer than asked for: the matches are rarer here than the counts said; a window four times as wide.
                next = start - 3 * (newest + 1 - start)
            }
            start = min(next, start - 1)
        }
        return try rankAll()
    }

    /// The best `limit` matches of `match` among `rows`, by ``RankFunction`` (bm25 with the counted idfs, times
    /// recency) with the save time and expiry from the small activities_rank table. The ordering is negative (more
    /// negative is better) and recency shrinks it towards 0 with age, so ascending order is best first.
    static func rank(
        _ match: String,
        in rows: Rows,
        limit: Int,
        plan: SearchPlan,
        counts: Counts,
        _ db: Database
    ) throws -> [Ranked] {
        let ranking = plan.ranking
        let idfs = counts.idfs
        var arguments: StatementArguments = [
            plan.now, ranking.recencyShare, ranking.recencyHalfLife,
            ranking.titleWeight, ranking.keywordsWeight, ranking.descriptionWeight,
        ]
        arguments += StatementArguments(idfs)
        arguments += [match, plan.now]
        let range: String
        switch rows {
        case .all:
            range = ""
        case .between(let start, let end):
            range = "AND activities_fts.rowid >= ? AND activities_fts.rowid < ?"
            arguments += [start, end]
        case .ids(let ids):
            range = "AND activities_fts.rowid IN (SELECT value FROM json_each(?))"
            arguments += ["[" + ids.map(String.init).joined(separator: ",") + "]"]
        }
        arguments += [limit]
        let idfMarks = String(repeating: ", ?", count: idfs.count)
        let sql = """
            SELECT activities_fts.rowid AS id,
                \(RankFunction.name)(activities_fts, r.savedAt, ?, ?, ?, ?, ?, ?\(idfMarks)) AS ordering
            FROM activities_fts JOIN activities_rank AS r ON r.id = activities_fts.rowid
            WHERE activities_fts MATCH ? AND (r.expirationDate IS NULL OR r.expirationDate > ?) \(range)
            ORDER BY ordering, id DESC
            LIMIT ?
            """
        return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map { row in
            Ranked(id: try row.required("id"), ordering: try row.checked("ordering") ?? 0)
        }
    }

    /// The results for `ranked`, in its order: the entries read (for these rows only) and their words marked in Swift
    /// (TextMarker: the index's word rules).
    static func results(_ ranked: [Ranked], marker: TextMarker, limits: SearchLimits, _ db: Database) throws -> [SearchResult] {
        guard !ranked.isEmpty else { return [] }
        let list = Array(repeating: "?", count: ranked.count).joined(separator: ", ")
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT \(StoredRow.columns(limits)) FROM activities WHERE id IN (\(list))"),
            arguments: StatementArguments(ranked.map(\.id))
        )
        var byID: [Int64: Row] = [:]
        for row in rows { byID[try row.required("id")] = row }
        return try ranked.compactMap { ranked -> SearchResult? in
            guard let row = byID[ranked.id] else { return nil }
            let entry = try StoredRow.entry(from: row, limits: limits, db)
            return SearchResult(
                id: ranked.id,
                entry: entry,
                savedAt: Date(timeIntervalSince1970: try row.checked("savedAt") ?? 0),
                title: marker.highlight(entry.title),
                snippet: marker.snippet(entry.contentDescription ?? ""),
                score: -ranked.ordering
            )
        }
    }
}
