import BatonRegistry
import Foundation
import Testing

@Suite("apple-app-site-association and assetlinks.json")
struct AssociationTests {
    static let wikipedia = "AKK7J2GV64.org.wikimedia.wikipedia"

    static func real(_ prefix: String, _ folder: String = "aasa") throws -> Data {
        try Data(contentsOf: try BundleFactory.realFile(folder, prefix))
    }

    static func url(_ text: String) throws -> URL {
        try #require(URL(string: text))
    }

    static func aasa(_ json: String) throws -> AppSiteAssociation {
        try AppSiteAssociation(json: Data(json.utf8))
    }

    @Test("the 2014-style file: activitycontinuation, webcredentials, applinks with appID and paths (E4)")
    func oldFormat() throws {
        let file = try AppSiteAssociation(json: try Self.real("wikimedia__operations-mediawiki-config__wikipedia.org"))
        #expect(file.activityContinuationApps.count == 5)
        #expect(file.approval(of: Self.wikipedia, for: .activityContinuation, url: nil).isApproved)
        #expect(!file.approval(of: "OTHERTEAM.org.wikimedia.wikipedia", for: .activityContinuation, url: nil).isApproved)
        #expect(file.approval(of: Self.wikipedia, for: .webCredentials, url: nil).isApproved)
        #expect(file.appLinks.count == 5)
        #expect(file.approval(of: Self.wikipedia, for: .appLinks, url: try Self.url("https://en.wikipedia.org/wiki/Baton")).isApproved)
        let outside = file.approval(of: Self.wikipedia, for: .appLinks, url: try Self.url("https://en.wikipedia.org/w/index.php"))
        #expect(!outside.isApproved)
        #expect(outside.reason.contains("no pattern"))
    }

    @Test("the new format at scale: 236 components, excludes before the catch-all, ? and # rules")
    func newFormat() throws {
        let file = try AppSiteAssociation(json: try Self.real("wikimedia__operations-mediawiki-config__testwiki"))
        #expect(file.activityContinuationApps.contains(Self.wikipedia))
        func approved(_ text: String) throws -> Bool {
            file.approval(of: Self.wikipedia, for: .appLinks, url: try Self.url(text)).isApproved
        }
        #expect(try approved("https://test.wikipedia.org/wiki/Baton"))
        #expect(try !approved("https://test.wikipedia.org/wiki/Special:Random"))
        #expect(try !approved("https://test.wikipedia.org/wiki/Thank_You_page"))
        // Percent-encoded UTF-8, in either hex case, and the raw character.
        #expect(try !approved("https://test.wikipedia.org/wiki/Am%E1%BA%93li:Foo"))
        #expect(try !approved("https://test.wikipedia.org/wiki/Am%e1%ba%93li:Foo"))
        #expect(try !approved("https://test.wikipedia.org/wiki/Am\u{1E93}li:Foo".addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? ""))
        // "?": {"veaction": "edit"} and "#": "/editor*".
        #expect(try !approved("https://test.wikipedia.org/wiki/Baton?veaction=edit"))
        #expect(try approved("https://test.wikipedia.org/wiki/Baton?veaction=view"))
        #expect(try !approved("https://test.wikipedia.org/wiki/Baton#/editor/2"))
        #expect(try approved("https://test.wikipedia.org/wiki/Baton#History"))
        #expect(try !approved("https://test.wikipedia.org/w/index.php"))
        let reason = file.approval(of: Self.wikipedia, for: .appLinks, url: try Self.url("https://test.wikipedia.org/wiki/Special:X")).reason
        #expect(reason.contains("components[1] (Exclude Special: pages) excludes"))
    }

    @Test("a single component that excludes everything approves nothing")
    func excludeEverything() throws {
        let file = try AppSiteAssociation(json: try Self.real("wikimedia__operations-mediawiki-config__thankyou"))
        #expect(!file.approval(of: Self.wikipedia, for: .appLinks, url: try Self.url("https://thankyou.wikipedia.org/wiki/Thanks")).isApproved)
        #expect(file.activityContinuationApps.isEmpty)
    }

    @Test("order is significant: the first matching rule decides")
    func order() throws {
        let excludeFirst = try Self.aasa(
            """
            {"applinks": {"details": [{"appIDs": ["T.app"], "components": [
              {"/": "/shop/private/*", "exclude": true}, {"/": "/shop/*"}]}]}}
            """
        )
        #expect(!excludeFirst.approval(of: "T.app", for: .appLinks, url: try Self.url("https://x.com/shop/private/1")).isApproved)
        #expect(excludeFirst.approval(of: "T.app", for: .appLinks, url: try Self.url("https://x.com/shop/cart")).isApproved)
        let catchAllFirst = try Self.aasa(
            """
            {"applinks": {"details": [{"appIDs": ["T.app"], "components": [
              {"/": "/shop/*"}, {"/": "/shop/private/*", "exclude": true}]}]}}
            """
        )
        #expect(catchAllFirst.approval(of: "T.app", for: .appLinks, url: try Self.url("https://x.com/shop/private/1")).isApproved)
    }

    @Test("paths: NOT prefixes, * and ? wildcards")
    func pathsRules() throws {
        let file = try Self.aasa(
            """
            {"applinks": {"apps": [], "details": [{"appID": "T.app", "paths": ["NOT /books/draft*", "/books/?", "/books/*/reviews"]}]}}
            """
        )
        func approved(_ path: String) throws -> Bool {
            file.approval(of: "T.app", for: .appLinks, url: try Self.url("https://x.com" + path)).isApproved
        }
        #expect(try approved("/books/7"))
        #expect(try !approved("/books/77"))
        #expect(try approved("/books/77/reviews"))
        #expect(try !approved("/books/draft-1"))
        #expect(try !approved("/"))
    }

    @Test("components: query patterns, fragments, caseSensitive and percentsEncoded, and defaults")
    func componentOptions() throws {
        let file = try Self.aasa(
            """
            {"applinks": {"defaults": {"caseSensitive": false}, "details": [
              {"appIDs": ["T.app"], "components": [
                {"/": "/Search", "?": "q=*"},
                {"/": "/caf\u{00E9}/*", "percentsEncoded": false},
                {"/": "/exact", "caseSensitive": true},
                {"#": "top"}
              ]}]}}
            """
        )
        func approved(_ text: String) throws -> Bool {
            file.approval(of: "T.app", for: .appLinks, url: try Self.url(text)).isApproved
        }
        #expect(try approved("https://x.com/search?q=baton"))
        #expect(try !approved("https://x.com/search?page=2"))
        #expect(try approved("https://x.com/caf%C3%A9/menu"))
        #expect(try approved("https://x.com/exact"))
        #expect(try !approved("https://x.com/EXACT"))
        #expect(try approved("https://x.com/anything#top"))
        #expect(try !approved("https://x.com/anything#bottom"))
    }

    @Test("the early dictionary form of details, and an app in no entry")
    func dictionaryDetails() throws {
        let file = try Self.aasa(#"{"applinks": {"apps": [], "details": {"9JA89QQLNQ.com.apple.wwdc": {"paths": ["/wwdc/*"]}}}}"#)
        #expect(file.approval(of: "9JA89QQLNQ.com.apple.wwdc", for: .appLinks, url: try Self.url("https://x.com/wwdc/2014")).isApproved)
        let other = file.approval(of: "T.other", for: .appLinks, url: nil)
        #expect(!other.isApproved && other.reason == "no applinks entry lists T.other")
    }

    @Test("malformed files give typed errors")
    func malformed() throws {
        for json in ["", "[]", "{\"activitycontinuation\": []}", "{\"activitycontinuation\": {\"apps\": [1]}}",
            "{\"applinks\": {\"details\": 3}}", "{\"applinks\": {\"details\": [{\"components\": [{\"exclude\": \"yes\"}]}]}}", "{",
            // JSON's null and numbers are not strings, objects or flags (read without JSONSerialization since issue 11).
            "{\"applinks\": null}", "{\"activitycontinuation\": {\"apps\": [null]}}",
            "{\"applinks\": {\"details\": [{\"components\": [{\"exclude\": 1}]}]}}",
            String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)]
        {
            let error = #expect(throws: BatonRegistryError.self, "\(json)") { try Self.aasa(json) }
            #expect(error?.code == .invalidAssociationFile, "\(json)")
        }
        let big = Data(count: AppSiteAssociation.maximumSize + 1)
        let error = #expect(throws: BatonRegistryError.self) { try AppSiteAssociation(json: big) }
        #expect(error?.code == .associationTooLarge)
    }

    @Test("assetlinks.json: android apps by package and certificate, web sites, mixed relations")
    func assetLinks() throws {
        let wikipedia = try AssetLinks(json: try Self.real("wikimedia__operations-mediawiki-config__wikipedia.org", "assetlinks"))
        #expect(wikipedia.statements.count == 3)
        let fingerprint = "f5:40:e9:37:41:9a:1f:e3:08:e3:35:31:35:9c:23:ce:19:df:d8:4a:66:01:e2:ef:85:c2:17:c8:23:a7:08:7f"
        #expect(wikipedia.approval(ofAndroidApp: "org.wikipedia", fingerprint: fingerprint, relation: AssetLinks.handleAllURLs).isApproved)
        #expect(wikipedia.approval(ofAndroidApp: "org.wikipedia", fingerprint: nil, relation: AssetLinks.getLoginCredentials).isApproved)
        #expect(!wikipedia.approval(ofAndroidApp: "org.wikipedia", fingerprint: "00:11", relation: AssetLinks.handleAllURLs).isApproved)
        #expect(!wikipedia.approval(ofAndroidApp: "org.other", fingerprint: nil, relation: AssetLinks.handleAllURLs).isApproved)
        #expect(wikipedia.approval(ofSite: "https://auth.wikimedia.org/", relation: AssetLinks.getLoginCredentials).isApproved)
        #expect(!wikipedia.approval(ofSite: "https://auth.wikimedia.org", relation: AssetLinks.handleAllURLs).isApproved)

        let mediawiki = try AssetLinks(json: try Self.real("wikimedia__operations-mediawiki-config__mediawiki.org", "assetlinks"))
        #expect(!mediawiki.statements.isEmpty)
        #expect(throws: BatonRegistryError.self) { try AssetLinks(json: Data("{}".utf8)) }
        #expect(throws: BatonRegistryError.self) { try AssetLinks(json: Data(#"[{"target": {}}]"#.utf8)) }
    }

    @Test("hostile patterns stay linear-ish: many stars against a long path")
    func hostilePattern() throws {
        let stars = String(repeating: "*a", count: 2000) + "b"
        let file = try Self.aasa(#"{"applinks": {"details": [{"appIDs": ["T.app"], "components": [{"/": "\#(stars)"}]}]}}"#)
        let path = "/" + String(repeating: "a", count: 4000)
        #expect(!file.approval(of: "T.app", for: .appLinks, url: try Self.url("https://x.com" + path)).isApproved)
    }
}
