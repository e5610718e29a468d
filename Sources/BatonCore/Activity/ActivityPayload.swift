#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The state of one activity as it crosses from the originating device to the continuing one.
///
/// This is the value, not the live object: the app library's `UserActivity` builds one when the agent asks for
/// fresh state, and the continuing side rebuilds its `UserActivity` from one. Validation happens where values are
/// set (the activity type in `init`, the webpage URL in ``setWebpageURL(_:)``) and when encoding (required keys, the
/// hard size limit), so an app learns of a mistake on its own device, not as a silent failure on another.
public struct ActivityPayload: Sendable, Hashable {
    /// The payload format this build writes, and the newest it reads (SEMANTICS H1).
    public static let currentVersion = 1
    /// The hard limit on an encoded payload, in bytes (SEMANTICS A11). Above it ``encoded()`` throws
    /// `payloadTooLarge`, and a receiver refuses the payload. Bulk data belongs in continuation streams (H3).
    public static let maximumEncodedSize = 1 << 20
    /// The size Apple's guide advises `userInfo` stay under, in bytes. Larger works, but takes longer to hand off.
    public static let advisedUserInfoSize = 3 * 1024
    /// The longest activity type accepted, in UTF-8 bytes.
    public static let maximumActivityTypeLength = 256

    /// The activity type, fixed at creation (SEMANTICS A1). Reverse-DNS by convention (`com.example.app.editing`).
    public let activityType: String
    /// A short title, shown to the person on other devices.
    public var title: String?
    /// The app's state (SEMANTICS A2, A3). Values are property lists by construction.
    public var userInfo: [String: PropertyList]
    /// The web page equivalent of the activity: http or https only (SEMANTICS A5, E1).
    public private(set) var webpageURL: URL?
    /// When set, only these `userInfo` keys travel, and each must be present (SEMANTICS A10).
    public var requiredUserInfoKeys: Set<String>?
    /// Words for the on-device search index (SEMANTICS A10, G1).
    public var keywords: Set<String>
    /// Whether the activity may be handed to another device.
    public var isEligibleForHandoff: Bool
    /// Whether the activity may be kept in the on-device search index (SEMANTICS G1).
    public var isEligibleForSearch: Bool
    /// Whether the activity's content may be indexed publicly. Kept for compatibility; Baton indexes on-device only.
    public var isEligibleForPublicIndexing: Bool
    /// After this date the activity is neither handed off nor indexed (SEMANTICS A10).
    public var expirationDate: Date?
    /// An identifier the app chooses, for deleting saved activities (SEMANTICS G3).
    public var persistentIdentifier: String?
    /// Which content the activity shows, for routing to a matching window or scene.
    public var targetContentIdentifier: String?
    /// The page that led to this activity's content.
    public var referrerURL: URL?
    /// Rich search attributes (title, description, thumbnail data, ...).
    public var contentAttributeSet: [String: PropertyList]?
    /// Whether the continuing app may open streams back to the originating app (SEMANTICS F1).
    public var supportsContinuationStreams: Bool
    /// The payload format version this value was decoded from, or ``currentVersion`` for a new one.
    public internal(set) var version: Int

    /// A new payload of the given type with empty state.
    /// - Throws: ``BatonCoreError`` `invalidActivityType` when the type is empty, longer than
    ///   ``maximumActivityTypeLength`` bytes, or holds control characters.
    public init(activityType: String) throws {
        try Self.validateActivityType(activityType)
        self.activityType = activityType
        title = nil
        userInfo = [:]
        webpageURL = nil
        requiredUserInfoKeys = nil
        keywords = []
        isEligibleForHandoff = true
        isEligibleForSearch = false
        isEligibleForPublicIndexing = false
        expirationDate = nil
        persistentIdentifier = nil
        targetContentIdentifier = nil
        referrerURL = nil
        contentAttributeSet = nil
        supportsContinuationStreams = false
        version = Self.currentVersion
    }

    /// Checks an activity type against SEMANTICS A1's rules without making a payload.
    public static func validateActivityType(_ type: String) throws {
        guard !type.isEmpty else {
            throw BatonCoreError(.invalidActivityType, "the activity type is empty")
        }
        guard type.utf8.count <= maximumActivityTypeLength else {
            throw BatonCoreError(
                .invalidActivityType,
                "the activity type is \(type.utf8.count) bytes long, the limit is \(maximumActivityTypeLength)"
            )
        }
        guard !type.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw BatonCoreError(.invalidActivityType, "the activity type \(BatonCoreError.quoted(type)) has control characters")
        }
    }

    /// Sets the webpage URL (SEMANTICS A5).
    /// - Throws: ``BatonCoreError`` `unsupportedURLScheme` unless the URL is http or https with a host; the
    ///   previous value is kept.
    public mutating func setWebpageURL(_ url: URL?) throws {
        if let url { try Self.validateWebpageURL(url) }
        webpageURL = url
    }

    /// Checks a webpage URL against SEMANTICS A5 without setting it.
    public static func validateWebpageURL(_ url: URL) throws {
        let scheme = url.scheme?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw BatonCoreError(
                .unsupportedURLScheme,
                "webpageURL must be http or https; \(BatonCoreError.quoted(url.absoluteString)) has "
                    + (url.scheme.map { "scheme \(BatonCoreError.quoted($0))" } ?? "no scheme")
            )
        }
        guard let host = url.host, !host.isEmpty else {
            throw BatonCoreError(.unsupportedURLScheme, "webpageURL \(BatonCoreError.quoted(url.absoluteString)) has no host")
        }
    }

    /// Whether the activity has expired at `now` (SEMANTICS A10): an expired activity is neither handed off nor
    /// indexed.
    public func isExpired(at now: Date) -> Bool {
        expirationDate.map { $0 <= now } ?? false
    }

    /// The part of `userInfo` that travels: all of it, or only ``requiredUserInfoKeys`` when that is set (A10).
    /// - Throws: ``BatonCoreError`` `missingRequiredUserInfoKey` naming the first required key (in sorted order)
    ///   that `userInfo` lacks.
    public func travellingUserInfo() throws -> [String: PropertyList] {
        guard let required = requiredUserInfoKeys else { return userInfo }
        var travelling = [String: PropertyList](minimumCapacity: required.count)
        for key in required.sorted() {
            guard let value = userInfo[key] else {
                throw BatonCoreError(
                    .missingRequiredUserInfoKey,
                    "requiredUserInfoKeys names \(BatonCoreError.quoted(key)), but userInfo has no such key"
                )
            }
            travelling[key] = value
        }
        return travelling
    }
}
