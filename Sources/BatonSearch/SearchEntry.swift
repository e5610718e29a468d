import Foundation

/// One activity as the index keeps it (SEMANTICS G1): what search matches (title, keywords, description), what a
/// result shows, and the payload to continue from (G2).
public struct SearchEntry: Sendable, Hashable {
    /// The app's own identifier for this activity (G3). Saving an entry with the same identifier replaces the earlier
    /// one; entries without one are never replaced, only aged out.
    public var persistentIdentifier: String?
    /// The app that saved it, and that a result would open.
    public var bundleIdentifier: String
    public var activityType: String
    public var title: String
    /// Matched like the title. Kept sorted, one per line (a newline inside a keyword becomes a space).
    public var keywords: [String]
    /// `contentAttributeSet`'s content description.
    public var contentDescription: String?
    /// `contentAttributeSet`'s content type (a uniform type identifier such as `public.text`).
    public var contentType: String?
    /// `contentAttributeSet`'s thumbnail data, at most ``SearchLimits/maximumThumbnailBytes``.
    public var thumbnailData: Data?
    /// `contentAttributeSet`'s related unique identifier.
    public var relatedUniqueIdentifier: String?
    /// The activity's `webpageURL`, as text.
    public var webpageURL: String?
    /// After this the entry is never returned and is purged (G1).
    public var expirationDate: Date?
    /// The encoded activity (`ActivityPayload`'s wire form) to continue from, at most
    /// ``SearchLimits/maximumPayloadBytes``.
    public var payload: Data

    public init(
        persistentIdentifier: String? = nil,
        bundleIdentifier: String,
        activityType: String,
        title: String,
        keywords: [String] = [],
        contentDescription: String? = nil,
        contentType: String? = nil,
        thumbnailData: Data? = nil,
        relatedUniqueIdentifier: String? = nil,
        webpageURL: String? = nil,
        expirationDate: Date? = nil,
        payload: Data = Data()
    ) {
        self.persistentIdentifier = persistentIdentifier
        self.bundleIdentifier = bundleIdentifier
        self.activityType = activityType
        self.title = title
        self.keywords = keywords
        self.contentDescription = contentDescription
        self.contentType = contentType
        self.thumbnailData = thumbnailData
        self.relatedUniqueIdentifier = relatedUniqueIdentifier
        self.webpageURL = webpageURL
        self.expirationDate = expirationDate
        self.payload = payload
    }
}
