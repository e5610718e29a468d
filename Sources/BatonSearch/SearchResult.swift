import Foundation

/// One match of ``SearchIndex/search(_:limit:now:)``, best first.
public struct SearchResult: Sendable, Hashable {
    /// The entry's row in the index: what `baton search --continue ID` will name. Stable while the entry lives
    /// (a save with the same persistent identifier keeps it).
    public var id: Int64
    public var entry: SearchEntry
    /// When the entry was last saved.
    public var savedAt: Date
    /// The title with the words that matched marked.
    public var title: MarkedText
    /// A short part of the description around what matched, marked; empty when the entry has no description.
    public var snippet: MarkedText
    /// Higher is better: bm25 relevance (title and keywords weighted above description) scaled by recency.
    public var score: Double
}

/// Text with some runs marked as matching the query, as FTS5's `highlight()` and `snippet()` found them.
public struct MarkedText: Sendable, Hashable, CustomStringConvertible {
    /// One run of text, marked or not.
    public struct Run: Sendable, Hashable {
        public var text: String
        public var isMatch: Bool

        public init(_ text: String, isMatch: Bool) {
            self.text = text
            self.isMatch = isMatch
        }
    }

    public var runs: [Run]

    public init(runs: [Run]) { self.runs = runs }

    /// The text without marks.
    public var plain: String { runs.map(\.text).joined() }

    /// The matched words alone, in order.
    public var matches: [String] { runs.filter(\.isMatch).map(\.text) }

    /// The text with each match between `open` and `close` (`[`, `]` by default; ANSI bold for a terminal).
    public func rendered(open: String = "[", close: String = "]") -> String {
        runs.map { $0.isMatch ? open + $0.text + close : $0.text }.joined()
    }

    public var description: String { rendered() }

    /// FTS5 marks matches with these two private-use characters (``SearchIndex`` removes them from what it saves, so
    /// they can only be marks).
    static let openMark: Character = "\u{E000}"
    static let closeMark: Character = "\u{E001}"

    /// Splits FTS5 output marked with ``openMark`` and ``closeMark`` into runs. Unbalanced or empty marks cannot come
    /// from FTS5, but are read leniently: a close without an open is dropped, and unmarked text around an empty match
    /// stays one run (`scripts/fuzz.sh search-query` found both). Two matches may touch; each stays its own run.
    init(marked: String) {
        var runs: [Run] = []
        var current = ""
        var inMatch = false
        func finish() {
            guard !current.isEmpty else { return }
            if !inMatch, let last = runs.last, !last.isMatch {
                runs[runs.count - 1].text += current
            } else {
                runs.append(Run(current, isMatch: inMatch))
            }
            current = ""
        }
        // Scalars, not characters: a mark before a combining mark (a word may start with one) would otherwise be
        // one character with it, and stay in the text (found by the fuzzer).
        // The text between marks is taken as slices, not scalar by scalar: a search makes forty of these.
        let open = Self.openMark.unicodeScalars.first
        let close = Self.closeMark.unicodeScalars.first
        let scalars = marked.unicodeScalars
        var start = scalars.startIndex
        for index in scalars.indices {
            let scalar = scalars[index]
            guard scalar == open || scalar == close else { continue }
            current += String(scalars[start..<index])
            start = scalars.index(after: index)
            let opening = scalar == open
            if opening != inMatch {
                finish()
                inMatch = opening
            }
        }
        current += String(scalars[start...])
        finish()
        self.runs = runs
    }
}
