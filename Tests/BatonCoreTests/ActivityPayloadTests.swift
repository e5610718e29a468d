import BatonCore
import Foundation
import Testing

@Suite("Activity payload")
struct ActivityPayloadTests {
    static func expectCode(_ code: BatonCoreError.Code, _ body: () throws -> Void) {
        let error = #expect(throws: BatonCoreError.self) { try body() }
        #expect(error?.code == code, "\(String(describing: error))")
    }

    @Test("A1: the activity type is required, bounded and free of control characters")
    func activityType() throws {
        #expect(try ActivityPayload(activityType: "com.example.shopsnap.view").activityType == "com.example.shopsnap.view")
        // Real apps use bare, non-DNS types (NetNewsWire's "ReadArticle"): accepted.
        #expect(try ActivityPayload(activityType: "ReadArticle").activityType == "ReadArticle")
        Self.expectCode(.invalidActivityType) { _ = try ActivityPayload(activityType: "") }
        Self.expectCode(.invalidActivityType) { _ = try ActivityPayload(activityType: "bad\ntype") }
        Self.expectCode(.invalidActivityType) {
            _ = try ActivityPayload(activityType: String(repeating: "a", count: ActivityPayload.maximumActivityTypeLength + 1))
        }
    }

    @Test("A5: webpageURL accepts http and https only, and keeps the old value on error")
    func webpageURL() throws {
        var payload = try ActivityPayload(activityType: "com.example.read")
        let page = try #require(URL(string: "https://example.com/article/1"))
        try payload.setWebpageURL(page)
        try payload.setWebpageURL(URL(string: "HTTP://example.com/"))
        for bad in ["ftp://example.com/file", "file:///etc/passwd", "mailto:someone@example.com", "javascript:alert(1)",
            "https:///no-host"]
        {
            Self.expectCode(.unsupportedURLScheme) { try payload.setWebpageURL(URL(string: bad)) }
        }
        #expect(payload.webpageURL == URL(string: "HTTP://example.com/"))
        try payload.setWebpageURL(nil)
        #expect(payload.webpageURL == nil)
    }

    @Test("every field survives encoding and decoding")
    func roundTrip() throws {
        var payload = try ActivityPayload(activityType: "com.example.notes.edit")
        payload.title = "Meeting notes"
        payload.userInfo = ["noteID": .uuid(UUID()), "cursor": 42, "draft": "Agenda: ✅", "tags": .set(["a", "b"])]
        try payload.setWebpageURL(URL(string: "https://notes.example/n/42"))
        payload.keywords = ["meeting", "notes"]
        payload.isEligibleForHandoff = false
        payload.isEligibleForSearch = true
        payload.isEligibleForPublicIndexing = true
        payload.expirationDate = Date(timeIntervalSinceReferenceDate: 800_000_000.25)
        payload.persistentIdentifier = "note-42"
        payload.targetContentIdentifier = "window-7"
        payload.referrerURL = URL(string: "https://search.example/?q=notes")
        payload.contentAttributeSet = ["contentDescription": "Weekly sync"]
        payload.supportsContinuationStreams = true
        let decoded = try ActivityPayload(decoding: try payload.encoded())
        #expect(decoded == payload)
    }

    @Test("A10: with requiredUserInfoKeys set, only those keys travel, and each must be present")
    func requiredKeys() throws {
        var payload = try ActivityPayload(activityType: "com.example.shopsnap.edit")
        payload.userInfo = ["item": "Cheese", "version": "1.0", "scrollOffset": 312.5]
        payload.requiredUserInfoKeys = ["item", "version"]
        let decoded = try ActivityPayload(decoding: try payload.encoded())
        #expect(decoded.userInfo == ["item": "Cheese", "version": "1.0"])
        #expect(decoded.requiredUserInfoKeys == ["item", "version"])

        payload.requiredUserInfoKeys = ["item", "missing"]
        Self.expectCode(.missingRequiredUserInfoKey) { _ = try payload.encoded() }

        payload.requiredUserInfoKeys = nil
        #expect(try ActivityPayload(decoding: try payload.encoded()).userInfo.count == 3)
    }

    @Test("A11: payloads past the 3 KB advice still work; past the hard limit they are refused")
    func sizeLimit() throws {
        var payload = try ActivityPayload(activityType: "com.example.photos.view")
        payload.userInfo = ["photo": .data(Data(count: 256 * 1024))]
        let data = try payload.encoded()
        #expect(data.count > ActivityPayload.advisedUserInfoSize)
        #expect(try ActivityPayload(decoding: data).userInfo == payload.userInfo)

        payload.userInfo = ["photo": .data(Data(count: ActivityPayload.maximumEncodedSize))]
        Self.expectCode(.payloadTooLarge) { _ = try payload.encoded() }
        // A receiver refuses an oversized payload before parsing it.
        Self.expectCode(.payloadTooLarge) { _ = try ActivityPayload(decoding: Data(count: ActivityPayload.maximumEncodedSize + 1)) }
    }

    @Test("H1: a payload from a newer format version is refused gracefully")
    func newerVersion() throws {
        let future = try BinaryPropertyListEncoder.encode(["v": 2, "type": "com.example.view", "hologram": true])
        Self.expectCode(.unsupportedPayloadVersion) { _ = try ActivityPayload(decoding: future) }
    }

    @Test("malformed payloads give invalidPayload naming the field")
    func malformed() throws {
        func decode(_ fields: PropertyList) throws -> ActivityPayload {
            try ActivityPayload(decoding: try BinaryPropertyListEncoder.encode(fields))
        }
        Self.expectCode(.invalidPayload) { _ = try decode(["type": "com.example.view"]) }
        Self.expectCode(.invalidPayload) { _ = try decode(["v": 1]) }
        Self.expectCode(.invalidPayload) { _ = try decode(["v": 0, "type": "t"]) }
        Self.expectCode(.invalidPayload) { _ = try decode(["v": 1, "type": "t", "userInfo": "not a dict"]) }
        Self.expectCode(.invalidPayload) { _ = try decode(["v": 1, "type": "t", "keywords": [1]]) }
        Self.expectCode(.invalidPayload) { _ = try decode([1, 2]) }
        Self.expectCode(.unsupportedURLScheme) { _ = try decode(["v": 1, "type": "t", "webpageURL": "file:///x"]) }
        Self.expectCode(.invalidActivityType) { _ = try decode(["v": 1, "type": ""]) }
        let error = #expect(throws: BatonCoreError.self) { _ = try decode(["v": 1, "type": "t", "title": 5]) }
        #expect(error?.message.contains("\"title\"") == true)
        Self.expectCode(.unknownFormat) { _ = try ActivityPayload(decoding: Data("garbage".utf8)) }
    }

    @Test("A10: expiry is judged against the time given")
    func expiry() throws {
        var payload = try ActivityPayload(activityType: "com.example.view")
        let now = Date(timeIntervalSinceReferenceDate: 1000)
        #expect(!payload.isExpired(at: now))
        payload.expirationDate = now
        #expect(payload.isExpired(at: now))
        #expect(!payload.isExpired(at: now.addingTimeInterval(-1)))
    }

    @Test("the encoding matches the test vector in docs/PROTOCOL.md")
    func testVector() throws {
        var payload = try ActivityPayload(activityType: "com.razeware.shopsnap.view")
        payload.title = "Groceries"
        payload.userInfo = ["shopsnap.items.key": ["Ice cream", "Apple", "Nuts"]]
        let data = try payload.encoded()
        // plistlib reads these bytes as {'title': 'Groceries', 'type': 'com.razeware.shopsnap.view',
        // 'userInfo': {'shopsnap.items.key': ['Ice cream', 'Apple', 'Nuts']}, 'v': 1}.
        let expected =
            "62706c6973743030d40103050c0204060d557469746c655947726f63657269657354747970655f101a636f6d2e72617a"
            + "65776172652e73686f70736e61702e766965775875736572496e666fd107085f101273686f70736e61702e6974656d73"
            + "2e6b6579a3090a0b5949636520637265616d554170706c65544e757473517610010811172126434c4f646872787d7f00"
            + "00000000000101000000000000000e00000000000000000000000000000081"
        #expect(hex(data) == expected)
        #expect(try ActivityPayload(decoding: bytes(hex: expected)) == payload)
    }
}
