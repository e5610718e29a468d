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
    /// Higher is better: bm25 relevance (title and keywords weighted above description) scaled by recency. Compare it
    /// within one search's results: for a query of one word its idf, which scales every result alike, is left out.
    public var score: Double
}

/// Text with some runs marked as matching the query (``TextMarker`` marks them, by the index's own word rules).
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
}
