import BatonCore

/// The bounds of one search index (issue 15: "the index stays bounded"). Entries above a per-field limit are refused
/// with ``SearchError/Code/tooLarge``; when the whole index goes over ``maximumEntries`` or ``maximumBytes``, the
/// oldest saved entries leave first.
public struct SearchLimits: Sendable, Hashable {
    /// At most this many entries; the oldest (by when they were saved) are removed first. Large enough for months of
    /// ordinary use, small enough that a query stays well under a millisecond-scale budget.
    public var maximumEntries: Int
    /// At most this many bytes of entry data (text, thumbnails, payloads; SQLite's own overhead and the FTS index come
    /// on top, about the size of the text again). The oldest entries leave first.
    public var maximumBytes: Int
    /// A thumbnail (`contentAttributeSet` thumbnail data) above this is refused: a search result shows a small image,
    /// and a few large images would otherwise push everything else out of the byte cap.
    public var maximumThumbnailBytes: Int
    /// The payload to continue from: the same hard limit as a handoff payload (SEMANTICS A11).
    public var maximumPayloadBytes: Int
    /// The title, each keyword list and the description, each: text for people to read, not documents.
    public var maximumTextBytes: Int

    public init(
        maximumEntries: Int = 20_000,
        maximumBytes: Int = 256 << 20,
        maximumThumbnailBytes: Int = 256 << 10,
        maximumPayloadBytes: Int = ActivityPayload.maximumEncodedSize,
        maximumTextBytes: Int = 16 << 10
    ) {
        self.maximumEntries = maximumEntries
        self.maximumBytes = maximumBytes
        self.maximumThumbnailBytes = maximumThumbnailBytes
        self.maximumPayloadBytes = maximumPayloadBytes
        self.maximumTextBytes = maximumTextBytes
    }

    /// The limits an agent uses unless told otherwise.
    public static let `default` = SearchLimits()
}
