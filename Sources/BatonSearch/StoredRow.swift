import Foundation
import GRDB

/// A ``SearchEntry`` checked against ``SearchLimits`` and cleaned for storage: the text has no match marks and the
/// keywords are one per line, sorted.
struct StoredRow: Sendable {
    let entry: SearchEntry
    let keywords: String
    let title: String
    let description: String?
    let bytes: Int

    init(_ entry: SearchEntry, limits: SearchLimits) throws {
        guard !entry.bundleIdentifier.isEmpty, !entry.activityType.isEmpty else {
            throw SearchError(.invalidEntry, "A search entry needs an app (bundle identifier) and an activity type.")
        }
        if let thumbnail = entry.thumbnailData, thumbnail.count > limits.maximumThumbnailBytes {
            throw SearchError(
                .tooLarge,
                "The thumbnail is \(thumbnail.count) bytes; a search entry's may be at most \(limits.maximumThumbnailBytes). Save a smaller image."
            )
        }
        if entry.payload.count > limits.maximumPayloadBytes {
            throw SearchError(
                .tooLarge,
                "The activity's payload is \(entry.payload.count) bytes; at most \(limits.maximumPayloadBytes) can be saved for search."
            )
        }
        self.entry = entry
        title = Self.clean(entry.title)
        keywords = Set(entry.keywords.map { Self.clean($0).replacingOccurrences(of: "\n", with: " ") })
            .filter { !$0.isEmpty }
            .sorted()
            .joined(separator: "\n")
        description = entry.contentDescription.map(Self.clean)
        for (name, text) in [("title", title), ("keywords", keywords), ("description", description ?? "")]
        where text.utf8.count > limits.maximumTextBytes {
            throw SearchError(
                .tooLarge,
                "The \(name) is \(text.utf8.count) bytes; a search entry's may be at most \(limits.maximumTextBytes)."
            )
        }
        let optionalText = [
            entry.persistentIdentifier, entry.contentType, entry.relatedUniqueIdentifier, entry.webpageURL,
        ]
        bytes = title.utf8.count + keywords.utf8.count + (description?.utf8.count ?? 0)
            + entry.bundleIdentifier.utf8.count + entry.activityType.utf8.count
            + optionalText.reduce(0) { $0 + ($1?.utf8.count ?? 0) }
            + (entry.thumbnailData?.count ?? 0) + entry.payload.count
        if bytes > limits.maximumBytes {
            throw SearchError(
                .tooLarge,
                "The entry is \(bytes) bytes; the whole search index may hold at most \(limits.maximumBytes)."
            )
        }
    }

    /// The values for `INSERT INTO activities`, in its column order.
    func arguments(savedAt: Date) -> StatementArguments {
        [
            entry.persistentIdentifier, entry.bundleIdentifier, entry.activityType, title, keywords,
            description, entry.contentType, entry.thumbnailData, entry.relatedUniqueIdentifier, entry.webpageURL,
            entry.expirationDate?.timeIntervalSince1970, savedAt.timeIntervalSince1970, entry.payload, bytes,
        ]
    }

    /// The entry a row of `activities` holds.
    /// The entry a stored row holds. - Throws: ``SearchError`` `damaged` for a value of the wrong kind.
    static func entry(from row: Row) throws -> SearchEntry {
        let keywords = try row.checked("keywords", as: String.self) ?? ""
        return SearchEntry(
            persistentIdentifier: try row.checked("persistentIdentifier"),
            bundleIdentifier: try row.checked("bundleIdentifier") ?? "",
            activityType: try row.checked("activityType") ?? "",
            title: try row.checked("title") ?? "",
            keywords: keywords.isEmpty ? [] : keywords.split(separator: "\n").map(String.init),
            contentDescription: try row.checked("description"),
            contentType: try row.checked("contentType"),
            thumbnailData: try row.checked("thumbnail"),
            relatedUniqueIdentifier: try row.checked("relatedUniqueIdentifier"),
            webpageURL: try row.checked("webpageURL"),
            expirationDate: try row.checked("expirationDate", as: Double.self).map(Date.init(timeIntervalSince1970:)),
            payload: try row.checked("payload") ?? Data()
        )
    }

    /// The text without the private-use characters the index uses to mark matches.
    static func clean(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "\u{E000}" || $0 == "\u{E001}" }) else { return text }
        var cleaned = String.UnicodeScalarView()
        cleaned.append(contentsOf: text.unicodeScalars.filter { $0 != "\u{E000}" && $0 != "\u{E001}" })
        return String(cleaned)
    }
}
