@testable import BatonAgent
import BatonCore
import Foundation
import Testing

/// Issue 25 item 7 (A5): what another device is offered never carries the user and password of a web URL.
@Suite("Offered URLs: credentials stay on this device (issue 25 item 7, A5)")
struct OfferedURLsTests {
    @Test("issue 25 item 7, A5: https://user:pass@host loses user and password in webpageURL, referrer and userInfo; the rest stays")
    func credentialsStripped() throws {
        var payload = try ActivityPayload(activityType: "com.shopsnap.view")
        try payload.setWebpageURL(URL(string: "https://alice:hunter2@shop.example:8443/item/7?q=a@b#top"))
        payload.referrerURL = URL(string: "http://bob@ref.example/")
        payload.userInfo = [
            "api": .url(URL(string: "HTTPS://svc:s%40cret@api.example/v1")!),
            "nested": .array([.dictionary(["u": .url(URL(string: "http://x:y@deep.example")!)])]),
            "mail": .url(URL(string: "mailto:me@example.com")!),
            "ftp": .url(URL(string: "ftp://user:pw@files.example/")!),
            "text": .string("https://user:pass@kept.example"),
        ]
        let data = try payload.encoded()
        let offered = try ActivityPayload(decoding: OfferedURLs.withoutCredentials(data))
        #expect(offered.webpageURL?.absoluteString == "https://shop.example:8443/item/7?q=a@b#top")
        #expect(offered.referrerURL?.absoluteString == "http://ref.example/")
        #expect(offered.userInfo["api"] == .url(URL(string: "HTTPS://api.example/v1")!))
        #expect(offered.userInfo["nested"] == .array([.dictionary(["u": .url(URL(string: "http://deep.example")!)])]))
        #expect(offered.userInfo["mail"] == payload.userInfo["mail"], "no authority: unchanged")
        #expect(offered.userInfo["ftp"] == payload.userInfo["ftp"], "only http(s) URLs are web URLs (A5)")
        #expect(offered.userInfo["text"] == payload.userInfo["text"], "text is the app's own")
        let bytes = String(decoding: OfferedURLs.withoutCredentials(data), as: UTF8.self)
        #expect(!bytes.contains("hunter2") && !bytes.contains("alice") && !bytes.contains("s%40cret"))
    }

    @Test("issue 25 item 7: a state without credentials is offered byte for byte as the app gave it")
    func unchangedWithout() throws {
        var payload = try ActivityPayload(activityType: "com.shopsnap.view")
        try payload.setWebpageURL(URL(string: "https://shop.example/item/7"))
        payload.userInfo = [
            "mail": .url(URL(string: "mailto:me@example.com")!), "n": 1, "who": .string("me@example.com"),
            "pages": .array([.url(URL(string: "https://shop.example/a")!), .set([.url(URL(string: "http://b.example")!)])]),
        ]
        let data = try payload.encoded()
        #expect(OfferedURLs.withoutCredentials(data) == data)
        #expect(OfferedURLs.strippingCredentials(payload) == nil, "nothing to strip: nothing rebuilt (issue 26 item 5)")
        #expect(OfferedURLs.withoutCredentials(Data("not a plist @".utf8)) == Data("not a plist @".utf8))
    }
}
