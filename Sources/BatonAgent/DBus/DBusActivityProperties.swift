import BatonCore
import BatonDBus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An activity's properties as they cross the session bus (issue 28 item 1; docs/PROTOCOL.md §11, "Activity
/// properties"): the keys Apple names them by, each optional, applied to an ``ActivityPayload`` (CreateActivity,
/// UpdateActivity, Save's answer) and read back from one (Continue's `activity`). Values are property lists already
/// (§10's mapping); a key not listed, or a value of another type, is `InvalidArgs` naming `properties.KEY`.
enum DBusActivityProperties {
    /// Every key, in the order §11's table lists them.
    static let keys = [
        "title", "userInfo", "addUserInfoEntries", "webpageURL", "keywords", "requiredUserInfoKeys", "eligibleForHandoff",
        "eligibleForSearch", "eligibleForPublicIndexing", "expirationDate", "persistentIdentifier", "targetContentIdentifier",
        "contentAttributeSet", "supportsContinuationStreams", "needsSave",
    ]

    typealias Refusal = DBusAppSession.Refusal

    /// Applies `properties` to `payload` (A2–A5, A10, F1; `needsSave`, A6). `userInfo` is applied before
    /// `addUserInfoEntries`, whatever order they came in. On a refusal `payload` may be partly changed: apply to a copy.
    static func apply(_ properties: [String: PropertyList], to payload: inout ActivityPayload, needsSave: inout Bool) throws(Refusal) {
        for key in properties.keys.sorted() where !keys.contains(key) {
            throw Refusal(DBusAppInterface.Error.invalidArgs, "properties.\(BatonCoreError.quoted(key)): not an activity property (see docs/PROTOCOL.md §11)")
        }
        if let value = properties["userInfo"] { payload.userInfo = try dictionary(value, "userInfo") }
        if let value = properties["addUserInfoEntries"] { payload.userInfo.merge(try dictionary(value, "addUserInfoEntries")) { $1 } }
        if let value = properties["title"] { payload.title = try string(value, "title") }
        if let value = properties["webpageURL"] {
            let text = try string(value, "webpageURL")
            // A5: http and https only.
            guard let url = URL(string: text) else {
                throw Refusal(DBusAppInterface.Error.invalidArgs, "properties.webpageURL: \(BatonCoreError.quoted(text)) is not a URL")
            }
            do {
                try payload.setWebpageURL(url)
            } catch {
                throw Refusal(DBusAppInterface.Error.invalidArgs, "properties.webpageURL: \(error)")
            }
        }
        if let value = properties["keywords"] { payload.keywords = Set(try strings(value, "keywords")) }
        if let value = properties["requiredUserInfoKeys"] { payload.requiredUserInfoKeys = Set(try strings(value, "requiredUserInfoKeys")) }
        if let value = properties["eligibleForHandoff"] { payload.isEligibleForHandoff = try bool(value, "eligibleForHandoff") }
        if let value = properties["eligibleForSearch"] { payload.isEligibleForSearch = try bool(value, "eligibleForSearch") }
        if let value = properties["eligibleForPublicIndexing"] { payload.isEligibleForPublicIndexing = try bool(value, "eligibleForPublicIndexing") }
        if let value = properties["supportsContinuationStreams"] {
            payload.supportsContinuationStreams = try bool(value, "supportsContinuationStreams")
        }
        if let value = properties["expirationDate"] {
            guard case .date(let date) = value else { throw mistyped("expirationDate", "a date ('date', <d>)", value) }
            payload.expirationDate = date
        }
        if let value = properties["persistentIdentifier"] { payload.persistentIdentifier = try string(value, "persistentIdentifier") }
        if let value = properties["targetContentIdentifier"] { payload.targetContentIdentifier = try string(value, "targetContentIdentifier") }
        if let value = properties["contentAttributeSet"] { payload.contentAttributeSet = try dictionary(value, "contentAttributeSet") }
        if let value = properties["needsSave"], try bool(value, "needsSave") { needsSave = true }
    }

    /// A11: the activity as it would travel fits the hard limit (`requiredUserInfoKeys` aside: it may name keys the app
    /// sets later).
    static func checkSize(_ payload: ActivityPayload) throws(Refusal) {
        var whole = payload
        whole.requiredUserInfoKeys = nil
        do {
            _ = try whole.encoded()
        } catch let error as BatonCoreError where error.code == .payloadTooLarge {
            throw Refusal(DBusAppInterface.Error.payloadTooLarge, error.message)
        } catch {
            throw Refusal(DBusAppInterface.Error.invalidArgs, "\(error)")
        }
    }

    /// Continue's `activity`: `activityType`, then each property set (§11).
    static func dbusValue(of payload: ActivityPayload, mapping: DBusPropertyListMapping) throws -> DBusValue {
        var fields: [String: PropertyList] = ["activityType": .string(payload.activityType), "userInfo": .dictionary(payload.userInfo)]
        if let title = payload.title { fields["title"] = .string(title) }
        if let url = payload.webpageURL { fields["webpageURL"] = .string(url.absoluteString) }
        if !payload.keywords.isEmpty { fields["keywords"] = .array(payload.keywords.sorted().map(PropertyList.string)) }
        if let required = payload.requiredUserInfoKeys { fields["requiredUserInfoKeys"] = .array(required.sorted().map(PropertyList.string)) }
        fields["eligibleForHandoff"] = .bool(payload.isEligibleForHandoff)
        fields["eligibleForSearch"] = .bool(payload.isEligibleForSearch)
        fields["eligibleForPublicIndexing"] = .bool(payload.isEligibleForPublicIndexing)
        if let date = payload.expirationDate { fields["expirationDate"] = .date(date) }
        if let identifier = payload.persistentIdentifier { fields["persistentIdentifier"] = .string(identifier) }
        if let identifier = payload.targetContentIdentifier { fields["targetContentIdentifier"] = .string(identifier) }
        if let attributes = payload.contentAttributeSet { fields["contentAttributeSet"] = .dictionary(attributes) }
        fields["supportsContinuationStreams"] = .bool(payload.supportsContinuationStreams)
        return try mapping.dbusValue(userInfo: fields, root: "activity")
    }

    private static func string(_ value: PropertyList, _ key: String) throws(Refusal) -> String {
        guard case .string(let text) = value else { throw mistyped(key, "a string", value) }
        return text
    }

    private static func bool(_ value: PropertyList, _ key: String) throws(Refusal) -> Bool {
        guard case .bool(let flag) = value else { throw mistyped(key, "a bool (b)", value) }
        return flag
    }

    private static func dictionary(_ value: PropertyList, _ key: String) throws(Refusal) -> [String: PropertyList] {
        guard case .dictionary(let entries) = value else { throw mistyped(key, "a dictionary (a{sv})", value) }
        return entries
    }

    /// An array (or a set) of strings.
    private static func strings(_ value: PropertyList, _ key: String) throws(Refusal) -> [String] {
        let elements: [PropertyList]
        switch value {
        case .array(let array): elements = array
        case .set(let set): elements = Array(set)
        default: throw mistyped(key, "an array of strings", value)
        }
        var texts: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element else { throw mistyped("\(key)[\(index)]", "a string", element) }
            texts.append(text)
        }
        return texts
    }

    private static func mistyped(_ key: String, _ expected: String, _ value: PropertyList) -> Refusal {
        Refusal(DBusAppInterface.Error.invalidArgs, "properties.\(key): \(expected) was expected, not \(kind(value))")
    }

    private static func kind(_ value: PropertyList) -> String {
        switch value {
        case .string: "a string"
        case .integer, .unsignedInteger: "an integer"
        case .real: "a real"
        case .bool: "a bool"
        case .data: "data"
        case .date: "a date"
        case .array: "an array"
        case .dictionary: "a dictionary"
        case .null: "null"
        case .set: "a set"
        case .url: "a URL"
        case .uuid: "a UUID"
        }
    }
}
