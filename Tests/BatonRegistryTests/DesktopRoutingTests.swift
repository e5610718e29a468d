import BatonRegistry
import Foundation
import Testing

/// Issue 28 item 2: one router (D1–D4, E3) over bundles and desktop-file apps, loaded from real files: a Swift app's
/// bundle and a GTK app's desktop file of the same team continue each other's activity types.
@Suite("Issue 28 item 2: routing across bundles and desktop files")
struct DesktopRoutingTests {
    /// `Notes.app` (team TEAMN, `notes.edit`) and, in the applications folder, `org.example.NotesGtk` (TEAMN,
    /// `notes.edit` and `notes.read`, documents as `notes.document`), `org.other.Copy` (TEAMX, `notes.edit`) and
    /// `org.example.Recipes` (TEAMR, claiming `applinks:recipes.example`).
    static func registry() throws -> AppRegistry {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        let bundles = try BundleFactory()
        defer { bundles.remove() }
        try bundles.bundle(
            "Notes", in: "apps",
            infoText: BundleFactory.plist(
                "<key>CFBundleIdentifier</key><string>com.example.Notes</string><key>BatonTeamIdentifier</key><string>TEAMN</string>"
                    + "<key>NSUserActivityTypes</key><array><string>notes.edit</string></array>"
            )
        )
        try factory.desktop(
            "org.example.NotesGtk.desktop",
            "Type=Application\nName=Notes (GTK)\nExec=recipes %f\nMimeType=text/x-note;\nX-Baton-TeamIdentifier=TEAMN\n"
                + "X-Baton-ActivityTypes=notes.edit;notes.read;\nX-Baton-DocumentActivityType=notes.document"
        )
        try factory.desktop("org.other.Copy.desktop", "Type=Application\nName=Copy\nExec=recipes\nX-Baton-TeamIdentifier=TEAMX\nX-Baton-ActivityTypes=notes.edit;")
        try factory.desktop("org.example.Recipes.desktop", DesktopFactory.recipes("X-Baton-AssociatedDomains=applinks:recipes.example;"))
        let registry = AppRegistry.load(searchPaths: [bundles.root.appendingPathComponent("apps"), factory.user], programSearchPath: [factory.bin.path])
        #expect(registry.problems.isEmpty)
        #expect(registry.apps.map(\.kind) == [.bundle, .desktopFile, .desktopFile, .desktopFile])
        return registry
    }

    @Test("D1: a bundle's activity continues in a desktop-file app of its team that claims the type, and back")
    func acrossKinds() throws {
        let router = ActivityRouter(registry: try Self.registry())

        // Made by the Swift app, claimed only by the GTK app.
        let read = router.route(RouteRequest(activityType: "notes.read", teamIdentifier: "TEAMN", originBundleIdentifier: "com.example.Notes"))
        #expect(read.target == .app(bundleIdentifier: "org.example.NotesGtk"))
        #expect(read.reason.contains("X-Baton-ActivityTypes (D1)"))
        // Both claim notes.edit: the app that made it wins, of either kind (D4's origin rule), else the bundle.
        let fromGtk = router.route(RouteRequest(activityType: "notes.edit", teamIdentifier: "TEAMN", originBundleIdentifier: "org.example.NotesGtk"))
        #expect(fromGtk.target == .app(bundleIdentifier: "org.example.NotesGtk"))
        #expect(fromGtk.reason.contains("the same app created it"))
        let fromSwift = router.route(RouteRequest(activityType: "notes.edit", teamIdentifier: "TEAMN", originBundleIdentifier: "com.example.Notes"))
        #expect(fromSwift.target == .app(bundleIdentifier: "com.example.Notes"))
        let fromElsewhere = router.route(RouteRequest(activityType: "notes.edit", teamIdentifier: "TEAMN", originBundleIdentifier: "com.example.NotesPhone"))
        #expect(fromElsewhere.target == .app(bundleIdentifier: "com.example.Notes"))
        #expect(fromElsewhere.reason.contains("also claimed by org.example.NotesGtk"))
        // B5: the desktop file's document activity type is a claim too.
        let document = router.route(RouteRequest(activityType: "notes.document", teamIdentifier: "TEAMN"))
        #expect(document.target == .app(bundleIdentifier: "org.example.NotesGtk"))
        #expect(document.reason.contains("a document type (B5)"))
    }

    @Test("D3: a desktop-file app of another team never receives the activity, whatever it claims")
    func otherTeam() throws {
        let router = ActivityRouter(registry: try Self.registry())
        for origin in ["com.example.Notes", "org.example.NotesGtk", "org.other.Copy"] {
            let decision = router.route(RouteRequest(activityType: "notes.edit", teamIdentifier: "TEAMN", originBundleIdentifier: origin))
            #expect(decision.target != .app(bundleIdentifier: "org.other.Copy"))
        }
        #expect(router.route(RouteRequest(activityType: "notes.edit", teamIdentifier: "TEAMX")).target == .app(bundleIdentifier: "org.other.Copy"))
        #expect(router.route(RouteRequest(activityType: "notes.read", teamIdentifier: "TEAMX")).target == .nothing)
    }

    @Test("E3: a web page goes to the desktop-file app whose X-Baton-AssociatedDomains the site approves, with empty userInfo")
    func webToDesktopApp() throws {
        let registry = try Self.registry()
        #expect(registry.app(bundleIdentifier: "org.example.Recipes")?.applicationIdentifier == "TEAMR.org.example.Recipes")
        let page = try #require(URL(string: "https://recipes.example/r/42"))
        let request = RouteRequest(activityType: AppRecord.browsingWebActivityType, webpageURL: page)

        let approving = #"{"applinks": {"details": [{"appIDs": ["TEAMR.org.example.Recipes"], "components": [{"/": "/r/*"}]}]}}"#
        let approved = ActivityRouter(registry: registry, approvals: DomainApprovals(["recipes.example": try AppSiteAssociation(json: Data(approving.utf8))]))
            .route(request)
        #expect(approved.target == .app(bundleIdentifier: "org.example.Recipes"))
        #expect(approved.emptiesUserInfo && approved.deliveredActivityType == AppRecord.browsingWebActivityType)

        // E4: a site that does not name the app keeps the page in the browser.
        let other = #"{"applinks": {"details": [{"appIDs": ["TEAMR.org.example.Other"], "components": [{"/": "/r/*"}]}]}}"#
        let refused = ActivityRouter(registry: registry, approvals: DomainApprovals(["recipes.example": try AppSiteAssociation(json: Data(other.utf8))]))
            .route(request)
        #expect(refused.target == .browser(bundleIdentifier: nil, url: page))
    }
}
