import BatonCore
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

    /// The columns ``columns(_:)`` selects, in its order: ``entry(from:limits:_:)`` reads them by position, as a name
    /// lookup in a GRDB row compares the names case-insensitively one by one, for every value (issue 29).
    private enum Selected: Int, CaseIterable {
        case id, savedAt, expirationDate, bytes
        case persistentIdentifier, bundleIdentifier, activityType, title, keywords, description, contentType
        case relatedUniqueIdentifier, webpageURL
        case thumbnail, payload, payloadLength

        /// The name the column has in the selection (and in `activities`, but for `payload_length`).
        var name: String {
            switch self {
            case .id: "id"
            case .savedAt: "savedAt"
            case .expirationDate: "expirationDate"
            case .bytes: "bytes"
            case .persistentIdentifier: "persistentIdentifier"
            case .bundleIdentifier: "bundleIdentifier"
            case .activityType: "activityType"
            case .title: "title"
            case .keywords: "keywords"
            case .description: "description"
            case .contentType: "contentType"
            case .relatedUniqueIdentifier: "relatedUniqueIdentifier"
            case .webpageURL: "webpageURL"
            case .thumbnail: "thumbnail"
            case .payload: "payload"
            case .payloadLength: "payload_length"
            }
        }
    }

    /// What to select from `activities` for ``entry(from:limits:_:)``, instead of `*`: bounded by `limits`, as saves
    /// are (issue 25 item 6). The file may have been written by another program of the same user, with a 40 MB title:
    /// each text column comes out as at most one character more than ``SearchLimits/maximumTextBytes`` characters (a
    /// saved one is never longer), and the thumbnail and payload only when within their limits (SQLite reads a blob's
    /// length without reading the blob). SQLite still reads a long text once to cut it, and frees it with the row.
    static func columns(_ limits: SearchLimits) -> String {
        let textLimit = max(1, limits.maximumTextBytes) + 1
        return Selected.allCases.map { column in
            switch column {
            case .id, .savedAt, .expirationDate, .bytes:
                column.name
            case .persistentIdentifier, .bundleIdentifier, .activityType, .title, .keywords, .description, .contentType,
                .relatedUniqueIdentifier, .webpageURL:
                "substr(\(column.name), 1, \(textLimit)) AS \(column.name)"
            case .thumbnail:
                "CASE WHEN length(thumbnail) <= \(limits.maximumThumbnailBytes) THEN thumbnail END AS thumbnail"
            case .payload:
                "CASE WHEN length(payload) <= \(limits.maximumPayloadBytes) THEN payload END AS payload"
            case .payloadLength:
                "length(payload) AS payload_length"
            }
        }.joined(separator: ", ")
    }

    /// The entry a row selected with ``columns(_:)`` holds; text above the limit is cut and ends in "… (N more
    /// characters)" (its length asked of `db` apart, so SQLite holds one long text at a time), a thumbnail above its
    /// limit is left out.
    ///
    /// - Throws: ``SearchError`` `damaged` for a value of the wrong kind, or a payload above its limit (no Baton saves
    ///   one, and a cut payload cannot be continued from).
    static func entry(from row: Row, limits: SearchLimits, _ db: Database) throws -> SearchEntry {
        // Another selection is this file's mistake, not the index's damage.
        precondition(row.count == Selected.allCases.count, "StoredRow.entry reads a row selected with StoredRow.columns")
        /// The value of `column` (nil when NULL); one of another kind is damage, as ``Row/checked(_:as:)`` says.
        func read<Value: DatabaseValueConvertible>(_ column: Selected, as type: Value.Type = Value.self) throws -> Value? {
            let value: DatabaseValue = row[column.rawValue]
            if value.isNull { return nil }
            guard let converted = Value.fromDatabaseValue(value) else {
                throw SearchError(
                    .damaged,
                    "The search index holds a value of the wrong kind in \(column.name) (\(value.storage)); run `baton search --rebuild` to start an empty index."
                )
            }
            return converted
        }
        let limit = max(1, limits.maximumTextBytes)
        func text(_ column: Selected) throws -> String? {
            guard let value = try read(column, as: String.self) else { return nil }
            // SQLite's substr and length count code points; a text of at most `limit` bytes has at most as many
            // (counted in O(1)), most texts.
            guard value.utf8.count > limit, value.unicodeScalars.count > limit else { return value }
            guard let id = try read(.id, as: Int64.self) else {
                throw SearchError(.damaged, "The search index has an entry without id; run `baton search --rebuild` to start an empty index.")
            }
            var cut = String.UnicodeScalarView()
            cut.append(contentsOf: value.unicodeScalars.prefix(limit))
            let length = try Int.fetchOne(
                db,
                sql: "SELECT length(\(column.name)) FROM activities WHERE id = ?",
                arguments: [id]
            ) ?? limit
            return String(cut) + Clipping.note(max(1, length - limit), more: "characters")
        }
        let payloadLength = try read(.payloadLength, as: Int.self) ?? 0
        if payloadLength > limits.maximumPayloadBytes {
            throw SearchError(
                .damaged,
                "The search index holds a payload of \(payloadLength) bytes, above the \(limits.maximumPayloadBytes) Baton saves; run `baton search --rebuild` to start an empty index."
            )
        }
        let keywords = try text(.keywords) ?? ""
        return SearchEntry(
            persistentIdentifier: try text(.persistentIdentifier),
            bundleIdentifier: try text(.bundleIdentifier) ?? "",
            activityType: try text(.activityType) ?? "",
            title: try text(.title) ?? "",
            keywords: Self.keywords(keywords),
            contentDescription: try text(.description),
            contentType: try text(.contentType),
            thumbnailData: try read(.thumbnail, as: Data.self),
            relatedUniqueIdentifier: try text(.relatedUniqueIdentifier),
            webpageURL: try text(.webpageURL),
            expirationDate: try read(.expirationDate, as: Double.self).map(Date.init(timeIntervalSince1970:)),
            payload: try read(.payload, as: Data.self) ?? Data()
        )
    }

    /// The stored keywords, one a line, as `split(separator: "\n")` splits them into characters. Without a carriage
    /// return (which makes one character of "\r\n") every "\n" byte is a character of its own, so the bytes are split.
    private static func keywords(_ stored: String) -> [String] {
        if stored.isEmpty { return [] }
        if stored.utf8.contains(UInt8(ascii: "\r")) { return stored.split(separator: "\n").map(String.init) }
        return stored.utf8.split(separator: UInt8(ascii: "\n")).map { String(Substring($0)) }
    }

    /// The text without the private-use characters the index uses to mark matches.
    static func clean(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "\u{E000}" || $0 == "\u{E001}" }) else { return text }
        var cleaned = String.UnicodeScalarView()
        cleaned.append(contentsOf: text.unicodeScalars.filter { $0 != "\u{E000}" && $0 != "\u{E001}" })
        return String(cleaned)
    }
}
