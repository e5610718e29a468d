import BatonCore
import BatonSearch
import Foundation
import Testing

/// An activity's payload as a search entry (SEMANTICS G1, G2).
@Suite("SearchEntry from an activity (G1)")
struct SearchEntryTests {
    @Test("G1: an activity's title, keywords, content attributes, URL, expiry, identifier and payload become the entry")
    func g1EntryFromActivity() async throws {
        var activity = try ActivityPayload(activityType: "com.example.notes.edit")
        activity.title = "Trip notes"
        activity.keywords = ["travel"]
        activity.persistentIdentifier = "note-9"
        activity.isEligibleForSearch = true
        activity.expirationDate = Date(timeIntervalSince1970: 2_000_000_000)
        activity.userInfo = ["note": .string("9")]
        activity.contentAttributeSet = [
            "contentDescription": .string("Ferry times to the islands"),
            "contentType": .string("public.text"),
            "keywords": .array([.string("ferry"), .string("travel")]),
            "thumbnailData": .data(Data([1, 2, 3])),
            "relatedUniqueIdentifier": .string("rel-1"),
        ]
        try activity.setWebpageURL(URL(string: "https://example.com/notes/9"))
        let entry = try SearchEntry(activity: activity, bundleIdentifier: "com.example.notes")
        #expect(entry.persistentIdentifier == "note-9")
        #expect(entry.bundleIdentifier == "com.example.notes")
        #expect(entry.activityType == "com.example.notes.edit")
        #expect(entry.title == "Trip notes")
        #expect(entry.keywords == ["ferry", "travel"])
        #expect(entry.contentDescription == "Ferry times to the islands")
        #expect(entry.contentType == "public.text")
        #expect(entry.thumbnailData == Data([1, 2, 3]))
        #expect(entry.relatedUniqueIdentifier == "rel-1")
        #expect(entry.webpageURL == "https://example.com/notes/9")
        #expect(entry.expirationDate == Date(timeIntervalSince1970: 2_000_000_000))
        #expect(entry.payload == (try activity.encoded()))

        // Without a title the attribute set's display name is used.
        var untitled = try ActivityPayload(activityType: "com.example.notes.edit")
        untitled.contentAttributeSet = ["displayName": .string("Shown name")]
        #expect(try SearchEntry(activity: untitled, bundleIdentifier: "com.example.notes").title == "Shown name")

        try await withFolder { folder in
            let index = try SearchIndex(path: folder + "/search.sqlite")
            try await index.save(entry, now: Date(timeIntervalSince1970: 1_800_000_000))
            let found = try await index.search("islands fer", now: Date(timeIntervalSince1970: 1_800_000_000))
            #expect(found.map(\.entry) == [entry])
        }
    }
}
