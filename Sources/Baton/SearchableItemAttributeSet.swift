import BatonCore
import Foundation
import Synchronization

/// What a search result shows for an activity (`contentAttributeSet`): Apple's `CSSearchableItemAttributeSet`, the
/// members Handoff and search code set (issue 12; `import BatonAppleNames` gives it Apple's name). It travels in the
/// payload as a dictionary (``propertyList``); on-device search (issue 15) reads it.
/// Sendable, checked: every value is read and written under the `values` mutex.
public final class SearchableItemAttributeSet: Sendable {
    private let values: Mutex<[String: PropertyList]>

    /// An attribute set for content of a uniform type identifier (`"public.text"`), as `init(itemContentType:)`.
    public init(itemContentType: String) {
        values = Mutex(["contentType": .string(itemContentType)])
    }

    /// The same, under the newer name (Apple's takes a `UTType`; here the identifier's string).
    public convenience init(contentType: String) {
        self.init(itemContentType: contentType)
    }

    /// An attribute set from its payload form.
    public init(propertyList: [String: PropertyList]) {
        values = Mutex(propertyList)
    }

    /// The payload form.
    public var propertyList: [String: PropertyList] { values.withLock { values in values } }

    private func string(_ key: String) -> String? { values.withLock { values in values[key]?.stringValue } }
    private func set(_ key: String, _ value: PropertyList?) { values.withLock { values in values[key] = value } }

    public var title: String? {
        get { string("title") }
        set { set("title", newValue.map(PropertyList.string)) }
    }

    public var contentDescription: String? {
        get { string("contentDescription") }
        set { set("contentDescription", newValue.map(PropertyList.string)) }
    }

    public var displayName: String? {
        get { string("displayName") }
        set { set("displayName", newValue.map(PropertyList.string)) }
    }

    public var contentType: String? {
        get { string("contentType") }
        set { set("contentType", newValue.map(PropertyList.string)) }
    }

    public var relatedUniqueIdentifier: String? {
        get { string("relatedUniqueIdentifier") }
        set { set("relatedUniqueIdentifier", newValue.map(PropertyList.string)) }
    }

    public var keywords: [String]? {
        get { values.withLock { values in values["keywords"]?.arrayValue?.compactMap(\.stringValue) } }
        set { set("keywords", newValue.map { .array($0.map(PropertyList.string)) }) }
    }

    public var thumbnailData: Data? {
        get {
            values.withLock { values in
                guard case .data(let data) = values["thumbnailData"] else { return nil }
                return data
            }
        }
        set { set("thumbnailData", newValue.map(PropertyList.data)) }
    }

    public var thumbnailURL: URL? {
        get {
            values.withLock { values in
                guard case .url(let url) = values["thumbnailURL"] else { return nil }
                return url
            }
        }
        set { set("thumbnailURL", newValue.map(PropertyList.url)) }
    }
}
