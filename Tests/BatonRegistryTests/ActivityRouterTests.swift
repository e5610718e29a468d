import BatonRegistry
import Foundation
import Testing

func makeApp(
    _ identifier: String,
    team: String? = "TEAMA",
    types: [String] = [],
    documentTypes: [String] = [],
    domains: [String] = [],
    resolved: Bool = true
) -> AppRecord {
    AppRecord(
        bundleURL: URL(fileURLWithPath: "/apps/\(identifier).app"),
        bundleIdentifier: identifier,
        name: identifier,
        executableURL: URL(fileURLWithPath: "/apps/\(identifier).app/run"),
        teamIdentifier: team,
        activityTypes: types,
        documentActivityTypes: documentTypes,
        associatedDomains: domains.compactMap(AssociatedDomain.init),
        warnings: [],
        isIdentityResolved: resolved
    )
}

@Suite("Activity router (D1–D4, E1–E4)")
struct ActivityRouterTests {
    static let url = URL(string: "https://shopsnap.example/lists/1")

    static func router(_ apps: [AppRecord], approvals: [String: String] = [:], browser: String? = nil) throws -> ActivityRouter {
        let files = try approvals.mapValues { try AppSiteAssociation(json: Data($0.utf8)) }
        return ActivityRouter(registry: AppRegistry(apps: apps), approvals: DomainApprovals(files), defaultBrowser: browser)
    }

    @Test("D1: the same team's app that claims the type continues it")
    func sameTeam() throws {
        let router = try Self.router([makeApp("com.a.shop", types: ["com.a.view"]), makeApp("com.a.other", types: ["com.a.edit"])])
        let decision = router.route(RouteRequest(activityType: "com.a.view", teamIdentifier: "TEAMA"))
        #expect(decision.target == .app(bundleIdentifier: "com.a.shop"))
        #expect(decision.reason.contains("(D1)"))
        #expect(!decision.emptiesUserInfo)
    }

    @Test("D3: an app of another team never receives it, even claiming the type")
    func otherTeam() throws {
        let router = try Self.router([makeApp("com.b.copycat", team: "TEAMB", types: ["com.a.view"])])
        let decision = router.route(RouteRequest(activityType: "com.a.view", teamIdentifier: "TEAMA"))
        #expect(decision.target == .nothing)
        #expect(decision.reason.contains("no app of team TEAMA claims com.a.view"))
        let noTeam = router.route(RouteRequest(activityType: "com.a.view"))
        #expect(noTeam.target == .nothing && noTeam.reason.contains("(D3)"))
    }

    @Test("B5: a document type's activity type is a claim too")
    func documentType() throws {
        let router = try Self.router([makeApp("com.a.editor", documentTypes: ["com.a.editing"])])
        let decision = router.route(RouteRequest(activityType: "com.a.editing", teamIdentifier: "TEAMA"))
        #expect(decision.target == .app(bundleIdentifier: "com.a.editor"))
        #expect(decision.reason.contains("document type"))
    }

    @Test("several candidates: the originating app, then explicit claims, then search-path order, always the same")
    func severalCandidates() throws {
        let apps = [
            makeApp("com.a.docs", documentTypes: ["com.a.view"]), makeApp("com.a.first", types: ["com.a.view"]),
            makeApp("com.a.second", types: ["com.a.view"]),
        ]
        let router = try Self.router(apps)
        let plain = router.route(RouteRequest(activityType: "com.a.view", teamIdentifier: "TEAMA"))
        #expect(plain.target == .app(bundleIdentifier: "com.a.first"))
        #expect(plain.reason.contains("also claimed by com.a.second, com.a.docs"))
        let origin = router.route(RouteRequest(activityType: "com.a.view", teamIdentifier: "TEAMA", originBundleIdentifier: "com.a.second"))
        #expect(origin.target == .app(bundleIdentifier: "com.a.second"))
        #expect(origin.reason.contains("the same app created it"))
        for _ in 0..<20 { #expect(router.route(RouteRequest(activityType: "com.a.view", teamIdentifier: "TEAMA")) == plain) }
    }

    @Test("apps whose identity is unresolved are never chosen")
    func unresolved() throws {
        let router = try Self.router([makeApp("$(PRODUCT_BUNDLE_IDENTIFIER)", types: ["com.a.view"], resolved: false)])
        #expect(router.route(RouteRequest(activityType: "com.a.view", teamIdentifier: "TEAMA")).target == .nothing)
    }

    @Test("E1: nothing claims it but it has a webpage URL: the browser opens the page")
    func appToWeb() throws {
        let url = try #require(Self.url)
        let system = try Self.router([]).route(RouteRequest(activityType: "com.a.view", teamIdentifier: "TEAMA", webpageURL: url))
        #expect(system.target == .browser(bundleIdentifier: nil, url: url))
        #expect(system.reason.contains("(E1)"))
        let browser = makeApp("org.browser", team: "TEAMW", types: [AppRecord.browsingWebActivityType])
        let configured = try Self.router([browser], browser: "org.browser")
            .route(RouteRequest(activityType: "com.a.view", teamIdentifier: "TEAMA", webpageURL: url))
        #expect(configured.target == .browser(bundleIdentifier: "org.browser", url: url))
    }

    @Test("E3, E4: a web page goes to the app whose domain approves it, with empty userInfo")
    func webToApp() throws {
        let page = try #require(URL(string: "https://shopsnap.example/lists/1"))
        let request = RouteRequest(activityType: AppRecord.browsingWebActivityType, teamIdentifier: "WEBTEAM", webpageURL: page)
        let app = makeApp("com.a.shop", domains: ["activitycontinuation:shopsnap.example"])
        let approving = #"{"activitycontinuation": {"apps": ["TEAMA.com.a.shop"]}}"#

        let approved = try Self.router([app], approvals: ["shopsnap.example": approving]).route(request)
        #expect(approved.target == .app(bundleIdentifier: "com.a.shop"))
        #expect(approved.emptiesUserInfo)
        #expect(approved.deliveredActivityType == AppRecord.browsingWebActivityType)
        #expect(approved.reason.contains("(E3, E4)"))

        let notCached = try Self.router([app]).route(request)
        #expect(notCached.target == .browser(bundleIdentifier: nil, url: page))
        #expect(notCached.reason.contains("no association file for shopsnap.example is cached"))

        let otherApp = #"{"activitycontinuation": {"apps": ["TEAMA.com.a.elsewhere"]}}"#
        let refused = try Self.router([app], approvals: ["shopsnap.example": otherApp]).route(request)
        #expect(refused.target == .browser(bundleIdentifier: nil, url: page))
        #expect(refused.reason.contains("does not approve it"))
    }

    @Test("E3: applinks with a wildcard domain, approved per path; the most specific claim wins")
    func wildcardAppLinks() throws {
        let wildcard = makeApp("com.a.shop", domains: ["applinks:*.shopsnap.example"])
        let exact = makeApp("com.a.deals", domains: ["applinks:deals.shopsnap.example"])
        let file = #"{"applinks": {"details": [{"appIDs": ["TEAMA.com.a.shop", "TEAMA.com.a.deals"], "components": [{"/": "/lists/*"}]}]}}"#
        let router = try Self.router(
            [wildcard, exact],
            approvals: ["shopsnap.example": file, "deals.shopsnap.example": file]
        )
        func route(_ text: String) throws -> RouteDecision {
            router.route(RouteRequest(activityType: AppRecord.browsingWebActivityType, webpageURL: try #require(URL(string: text))))
        }
        #expect(try route("https://www.shopsnap.example/lists/2").target == .app(bundleIdentifier: "com.a.shop"))
        #expect(try route("https://deals.shopsnap.example/lists/2").target == .app(bundleIdentifier: "com.a.deals"))
        #expect(try route("https://www.shopsnap.example/about").target != .app(bundleIdentifier: "com.a.shop"))
        // The wildcard does not cover the domain itself.
        #expect(try route("https://shopsnap.example/lists/2").reason.contains("no app claims shopsnap.example"))
    }

    @Test("E2: a browsing-web activity no app claims goes to the default browser app that claims the type")
    func browserToBrowser() throws {
        let browser = makeApp("org.browser", team: "TEAMW", types: [AppRecord.browsingWebActivityType])
        let page = try #require(URL(string: "https://news.example/story"))
        let decision = try Self.router([browser], browser: "org.browser")
            .route(RouteRequest(activityType: AppRecord.browsingWebActivityType, teamIdentifier: "OTHER", webpageURL: page))
        #expect(decision.target == .app(bundleIdentifier: "org.browser"))
        #expect(decision.reason.contains("(E2)"))
        #expect(!decision.emptiesUserInfo)
    }
}
