@testable import BatonSearch
import Foundation
import Testing

/// What TextMarker's byte-level reading (issue 29: ASCII words compared as bytes, other words folded only when they
/// could match, a snippet read no further than it shows) must keep of the index's word rules (SEMANTICS G1).
@Suite("TextMarker's fast path (G1, issue 29)")
struct TextMarkerFastPathTests {
    private func marked(_ query: String, _ text: String) -> String {
        TextMarker(SearchQuery(query)).highlight(text).rendered()
    }

    private func snippet(_ query: String, _ text: String) -> String {
        TextMarker(SearchQuery(query)).snippet(text).rendered()
    }

    @Test("G1: ASCII and accented spellings match each other, in any case, composed or not")
    func accentedAndASCII() {
        let text = "café CAFÉ Cafe cafe\u{301} CAFE\u{301} cafés"
        #expect(marked("cafe ", text) == "[café] [CAFÉ] [Cafe] [cafe\u{301}] [CAFE\u{301}] cafés")
        #expect(marked("CAFÉ ", text) == "[café] [CAFÉ] [Cafe] [cafe\u{301}] [CAFE\u{301}] cafés")
        #expect(marked("cafe\u{301} ", text) == "[café] [CAFÉ] [Cafe] [cafe\u{301}] [CAFE\u{301}] cafés")
        #expect(marked("caf", text) == "[café] [CAFÉ] [Cafe] [cafe\u{301}] [CAFE\u{301}] [cafés]")
        // A word that starts with ASCII and goes on accented is matched whole, and only from its first letter.
        #expect(marked("ecole ", "e\u{301}cole École ecole xe\u{301}cole") == "[e\u{301}cole] [École] [ecole] xe\u{301}cole")
        #expect(marked("naive ", "nai\u{308}ve NAÏVE naiveté") == "[nai\u{308}ve] [NAÏVE] naiveté")
        // Query words that do not fold to ASCII: compared as folded, never with ASCII look-alikes.
        #expect(marked("ΣΟΦΙΑ ", "Σοφία σοφια sofia") == "[Σοφία] [σοφια] sofia")
        #expect(marked("日本", "日本語 東京 日本") == "[日本語] 東京 [日本]")
        #expect(marked("ωmega ", "omega ωMEGA") == "omega [ωMEGA]")
    }

    @Test("G1: only the last word, while typed, matches as a prefix; a longer or shorter word does not match whole")
    func prefixes() {
        let text = "Groceries GROCERY agro gro listing list"
        #expect(marked("gro", text) == "[Groceries] [GROCERY] agro [gro] listing list")
        #expect(marked("gro ", text) == "Groceries GROCERY agro [gro] listing list")
        #expect(marked("gro list", text) == "Groceries GROCERY agro [gro] [listing] [list]")
        #expect(marked("list gro ", text) == "Groceries GROCERY agro [gro] listing [list]")
        #expect(marked("groceriesx", text) == text)
    }

    @Test("G1: digits are word characters; punctuation, including _ and ', splits words")
    func digitsAndSeparators() {
        #expect(marked("2024 ", "2024 20245 v2024 2024.") == "[2024] 20245 v2024 [2024].")
        #expect(marked("20", "2024 1920") == "[2024] 1920")
        #expect(marked("v2 ", "V2 v2x") == "[V2] v2x")
        #expect(marked("def ", "abc_def it's o'def x-def") == "abc_[def] it's o'[def] x-[def]")
        #expect(marked("s ", "it's") == "it'[s]")
        // Digits of other scripts are word characters too.
        #expect(marked("١٢ ", "١٢ ١٢٣") == "[١٢] ١٢٣")
    }

    @Test("G1: combining marks are word characters, even alone or after punctuation; every scalar of the text is kept")
    func combiningMarks() {
        let text = "e\u{301}clair, \u{301}x, -\u{308}-, x\u{20DD}y 👩‍👩‍👧 a\u{FE0F}b"
        #expect(TextMarker(SearchQuery("eclair x xy ab")).highlight(text).plain == text)
        #expect(marked("eclair ", text) == "[e\u{301}clair], \u{301}x, -\u{308}-, x\u{20DD}y 👩‍👩‍👧 a\u{FE0F}b")
        // A mark after punctuation starts a word: the x after it is not a word of its own.
        #expect(!marked("x ", text).contains("[x]"))
        #expect(marked("ab ", text).hasSuffix("[a\u{FE0F}b]"))
    }

    @Test("G1: a snippet at the start, middle and end of a long description, with … only where it was cut")
    func snippetPositions() {
        let words = (0..<40).map { "w\($0)" }
        let text = words.joined(separator: ", ") + "."
        func expected(_ range: Range<Int>, match: Int, before: Bool, after: Bool) -> String {
            (before ? "…" : "") + words[range].map { $0 == "w\(match)" ? "[\($0)]" : $0 }.joined(separator: ", ")
                + (after ? "…" : "")
        }
        #expect(snippet("w0 ", text) == expected(0..<16, match: 0, before: false, after: true))
        #expect(snippet("w1 ", text) == expected(0..<16, match: 1, before: false, after: true))
        #expect(snippet("w2 ", text) == expected(0..<16, match: 2, before: false, after: true))
        #expect(snippet("w3 ", text) == expected(1..<17, match: 3, before: true, after: true))
        #expect(snippet("w22 ", text) == expected(20..<36, match: 22, before: true, after: true))
        #expect(snippet("w25 ", text) == expected(23..<39, match: 25, before: true, after: true))
        #expect(snippet("w26 ", text) == expected(24..<40, match: 26, before: true, after: false))
        #expect(snippet("w39 ", text) == expected(24..<40, match: 39, before: true, after: false), "no final '.': it is not a word")
        // Later matches inside the window are marked; past it, they are not read.
        #expect(TextMarker(SearchQuery("w5 w30 ")).snippet(text).matches == ["w5"])
        let twice = (words[0..<10] + ["café"] + words[10..<40] + ["CAFE"]).joined(separator: " ")
        #expect(TextMarker(SearchQuery("cafe ")).snippet(twice).rendered().hasPrefix("…w8 w9 [café] w10"))
        #expect(TextMarker(SearchQuery("w9 cafe ")).snippet(twice).matches == ["w9", "café"])
    }

    @Test("G1: a snippet of exactly 16 or 17 words, and of fewer")
    func snippetLengths() {
        let sixteen = (0..<16).map { "w\($0)" }.joined(separator: " ")
        #expect(snippet("w15 ", sixteen) == sixteen.replacingOccurrences(of: "w15", with: "[w15]"))
        #expect(snippet("w0 ", sixteen + " w16") == "[w0] " + sixteen.dropFirst(3) + "…")
        #expect(snippet("w16 ", sixteen + " w16") == "…" + sixteen.dropFirst(3) + " [w16]")
        #expect(snippet("b ", "  a b c  ") == "a [b] c")
    }

    @Test("G1: empty text, text without words, and a query without words mark nothing")
    func empty() {
        let marker = TextMarker(SearchQuery("cafe"))
        #expect(marker.highlight("").runs.isEmpty)
        #expect(marker.snippet("").runs.isEmpty)
        #expect(marker.highlight("— … !").runs == [MarkedText.Run("— … !", isMatch: false)])
        #expect(marker.snippet("— … !").runs.isEmpty)
        let none = TextMarker(SearchQuery("— !"))
        #expect(none.highlight("café noir").runs == [MarkedText.Run("café noir", isMatch: false)])
        #expect(none.snippet("café noir").runs.isEmpty)
    }
}
