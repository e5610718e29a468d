import Foundation
import GRDB

extension SearchIndex {
    // MARK: Searching (G1)

    /// The entries matching `query`, best first: every word must match (the last also as a prefix while it is being
    /// typed, that is unless the text ends in whitespace), ranked by bm25 with the title and keywords above the
    /// description, and by recency (``ranking``). Expired entries are never returned.
    ///
    /// Any text is a valid query (``SearchQuery``): one without letters or digits returns no results, not an error.
    public func search(_ query: String, limit: Int = 20, now: Date = Date()) async throws -> [SearchResult] {
        let parsed = SearchQuery(query)
        guard limit > 0, let match = parsed.matchExpression else { return [] }
        let ranking = self.ranking
        let nowSeconds = now.timeIntervalSince1970
        // Two statements in one read, so one snapshot. First the ranking, over every match: bm25 and, from the small
        // activities_rank table, the save time and expiry; bm25 is negative (more negative is better) and the factor
        // shrinks it towards 0 with age, never below (1 - recencyShare) of itself, so ascending order is best first.
        // Then the entries kept; their words are marked in Swift (TextMarker), for these rows only (ARCHITECTURE,
        // "On-device search", Query cost).
        let rankingSQL = """
            SELECT activities_fts.rowid AS id,
                bm25(activities_fts, ?, ?, ?)
                    * ((1.0 - ?) + ? * ? / (? + max(0.0, ? - r.savedAt))) AS ordering
            FROM activities_fts JOIN activities_rank AS r ON r.id = activities_fts.rowid
            WHERE activities_fts MATCH ? AND (r.expirationDate IS NULL OR r.expirationDate > ?)
            ORDER BY ordering, id DESC
            LIMIT ?
            """
        let rankingArguments: StatementArguments = [
            ranking.titleWeight, ranking.keywordsWeight, ranking.descriptionWeight,
            ranking.recencyShare, ranking.recencyShare, ranking.recencyHalfLife, ranking.recencyHalfLife, nowSeconds,
            match, nowSeconds, limit,
        ]
        let marker = TextMarker(parsed)
        let limits = self.limits
        return try await read { db in
            let ranked = try Row.fetchAll(db.cachedStatement(sql: rankingSQL), arguments: rankingArguments)
                .map { row -> (id: Int64, ordering: Double) in (try row.required("id"), try row.checked("ordering") ?? 0) }
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
                    // Marked here, for these rows only (TextMarker: the index's word rules, in Swift).
                    title: marker.highlight(entry.title),
                    snippet: marker.snippet(entry.contentDescription ?? ""),
                    score: -ranked.ordering
                )
            }
        }
    }
}
