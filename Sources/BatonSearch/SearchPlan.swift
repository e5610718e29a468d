import Foundation

/// How ``SearchIndex/search(_:limit:now:strategy:)`` decides how much of the index to rank (issue 29; SEMANTICS G1).
///
/// FTS5 scores every match with bm25 before `LIMIT` applies (1–2 µs a match), so ranking all of a word found in 15%
/// of 100,000 entries costs 15 ms however few results are shown. Rowids are given in save order, so the most recent
/// entries are a rowid range FTS5 seeks to. A query whose matches are few is ranked whole; one whose matches are many
/// is ranked within the most recent window, and the window is widened until no entry outside it could score above
/// the last result kept. That is decided by a bound, not a guess, so for one word the planned results are the exact
/// ranking's (several words: ``multiplePhraseMatches``):
///
/// - **Relevance is bounded.** FTS5's bm25 adds, for each phrase, `idf × f(k1 + 1) / (f + k1(1 − b + b·D/avgdl))`,
///   where `f` is the phrase's weighted count in the row; the fraction is below `k1 + 1` whatever `f` and the row's
///   length `D`, so a row's relevance is below `Σ idf × (k1 + 1)` (``relevanceBound(idfs:)``), with `idf` from how
///   many rows match each phrase, exactly as FTS5 computes it (or 1 for a query of one phrase, which scales every
///   score alike).
/// - **Recency only shrinks it** (``SearchRanking``): the factor falls with age, from 1 to `1 − recencyShare`.
/// - So an entry saved at or before `T` scores at most `bound × recency(T)`. When the `limit`-th result inside the
///   window scores at least that, with `T` the save time of the newest entry outside the window, none outside can
///   displace a result (``oldestThatCannotBeat(score:bound:)`` finds that `T`).
///
/// The bound is loose for a description match (a word once in a long description scores about half of it), so an
/// old entry that matches in its title can still pass recent description matches, and the window is widened until
/// it is in (`g1OldTitleMatchBeatsRecentDescriptions`). Pure: numbers in, numbers out.
struct SearchPlan: Sendable {
    /// At most this many matches of the rarest phrase are ranked whole: about 1 ms of bm25 at the costs measured.
    static let rankAllMatches = 500
    /// The first window is sized to hold about this many matches (from the rarest phrase's share of the index).
    static let firstWindowMatches = 300
    /// A one-word query's matches are estimated from this many of the newest rowids (``SearchIndex/counts(of:_:)``).
    static let sampleRows = 4_096
    /// A phrase the sample holds fewer matches of is counted whole (a rare phrase: cheap, and poorly estimated).
    static let minimumSampledHits = 32
    /// A phrase the sample finds in this share of its rows or more is counted whole (its idf is near 0 near half the
    /// rows, where an estimate's error changes the ranking).
    static let maximumSampledShare = 0.2
    /// A query of several phrases is ranked within the newest window holding about this many of its matches (from
    /// the sample's density), widened only when it holds fewer results than asked for: the rule, because
    /// their bound, the sum of each phrase's, is one only an entry with every word in its title comes near, and
    /// would have the most relevant old entry of two common words rank most of the index (measured: three rounds,
    /// 5.3 ms for "weekend groceries"). recall@10 measures what it costs.
    static let multiplePhraseMatches = 300
    /// After this many windows the whole index is ranked.
    static let maximumRounds = 4
    /// Entries outside the window saved again after its oldest entry (a save that replaces keeps the old rowid) are
    /// ranked one by one beside the window, up to this many; above it the whole index is ranked.
    static let maximumMoved = 64
    /// The largest count or row total the plan computes with (the file's totals are not trusted: ``clamped(_:)``).
    static let maximumCount = 1 << 40
    /// Above this rowid the index is ranked whole: the windows' arithmetic (up to four times a window below its start)
    /// stays far from overflow.
    static let maximumRowid = Int64(1) << 60

    /// `value` as a count within 0...``maximumCount``: NaN and negatives are 0.
    static func clamped(_ value: Double) -> Int {
        guard value.isFinite, value > 0 else { return 0 }
        return value >= Double(maximumCount) ? maximumCount : Int(value)
    }

    /// `value` within 0...``maximumCount``.
    static func clamped(_ value: Int) -> Int { min(max(value, 0), maximumCount) }

    /// FTS5's bm25 constants (fts5_aux.c).
    static let k1 = 1.2
    /// A margin on the bound, for the row count and floating point sums FTS5 does in its own order.
    static let boundMargin = 1.01

    let ranking: SearchRanking
    /// Seconds since 1970.
    let now: Double

    /// FTS5's idf for a phrase matching `hits` of `rows` rows: `log((rows − hits + 0.5) / (hits + 0.5))`, never
    /// below 1e-6 (a phrase in most rows still counts a little).
    static func idf(hits: Int, rows: Int) -> Double {
        let value = log((Double(rows) - Double(hits) + 0.5) / (Double(hits) + 0.5))
        return value > 1e-6 ? value : 1e-6
    }

    /// Above any row's bm25 relevance for phrases ranked with these idfs.
    static func relevanceBound(idfs: [Double]) -> Double {
        idfs.reduce(0) { $0 + $1 * (k1 + 1) } * boundMargin
    }

    /// The recency factor of an entry saved at `savedAt`, as the ranking SQL computes it.
    func recency(savedAt: Double) -> Double {
        let share = ranking.recencyShare
        let halfLife = ranking.recencyHalfLife
        guard share > 0, halfLife > 0 else { return 1 - max(0, share) }
        return (1 - share) + share * halfLife / (halfLife + max(0, now - savedAt))
    }

    /// What bounds the entries outside a window.
    enum Exclusion: Equatable {
        /// Every entry, however recent, scores at most `score`.
        case all
        /// Entries saved at or before this time score at most `score`.
        case savedAtOrBefore(Double)
        /// Even the oldest entry could score above `score`: nothing can be left unranked.
        case none
    }

    /// Which entries cannot score above `score` (a result's, positive, higher is better) when relevance is below
    /// `bound`: those whose recency factor is at most `score / bound`.
    func oldestThatCannotBeat(score: Double, bound: Double) -> Exclusion {
        guard bound > 0 else { return .all }
        let ratio = score / bound
        if ratio >= 1 { return .all }
        let share = ranking.recencyShare
        let halfLife = ranking.recencyHalfLife
        guard share > 0, halfLife > 0, ratio > 1 - share else { return .none }
        // (1 − s) + s·h / (h + age) ≤ ratio  ⇔  age ≥ s·h / (ratio − 1 + s) − h
        let age = max(0, share * halfLife / (ratio - 1 + share) - halfLife)
        return .savedAtOrBefore(now - age)
    }
}

/// How ``SearchIndex/search(_:limit:now:strategy:)`` ranks.
public enum SearchStrategy: Sendable, Hashable {
    /// Rank the few matches whole, or the many within the most recent window that provably holds the best (issue 29).
    case planned
    /// Rank every match: what the planned results are measured against (`baton bench search`, recall@10).
    case exhaustive
}
