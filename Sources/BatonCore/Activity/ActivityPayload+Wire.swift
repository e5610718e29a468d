#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The payload's encoding: a binary property list dictionary with these keys (docs/PROTOCOL.md, "Activity
/// payload"). Fields at their default value are left out, which keeps small activities small (SEMANTICS H3).
enum PayloadKey {
    static let version = "v"
    static let activityType = "type"
    static let title = "title"
    static let userInfo = "userInfo"
    static let webpageURL = "webpageURL"
    static let requiredUserInfoKeys = "requiredKeys"
    static let keywords = "keywords"
    static let notEligibleForHandoff = "noHandoff"
    static let eligibleForSearch = "search"
    static let eligibleForPublicIndexing = "publicIndexing"
    static let expirationDate = "expires"
    static let persistentIdentifier = "persistentID"
    static let targetContentIdentifier = "targetContentID"
    static let referrerURL = "referrerURL"
    static let contentAttributeSet = "contentAttributes"
    static let supportsContinuationStreams = "streams"
}

extension ActivityPayload {
    /// The payload as it crosses the wire: a binary property list of at most ``maximumEncodedSize`` bytes.
    ///
    /// Only the travelling part of `userInfo` is included (SEMANTICS A10).
    /// - Throws: ``BatonCoreError`` `payloadTooLarge` above the hard limit (A11), `missingRequiredUserInfoKey`, or
    ///   the codec's error for a value that cannot be encoded.
    public func encoded() throws -> Data {
        var fields: [String: PropertyList] = [
            PayloadKey.version: .integer(Int64(Self.currentVersion)),
            PayloadKey.activityType: .string(activityType),
        ]
        let travelling = try travellingUserInfo()
        if !travelling.isEmpty { fields[PayloadKey.userInfo] = .dictionary(travelling) }
        if let title { fields[PayloadKey.title] = .string(title) }
        if let webpageURL { fields[PayloadKey.webpageURL] = .string(webpageURL.absoluteString) }
        if let requiredUserInfoKeys {
            fields[PayloadKey.requiredUserInfoKeys] = .array(requiredUserInfoKeys.sorted().map(PropertyList.string))
        }
        if !keywords.isEmpty { fields[PayloadKey.keywords] = .array(keywords.sorted().map(PropertyList.string)) }
        if !isEligibleForHandoff { fields[PayloadKey.notEligibleForHandoff] = true }
        if isEligibleForSearch { fields[PayloadKey.eligibleForSearch] = true }
        if isEligibleForPublicIndexing { fields[PayloadKey.eligibleForPublicIndexing] = true }
        if let expirationDate { fields[PayloadKey.expirationDate] = .date(expirationDate) }
        if let persistentIdentifier { fields[PayloadKey.persistentIdentifier] = .string(persistentIdentifier) }
        if let targetContentIdentifier { fields[PayloadKey.targetContentIdentifier] = .string(targetContentIdentifier) }
        if let referrerURL { fields[PayloadKey.referrerURL] = .string(referrerURL.absoluteString) }
        if let contentAttributeSet { fields[PayloadKey.contentAttributeSet] = .dictionary(contentAttributeSet) }
        if supportsContinuationStreams { fields[PayloadKey.supportsContinuationStreams] = true }

        let data = try BinaryPropertyListEncoder.encode(.dictionary(fields))
        guard data.count <= Self.maximumEncodedSize else {
            throw BatonCoreError(
                .payloadTooLarge,
                "the encoded activity is \(data.count) bytes, the hard limit is \(Self.maximumEncodedSize) "
                    + "(keep userInfo under \(Self.advisedUserInfoSize) bytes; send bulk data over a continuation stream)"
            )
        }
        return data
    }

    /// Decodes a payload received from another device.
    /// - Throws: ``BatonCoreError``: `payloadTooLarge` above the hard limit, `unsupportedPayloadVersion` for a payload
    ///   from a newer Baton (SEMANTICS H1), `invalidPayload` for missing or mistyped fields, the A1/A5 errors for an
    ///   invalid type or webpage URL, or the codec's error for a malformed property list.
    public init(decoding data: Data) throws {
        guard data.count <= Self.maximumEncodedSize else {
            throw BatonCoreError(
                .payloadTooLarge,
                "received an activity of \(data.count) bytes, the hard limit is \(Self.maximumEncodedSize)"
            )
        }
        guard case .dictionary(let fields) = try BinaryPropertyListDecoder.decode(data) else {
            throw BatonCoreError(.invalidPayload, "the payload is not a dictionary")
        }
        let reader = FieldReader(fields: fields)
        guard let version = try reader.integer(PayloadKey.version) else {
            throw BatonCoreError(.invalidPayload, "the payload has no version field \"\(PayloadKey.version)\"")
        }
        guard version <= Self.currentVersion else {
            throw BatonCoreError(
                .unsupportedPayloadVersion,
                "the activity was sent in payload format \(version); this Baton reads up to \(Self.currentVersion) "
                    + "(update Baton on this device)"
            )
        }
        guard version >= 1 else {
            throw BatonCoreError(.invalidPayload, "payload format version \(version) does not exist")
        }
        guard let type = try reader.string(PayloadKey.activityType) else {
            throw BatonCoreError(.invalidPayload, "the payload has no activity type")
        }
        try self.init(activityType: type)
        self.version = Int(version)
        title = try reader.string(PayloadKey.title)
        userInfo = try reader.dictionary(PayloadKey.userInfo) ?? [:]
        if let url = try reader.url(PayloadKey.webpageURL) { try setWebpageURL(url) }
        requiredUserInfoKeys = try reader.stringSet(PayloadKey.requiredUserInfoKeys)
        keywords = try reader.stringSet(PayloadKey.keywords) ?? []
        isEligibleForHandoff = !(try reader.bool(PayloadKey.notEligibleForHandoff) ?? false)
        isEligibleForSearch = try reader.bool(PayloadKey.eligibleForSearch) ?? false
        isEligibleForPublicIndexing = try reader.bool(PayloadKey.eligibleForPublicIndexing) ?? false
        expirationDate = try reader.date(PayloadKey.expirationDate)
        persistentIdentifier = try reader.string(PayloadKey.persistentIdentifier)
        targetContentIdentifier = try reader.string(PayloadKey.targetContentIdentifier)
        referrerURL = try reader.url(PayloadKey.referrerURL)
        contentAttributeSet = try reader.dictionary(PayloadKey.contentAttributeSet)
        supportsContinuationStreams = try reader.bool(PayloadKey.supportsContinuationStreams) ?? false
    }
}

extension ActivityPayload {
    /// Whether decoding `data` (an encoded payload) may give a URL whose text holds `byte` (an ASCII byte), without
    /// decoding it (issue 26 item 5): false only when no URL object is in it (``BinaryPropertyList/mayHoldURLs(_:)``)
    /// and the webpage and referrer URLs, which travel as top-level strings, are ASCII strings without `byte`. For
    /// the originating agent, which looks for credentials (`@`, A5) in the state it offers on every fetch.
    public static func mayHoldURL(with byte: UInt8, in data: Data) -> Bool {
        BinaryPropertyList.mayHoldURLs(data) || BinaryPropertyList.mayHold(byte, inTopLevelValuesOf: urlStringKeys, in: data)
    }

    /// The fields whose strings decode as URLs.
    private static let urlStringKeys = [PayloadKey.webpageURL, PayloadKey.referrerURL]
}

/// Typed access to the payload dictionary: a present field of the wrong type is an error naming the field.
private struct FieldReader {
    let fields: [String: PropertyList]

    func mistyped(_ key: String, _ expected: String, _ found: PropertyList) -> BatonCoreError {
        BatonCoreError(.invalidPayload, "payload field \"\(key)\" should be a \(expected), found a \(found.typeName)")
    }

    func string(_ key: String) throws -> String? {
        guard let value = fields[key] else { return nil }
        guard case .string(let text) = value else { throw mistyped(key, "string", value) }
        return text
    }

    func integer(_ key: String) throws -> Int64? {
        guard let value = fields[key] else { return nil }
        guard let number = value.integerValue else { throw mistyped(key, "integer", value) }
        return number
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = fields[key] else { return nil }
        guard case .bool(let flag) = value else { throw mistyped(key, "bool", value) }
        return flag
    }

    func date(_ key: String) throws -> Date? {
        guard let value = fields[key] else { return nil }
        guard case .date(let date) = value else { throw mistyped(key, "date", value) }
        return date
    }

    func dictionary(_ key: String) throws -> [String: PropertyList]? {
        guard let value = fields[key] else { return nil }
        guard case .dictionary(let entries) = value else { throw mistyped(key, "dict", value) }
        return entries
    }

    func url(_ key: String) throws -> URL? {
        guard let text = try string(key) else { return nil }
        guard let url = URL(string: text) else {
            throw BatonCoreError(.invalidPayload, "payload field \"\(key)\" holds \(BatonCoreError.quoted(text)), not a URL")
        }
        return url
    }

    func stringSet(_ key: String) throws -> Set<String>? {
        guard let value = fields[key] else { return nil }
        guard case .array(let elements) = value else { throw mistyped(key, "array", value) }
        return Set(try elements.map { element in
            guard case .string(let text) = element else { throw mistyped(key, "array of strings", element) }
            return text
        })
    }
}
