@testable import BatonSearch
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

/// Marks in a result's text, as the index matched (TextMarker; G1).
@Suite("TextMarker (G1)")
struct TextMarkerTests {
    @Test("G1: words are marked without case or diacritics; the last word as a prefix only while typed; text kept whole")
    func marksAsTheIndexMatches() {
        let typing = TextMarker(SearchQuery("cafe NOI"))
        #expect(typing.highlight("Café Noir, café noisette").rendered() == "[Café] [Noir], [café] [noisette]")
        let finished = TextMarker(SearchQuery("cafe noi "))
        #expect(finished.highlight("Café Noir").rendered() == "[Café] Noir")
        let text = "e\u{301}clair 👩‍👩‍👧 x\u{FE0F}y — déjà vu"
        #expect(TextMarker(SearchQuery("eclair deja")).highlight(text).plain == text, "every scalar kept")
        #expect(TextMarker(SearchQuery("eclair deja")).highlight(text).matches == ["e\u{301}clair", "déjà"])
        // Text before the first word is kept too (found by scripts/fuzz.sh search-query).
        #expect(TextMarker(SearchQuery("qu")).highlight("\u{0}\u{0}— quince").rendered() == "\u{0}\u{0}— [quince]")
    }

    @Test("G1: a snippet shows at most 16 words around the first match, with … where it was cut; none without a match")
    func snippets() {
        let words = (1...40).map { "w\($0)" }
        let text = words.joined(separator: " ")
        let snippet = TextMarker(SearchQuery("w20")).snippet(text)
        #expect(snippet.matches == ["w20"])
        #expect(snippet.rendered() == "…" + words[17..<33].map { $0 == "w20" ? "[w20]" : $0 }.joined(separator: " ") + "…")
        #expect(TextMarker(SearchQuery("w1 ")).snippet("w1 w2 w3").rendered() == "[w1] w2 w3")
        #expect(TextMarker(SearchQuery("absent")).snippet(text).runs.isEmpty)
    }
}
