import Foundation

/// Marks the words of a result's text that a query matched (issue 15; SEMANTICS G1), as the index matched them:
/// words split as ``SearchQuery`` and FTS5's unicode61 split them (letters, digits, combining marks), compared without
/// case or diacritics (`remove_diacritics 2`), the last query word also as a prefix while it is being typed.
///
/// It runs on the few rows a search returns, in Swift, so a search pays nothing per match for its marks (FTS5's
/// `highlight()` and `snippet()` are computed for every row a statement produces, before `LIMIT`).
struct TextMarker {
    /// The query's words, folded, and whether each also matches as a prefix.
    private let terms: [(word: String, isPrefix: Bool)]

    /// Words around the first match a snippet shows, at most (FTS5's `snippet()` was given 16).
    static let snippetWords = 16

    init(_ query: SearchQuery) {
        terms = query.terms.enumerated().map { index, term in
            (Self.folded(term), query.lastTermIsPrefix && index == query.terms.count - 1)
        }
    }

    /// `text` with every matching word marked.
    func highlight(_ text: String) -> MarkedText {
        marked(text, words: Self.words(in: text), from: text.startIndex, to: text.endIndex)
    }

    /// A part of `text` around its first matching word, at most ``snippetWords`` words, with `…` where it was cut;
    /// empty when nothing in it matches.
    func snippet(_ text: String) -> MarkedText {
        let words = Self.words(in: text)
        guard let first = words.firstIndex(where: matches) else { return MarkedText(runs: []) }
        let start = max(0, min(first - 2, words.count - Self.snippetWords))
        let end = min(words.count, start + Self.snippetWords)
        let shown = Array(words[start..<end])
        guard let from = shown.first?.range.lowerBound, let to = shown.last?.range.upperBound else { return MarkedText(runs: []) }
        var runs = marked(text, words: shown, from: from, to: to).runs
        if start > 0 { runs.insert(MarkedText.Run("…", isMatch: false), at: 0) }
        if end < words.count { runs.append(MarkedText.Run("…", isMatch: false)) }
        return MarkedText(runs: runs)
    }

    /// The runs of `text[from..<to]`, the matching ones of `words` marked.
    private func marked(_ text: String, words: [Word], from: String.Index, to: String.Index) -> MarkedText {
        var runs: [MarkedText.Run] = []
        var position = from
        for word in words where matches(word) {
            if position < word.range.lowerBound { runs.append(MarkedText.Run(String(text.unicodeScalars[position..<word.range.lowerBound]), isMatch: false)) }
            runs.append(MarkedText.Run(String(text.unicodeScalars[word.range]), isMatch: true))
            position = word.range.upperBound
        }
        if position < to { runs.append(MarkedText.Run(String(text.unicodeScalars[position..<to]), isMatch: false)) }
        return MarkedText(runs: runs)
    }

    private func matches(_ word: Word) -> Bool {
        terms.contains { term in term.isPrefix ? word.folded.hasPrefix(term.word) : word.folded == term.word }
    }

    /// One word of a text: where it is, and its folded form.
    struct Word {
        var range: Range<String.Index>
        var folded: String
    }

    /// The words of `text`, as the index's tokenizer splits it.
    static func words(in text: String) -> [Word] {
        var words: [Word] = []
        var start: String.Index?
        var index = text.unicodeScalars.startIndex
        let scalars = text.unicodeScalars
        while index < scalars.endIndex {
            let isWord = SearchQuery.isWordScalar(scalars[index])
            if isWord, start == nil { start = index }
            if !isWord, let begun = start {
                words.append(Word(range: begun..<index, folded: folded(String(text.unicodeScalars[begun..<index]))))
                start = nil
            }
            index = scalars.index(after: index)
        }
        if let begun = start {
            words.append(Word(range: begun..<scalars.endIndex, folded: folded(String(text.unicodeScalars[begun..<scalars.endIndex]))))
        }
        return words
    }

    /// Lower case without diacritics, as `remove_diacritics` compares. ASCII words (most of them) take the short way:
    /// they have no diacritics, and Foundation's folding goes through ICU for every word.
    static func folded(_ word: String) -> String {
        if word.utf8.allSatisfy({ $0 < 0x80 }) { return word.lowercased() }
        return word.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }
}
