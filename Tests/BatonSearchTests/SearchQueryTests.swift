import BatonSearch
import GRDB
import Testing

/// The query builder and the SQLite underneath (issue 15; SEMANTICS G1).
@Suite("SearchQuery (G1)")
struct SearchQueryTests {
    @Test("G1: words are quoted, operators are words, and only the last word is a prefix")
    func g1QuotedTerms() {
        #expect(SearchQuery("weekend groc").matchExpression == "\"weekend\" \"groc\"*")
        #expect(SearchQuery("NEAR(a b").matchExpression == "\"NEAR\" \"a\" \"b\"*")
        #expect(SearchQuery("\"quoted\" -minus title:x").matchExpression == "\"quoted\" \"minus\" \"title\" \"x\"*")
        #expect(SearchQuery("café").terms == ["café"])
        #expect(SearchQuery("e\u{301}te").terms == ["e\u{301}te"])
        #expect(SearchQuery("北京 大学").terms == ["北京", "大学"])
        #expect(SearchQuery("*?!()\"^-").matchExpression == nil)
        #expect(SearchQuery("").isEmpty)
    }

    @Test("G1: the last word is a prefix only while it is being typed: not once the text ends in whitespace")
    func g1PrefixOnlyWhileTyping() {
        #expect(SearchQuery("weekend groceries ").matchExpression == "\"weekend\" \"groceries\"")
        #expect(SearchQuery("weekend groceries\n").lastTermIsPrefix == false)
        #expect(SearchQuery("weekend groc").lastTermIsPrefix)
        #expect(SearchQuery("groc.").matchExpression == "\"groc\"*")
    }

    @Test("G1: a query is cut to its named limits: 16 words of at most 64 characters")
    func g1QueryLimits() {
        let many = SearchQuery((0..<100).map { "w\($0)" }.joined(separator: " "))
        #expect(many.terms.count == SearchQuery.maximumTerms)
        #expect(many.terms.last == "w15")
        let long = SearchQuery(String(repeating: "a", count: 10_000))
        #expect(long.terms == [String(repeating: "a", count: SearchQuery.maximumTermLength)])
    }

    @Test("The system SQLite that GRDB links has FTS5, with unicode61 diacritics removal and prefix indexes")
    func fts5IsAvailable() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: """
                CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3');
                INSERT INTO t(body) VALUES ('Crème brûlée');
                """)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t WHERE t MATCH 'creme brul*'") == 1)
            let options = try String.fetchAll(db, sql: "PRAGMA compile_options")
            #expect(options.contains("ENABLE_FTS5"))
        }
    }
}
