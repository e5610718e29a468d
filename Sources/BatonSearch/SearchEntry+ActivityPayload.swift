import BatonCore
import Foundation

extension SearchEntry {
    /// The entry that indexes `activity` for `bundleIdentifier`'s app (SEMANTICS G1): its title (or the attribute
    /// set's title or display name), its keywords with the attribute set's, the content attributes (description,
    /// content type, thumbnail data, related unique identifier), `webpageURL`, the expiration date, the persistent
    /// identifier, and the encoded payload to continue from (G2).
    ///
    /// The caller decides whether the activity belongs in the index (`isEligibleForSearch`, this device's own apps);
    /// `isEligibleForPublicIndexing` has no effect here.
    /// - Throws: ``BatonCoreError`` from `ActivityPayload.encoded()` (`payloadTooLarge`, `missingRequiredUserInfoKey`).
    public init(activity: ActivityPayload, bundleIdentifier: String) throws {
        let attributes = activity.contentAttributeSet ?? [:]
        let attributeKeywords = attributes["keywords"]?.arrayValue?.compactMap(\.stringValue) ?? []
        self.init(
            persistentIdentifier: activity.persistentIdentifier,
            bundleIdentifier: bundleIdentifier,
            activityType: activity.activityType,
            title: activity.title ?? attributes["title"]?.stringValue ?? attributes["displayName"]?.stringValue ?? "",
            keywords: activity.keywords.union(attributeKeywords).sorted(),
            contentDescription: attributes["contentDescription"]?.stringValue,
            contentType: attributes["contentType"]?.stringValue,
            thumbnailData: attributes["thumbnailData"]?.dataValue,
            relatedUniqueIdentifier: attributes["relatedUniqueIdentifier"]?.stringValue,
            webpageURL: activity.webpageURL?.absoluteString,
            expirationDate: activity.expirationDate,
            payload: try activity.encoded()
        )
    }
}
