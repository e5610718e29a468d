import GRDB
import GRDBSQLite

/// `baton_rank(activities_fts, savedAt, now, recencyShare, recencyHalfLife, titleWeight, keywordsWeight,
/// descriptionWeight, idf...)`: FTS5's bm25 times the recency factor, as the ranking SQL computed it with the built-in
/// `bm25()` (``SearchRanking``), with each phrase's idf passed in (issue 29; ``SearchPlan``).
///
/// The built-in function counts every row each phrase matches to find its idf, once per statement: as much work as
/// `count(*)`, and the planner has already counted (it needs the counts for its bound). A query ranking two windows
/// counted three times. Given the idf, a row costs what it costs bm25: its instances and its length. The result is
/// bm25's to the last bit where the idf is the same: `idf × f(k1 + 1) / (f + k1(1 − b + b·D/avgdl))` summed over the
/// phrases, negated (ascending is best first), times `(1 − share) + share·halfLife / (halfLife + age)`.
///
/// Registered on every connection of the index (``register(_:)``); used only in the index's own statements, never
/// by the file's schema. Arguments of the wrong kind are read as SQLite converts them, so a hostile file cannot make it
/// fail other than by returning an error.
enum RankFunction {
    static let name = "baton_rank"
    /// FTS5's bm25 constants (fts5_aux.c).
    static let k1 = SearchPlan.k1
    static let b = 0.75
    /// Arguments before the idfs.
    static let fixedArguments = 7

    /// Registers the function on `db`'s connection.
    static func register(_ db: Database) throws {
        // GRDB's FTS5.api stops the process when the SQLite it links has no FTS5; a search index is then an error.
        guard (try? db.makeStatement(sql: "SELECT fts5(?)")) != nil else {
            throw SearchError(.database, "The system SQLite has no FTS5, which Baton's search needs (Debian's libsqlite3 has it).")
        }
        let api = FTS5.api(db)
        guard let create = api.pointee.xCreateFunction else {
            throw SearchError(.database, "SQLite's FTS5 cannot take functions; Baton's search needs FTS5 of SQLite 3.9 or later.")
        }
        let code = name.withCString { create(UnsafeMutablePointer(mutating: api), $0, nil, rank, nil) }
        guard code == SQLITE_OK else {
            throw SearchError(.database, "Cannot register \(name) with FTS5 (SQLite code \(code)).")
        }
    }

    private static let rank: fts5_extension_function = { api, fts, context, count, values in
        guard let api, let fts, let values, Int(count) >= RankFunction.fixedArguments else {
            sqlite3_result_error(context, "baton_rank: wrong arguments", -1)
            return
        }
        let functions = api.pointee
        let phrases = Int(functions.xPhraseCount(fts))
        guard phrases == Int(count) - RankFunction.fixedArguments, phrases <= SearchQuery.maximumTerms else {
            sqlite3_result_error(context, "baton_rank: one idf per phrase", -1)
            return
        }
        func argument(_ index: Int) -> Double { sqlite3_value_double(values[index]) }
        let savedAt = argument(0)
        let now = argument(1)
        let share = argument(2)
        let halfLife = argument(3)
        let weights = (argument(4), argument(5), argument(6))

        var rows: sqlite3_int64 = 0
        var tokens: sqlite3_int64 = 0
        var rowTokens: Int32 = 0
        var instances: Int32 = 0
        guard functions.xRowCount(fts, &rows) == SQLITE_OK,
            functions.xColumnTotalSize(fts, -1, &tokens) == SQLITE_OK,
            functions.xColumnSize(fts, -1, &rowTokens) == SQLITE_OK,
            functions.xInstCount(fts, &instances) == SQLITE_OK
        else {
            sqlite3_result_error(context, "baton_rank: FTS5 failed", -1)
            return
        }
        let averageLength = rows > 0 ? Double(tokens) / Double(rows) : 1
        let lengthNorm = RankFunction.k1 * (1 - RankFunction.b + RankFunction.b * Double(rowTokens) / max(averageLength, 1e-9))
        var relevance = 0.0
        withUnsafeTemporaryAllocation(of: Double.self, capacity: max(phrases, 1)) { frequencies in
            frequencies.initialize(repeating: 0)
            for instance in 0..<instances {
                var phrase: Int32 = 0
                var column: Int32 = 0
                var offset: Int32 = 0
                guard functions.xInst(fts, instance, &phrase, &column, &offset) == SQLITE_OK,
                    (0..<phrases).contains(Int(phrase))
                else { continue }
                switch column {
                case 0: frequencies[Int(phrase)] += weights.0
                case 1: frequencies[Int(phrase)] += weights.1
                default: frequencies[Int(phrase)] += weights.2
                }
            }
            for phrase in 0..<phrases {
                let frequency = frequencies[phrase]
                let idf = argument(RankFunction.fixedArguments + phrase)
                relevance += idf * (frequency * (RankFunction.k1 + 1)) / (frequency + lengthNorm)
            }
        }
        let recency: Double
        if share > 0, halfLife > 0 {
            recency = (1 - share) + share * halfLife / (halfLife + max(0, now - savedAt))
        } else {
            recency = 1 - max(0, share)
        }
        sqlite3_result_double(context, -relevance * recency)
    }
}
