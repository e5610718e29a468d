import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the agent keeps about one domain's association file (SEMANTICS E4: fetched and cached, not fetched per
/// continuation): the last verified JSON, when it was fetched and until when it counts, and how the last attempts
/// went. Stored as `associations/DOMAIN.json` in the state folder (``AssociationCache``).
///
/// Read back with ``init(decoding:domain:)``: a decoder of a file on disk that anything could have written, so it
/// has named limits, throws one typed error and is fuzzed (`scripts/fuzz.sh association-cache`).
public struct AssociationRecord: Sendable, Hashable, Codable {
    /// The largest cache file read: the 128 KiB JSON as base64 (4/3) plus room for the rest.
    public static let maximumFileSize = 256 * 1024
    /// The longest domain name DNS allows.
    public static let maximumDomainLength = 253
    /// The longest stored error message: a message is a line for a person, never a dump.
    public static let maximumMessageLength = 4096
    /// The format written; a file of another version is treated as corrupt (fetched again).
    public static let version = 1

    /// The file's format version.
    public var version = Self.version
    /// The domain, lowercased.
    public var domain: String
    /// The URL the file came from.
    public var url: String?
    /// The verified JSON (for a signed file, its content); nil when no fetch ever succeeded.
    public var json: Data?
    /// Whether the file was CMS-signed.
    public var signed = false
    /// When the JSON was fetched.
    public var fetchedAt: Date?
    /// Until when the JSON approves apps; after it the page goes to the browser unless a fetch succeeded (E4).
    public var expiresAt: Date?
    /// When a fetch was last tried, successful or not.
    public var lastAttempt: Date?
    /// The code and message of the last failed fetch; nil after a success.
    public var lastErrorCode: String?
    public var lastErrorMessage: String?
    /// Failed fetches since the last success (drives the backoff).
    public var failures = 0

    /// An empty record for `domain`.
    public init(domain: String) {
        self.domain = domain.lowercased()
    }

    /// The last failure, as an error.
    public var lastError: AssociationFetchError? {
        lastErrorCode.map { AssociationFetchError(.named($0), lastErrorMessage ?? "") }
    }

    /// Whether the JSON still approves apps at `now`.
    public func isValid(at now: Date) -> Bool {
        json != nil && (expiresAt.map { $0 > now } ?? false)
    }

    /// The parsed file, if there is JSON.
    /// - Throws: ``AssociationFetchError`` `cacheCorrupt` when the stored JSON no longer parses.
    public func association() throws -> AppSiteAssociation? {
        guard let json else { return nil }
        do {
            return try AppSiteAssociation(json: json)
        } catch {
            throw AssociationFetchError(.cacheCorrupt, "the cached file for \(domain) does not parse: \(error)")
        }
    }

    /// Reads a stored record of `domain`, checking every limit and that its JSON is an association file.
    /// - Throws: ``AssociationFetchError`` `cacheCorrupt`, saying what is wrong.
    public init(decoding data: Data, domain: String) throws {
        func corrupt(_ why: String) -> AssociationFetchError {
            AssociationFetchError(.cacheCorrupt, "the cached association file for \(domain) \(why); it is set aside and fetched again")
        }
        guard data.count <= Self.maximumFileSize else { throw corrupt("is \(data.count) bytes, above the \(Self.maximumFileSize) limit") }
        let record: AssociationRecord
        do {
            record = try JSONDecoder().decode(AssociationRecord.self, from: data)
        } catch {
            throw corrupt("is not a cache record: \(error)")
        }
        guard record.version == Self.version else { throw corrupt("has version \(record.version), not \(Self.version)") }
        guard record.domain == domain.lowercased(), record.domain.count <= Self.maximumDomainLength else {
            throw corrupt("names another domain (\(record.domain.prefix(Self.maximumDomainLength)))")
        }
        guard record.failures >= 0, (record.lastErrorMessage?.utf8.count ?? 0) <= Self.maximumMessageLength,
            (record.lastErrorCode?.utf8.count ?? 0) <= 64, (record.url?.utf8.count ?? 0) <= Self.maximumMessageLength
        else { throw corrupt("has a field out of bounds") }
        for date in [record.fetchedAt, record.expiresAt, record.lastAttempt].compactMap({ $0 }) where !date.timeIntervalSinceReferenceDate.isFinite {
            throw corrupt("has a date that is not a number")
        }
        if let json = record.json {
            guard json.count <= AppSiteAssociation.maximumSize else { throw corrupt("holds a file above the \(AppSiteAssociation.maximumSize)-byte limit") }
            guard (try? AppSiteAssociation(json: json)) != nil else { throw corrupt("holds JSON that is not an association file") }
        }
        self = record
    }

    /// The record as stored.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(self)
    }
}
