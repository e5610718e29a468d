/// How ``SearchIndex/search(_:limit:now:)`` orders matches (issue 15): bm25 relevance with the title and keywords
/// weighted above the description, scaled by how recently the entry was saved.
///
/// Recency can at most take away ``recencyShare`` of an entry's relevance (an old entry keeps `1 - recencyShare` of
/// it). FTS5's bm25 saturates term frequency (k1 = 1.2) and normalises by the whole row's length, so the weights count
/// for less than their ratio: at equal age a title match ranks above a keyword match above a description match, and a
/// month-old title match still above a fresh description match, but a fresh keyword match can pass an old title match.
public struct SearchRanking: Sendable, Hashable {
    /// bm25 weight of a match in the title.
    public var titleWeight: Double
    /// bm25 weight of a match in the keywords.
    public var keywordsWeight: Double
    /// bm25 weight of a match in the content description.
    public var descriptionWeight: Double
    /// After this many seconds an entry has lost half of ``recencyShare`` (a hyperbolic decay: it needs no SQLite math
    /// functions, which not every Linux build of SQLite has).
    public var recencyHalfLife: Double
    /// The most of an entry's relevance that age can take away, from 0 (recency ignored) to 1.
    public var recencyShare: Double

    public init(
        titleWeight: Double = 10,
        keywordsWeight: Double = 5,
        descriptionWeight: Double = 1,
        recencyHalfLife: Double = 7 * 24 * 3600,
        recencyShare: Double = 0.5
    ) {
        self.titleWeight = titleWeight
        self.keywordsWeight = keywordsWeight
        self.descriptionWeight = descriptionWeight
        self.recencyHalfLife = recencyHalfLife
        self.recencyShare = recencyShare
    }

    public static let `default` = SearchRanking()
}
