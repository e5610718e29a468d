import Foundation

/// Marks the words of a result's text that a query matched (issue 15; SEMANTICS G1), as the index matched them:
/// words split as ``SearchQuery`` and FTS5's unicode61 split them (letters, digits, combining marks), compared without
/// case or diacritics (`remove_diacritics 2`), the last query word also as a prefix while it is being typed.
///
/// It runs on the few rows a search returns, in Swift, so a search pays nothing per match for its marks (FTS5's
/// `highlight()` and `snippet()` are computed for every row a statement produces, before `LIMIT`). It reads the text's
/// UTF-8 bytes (issue 29): an ASCII word is compared byte by byte without being copied or folded; any other word is
/// folded by Foundation, only when some query word could match it; a snippet reads no further than it shows.
struct TextMarker {
    /// One query word, folded, whether it also matches as a prefix, and its bytes when the folded word is ASCII.
    private struct Term {
        var folded: String
        var isPrefix: Bool
        var ascii: [UInt8]?
    }

    private let terms: [Term]

    /// Words around the first match a snippet shows, at most (FTS5's `snippet()` was given 16).
    static let snippetWords = 16

    init(_ query: SearchQuery) {
        terms = query.terms.enumerated().map { index, term in
            let folded = Self.folded(term)
            return Term(
                folded: folded,
                isPrefix: query.lastTermIsPrefix && index == query.terms.count - 1,
                ascii: folded.utf8.allSatisfy { $0 < 0x80 } ? Array(folded.utf8) : nil
            )
        }
    }

    /// `text` with every matching word marked.
    func highlight(_ text: String) -> MarkedText {
        var contiguous = text
        return contiguous.withUTF8 { bytes in
            var words = WordReader(bytes)
            var matching: [Range<Int>] = []
            while let word = words.next() {
                if matches(word, in: bytes) { matching.append(word.range) }
            }
            // Not one word matched (most titles): the text is the one run, as it is.
            if matching.isEmpty { return MarkedText(runs: bytes.isEmpty ? [] : [MarkedText.Run(text, isMatch: false)]) }
            return MarkedText(runs: Self.runs(bytes, matching: matching, from: 0, to: bytes.count))
        }
    }

    /// A part of `text` around its first matching word, at most ``snippetWords`` words, with `…` where it was cut;
    /// empty when nothing in it matches.
    func snippet(_ text: String) -> MarkedText {
        var contiguous = text
        return contiguous.withUTF8 { bytes in
            var reader = WordReader(bytes)
            var words: [Word] = []
            var first: Int?
            // The snippet starts two words before the first match (fewer at the start; earlier when the text ends
            // within the window): once the window after it is complete and one more word is known to follow (for the
            // `…`), the rest of the text changes nothing.
            while first.map({ words.count <= max(0, $0 - 2) + Self.snippetWords }) ?? true, let word = reader.next() {
                if first == nil, matches(word, in: bytes) { first = words.count }
                words.append(word)
            }
            guard let first else { return MarkedText(runs: []) }
            let start = max(0, min(first - 2, words.count - Self.snippetWords))
            let end = min(words.count, start + Self.snippetWords)
            let shown = words[start..<end]
            guard let from = shown.first?.range.lowerBound, let to = shown.last?.range.upperBound else {
                return MarkedText(runs: [])
            }
            let matching = shown.indices.compactMap { index in
                index == first || (index > first && matches(words[index], in: bytes)) ? words[index].range : nil
            }
            var runs = Self.runs(bytes, matching: matching, from: from, to: to)
            if start > 0 { runs.insert(MarkedText.Run("…", isMatch: false), at: 0) }
            if end < words.count { runs.append(MarkedText.Run("…", isMatch: false)) }
            return MarkedText(runs: runs)
        }
    }

    /// The runs of `bytes[from..<to]`, the `matching` words (in order, within it) marked.
    private static func runs(_ bytes: UnsafeBufferPointer<UInt8>, matching: [Range<Int>], from: Int, to: Int) -> [MarkedText.Run] {
        var runs: [MarkedText.Run] = []
        var position = from
        for word in matching {
            if position < word.lowerBound {
                runs.append(MarkedText.Run(string(bytes, position..<word.lowerBound), isMatch: false))
            }
            runs.append(MarkedText.Run(string(bytes, word), isMatch: true))
            position = word.upperBound
        }
        if position < to { runs.append(MarkedText.Run(string(bytes, position..<to), isMatch: false)) }
        return runs
    }

    /// The text of whole scalars `bytes[range]` (the ranges here start and end between scalars).
    private static func string(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// Whether a query word matches `word`: as the index compares, `word` folded (``folded(_:)``) equal to it, or
    /// starting with it for a prefix.
    private func matches(_ word: Word, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var folded: String?
        for term in terms {
            if let ascii = term.ascii {
                if word.isASCII {
                    // Folded, an ASCII word is its bytes in lower case: `| 0x20` for its letters and digits.
                    let length = word.range.count
                    guard term.isPrefix ? length >= ascii.count : length == ascii.count else { continue }
                    var index = 0
                    while index < ascii.count, bytes[word.range.lowerBound + index] | 0x20 == ascii[index] { index += 1 }
                    if index == ascii.count { return true }
                    continue
                }
                // A word that starts with an ASCII letter or digit still starts with it when folded, in lower case
                // (marks after it go; its case folds alone): only a query word that starts with it can match.
                if let initial = ascii.first, bytes[word.range.lowerBound] < 0x80, bytes[word.range.lowerBound] | 0x20 != initial {
                    continue
                }
            }
            // Exactly as the index folds and compares; an ASCII word comes here only for a query word that does not
            // fold to ASCII.
            let wordFolded = folded ?? Self.folded(Self.string(bytes, word.range))
            folded = wordFolded
            if term.isPrefix ? wordFolded.hasPrefix(term.folded) : wordFolded == term.folded { return true }
        }
        return false
    }

    /// One word of a text: where its bytes are, and whether they are all ASCII.
    struct Word {
        var range: Range<Int>
        var isASCII: Bool
    }
    /// The words of UTF-8 text, as the index's tokenizer splits it: runs of ``SearchQuery/isWordScalar(_:)`` scalars.
    struct WordReader {
        private let bytes: UnsafeBufferPointer<UInt8>
        private var position = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func next() -> Word? {
            var start: Int?
            var isASCII = true
            while position < bytes.count {
                let (isWord, length) = Self.scalar(in: bytes, at: position)
                if isWord {
                    if start == nil { start = position }
                    if length > 1 { isASCII = false }
                } else if let start {
                    return Word(range: start..<position, isASCII: isASCII)
                }
                position += length
            }
            guard let start else { return nil }
            return Word(range: start..<position, isASCII: isASCII)
        }

        /// Whether the scalar at `index` (its first byte) is a word character, and its length in bytes. ASCII by
        /// ranges (its letters and digits are its only ones); any other by ``SearchQuery/isWordScalar(_:)``.
        private static func scalar(in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (isWord: Bool, length: Int) {
            let lead = bytes[index]
            if lead < 0x80 {
                let lower = lead | 0x20
                return ((lead >= 0x30 && lead <= 0x39) || (lower >= 0x61 && lower <= 0x7A), 1)
            }
            // The text is a String: valid UTF-8, whole scalars.
            let length = min(lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2, bytes.count - index)
            var value = UInt32(lead) & (lead >= 0xF0 ? 0x07 : lead >= 0xE0 ? 0x0F : 0x1F)
            for offset in 1..<length {
                value = value << 6 | UInt32(bytes[index + offset] & 0x3F)
            }
            guard let scalar = Unicode.Scalar(value) else { return (false, length) }
            return (SearchQuery.isWordScalar(scalar), length)
        }
    }

    /// Lower case without diacritics, as `remove_diacritics` compares. ASCII words (most of them) take the short way:
    /// they have no diacritics, and Foundation's folding goes through ICU for every word.
    static func folded(_ word: String) -> String {
        if word.utf8.allSatisfy({ $0 < 0x80 }) { return word.lowercased() }
        return word.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }
}
