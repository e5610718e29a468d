import BatonRegistry
import Foundation
import Testing

/// Builds app bundles in a temporary folder from real files, copied unchanged.
struct BundleFactory {
    let root: URL

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-apps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: root) }

    static let realWorld: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("shared/realworld")
    }()

    static func realFile(_ folder: String, _ prefix: String) throws -> URL {
        let directory = realWorld.appendingPathComponent(folder)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        let name = try #require(names.first { $0.hasPrefix(prefix) }, "no \(prefix)* in \(directory.path)")
        return directory.appendingPathComponent(name)
    }

    /// `Name.app/` with the Info.plist (copied or written), optional entitlements, and an executable.
    @discardableResult
    func bundle(
        _ name: String,
        in folder: String = "apps",
        info: URL? = nil,
        infoText: String? = nil,
        entitlements: URL? = nil,
        entitlementsText: String? = nil,
        executable: String? = nil
    ) throws -> URL {
        let url = root.appendingPathComponent(folder).appendingPathComponent("\(name).app")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let infoURL = url.appendingPathComponent("Info.plist")
        if let info { try FileManager.default.copyItem(at: info, to: infoURL) }
        if let infoText { try Data(infoText.utf8).write(to: infoURL) }
        let entitlementsURL = url.appendingPathComponent("\(name).entitlements")
        if let entitlements { try FileManager.default.copyItem(at: entitlements, to: entitlementsURL) }
        if let entitlementsText { try Data(entitlementsText.utf8).write(to: entitlementsURL) }
        let exe = url.appendingPathComponent(executable ?? name)
        try Data("#!/bin/sh\nexit 0\n".utf8).write(to: exe)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: exe.path)
        return url
    }

    static func plist(_ body: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict>\(body)</dict></plist>
        """
    }
}

@Suite("App bundles from real Info.plist and entitlements files")
struct AppBundleTests {
    static let expectedTypes: [(String, [String])] = [
        ("Automattic", ["AppendNoteIntent", "CopyNoteContentIntent", "CreateNewNoteIntent", "FindNoteIntent", "FindNoteWithTagIntent",
            "ListWidgetIntent", "NoteWidgetIntent", "OpenNewNoteIntent", "OpenNoteIntent", "com.codality.NotationalFlow.launch",
            "com.codality.NotationalFlow.newNote", "com.codality.NotationalFlow.openNote"]),
        ("Dimillian", ["INSendMessageIntent"]),
        ("Ranchero-Software__NetNewsWire__Mac", ["ReadArticle"]),
        ("Ranchero-Software__NetNewsWire__iOS", ["NextUnread", "ReadArticle", "Restoration", "SelectFeed"]),
        ("coteditor", []),
        ("duckduckgo", ["ConfigurationIntent"]),
        ("home-assistant", ["com.apple.corespotlightitem", "INSendMessageIntent", "ReloadWidgetsAppIntent", "ScriptAppIntent"]),
        ("mastodon", ["FollowersCountIntent", "HashtagIntent", "LatestFollowersIntent", "MultiFollowersCountIntent", "SendPostIntent"]),
        ("mozilla-mobile", []),
        ("tomaskraina", ["com.myapp.view-document"]),
        ("vincode-io", ["AddOutlineIntent", "AddOutlineTagIntent", "AddRowsIntent", "CopyRowsIntent", "EditOutlineIntent",
            "EditRowsIntent", "ExportIntent", "GetCurrentOutlineIntent", "GetCurrentTagsIntent", "GetImagesForOutlineIntent",
            "GetOutlinesIntent", "GetRowsIntent", "ImportIntent", "MoveRowsIntent", "RemoveOutlineIntent",
            "RemoveOutlineTagIntent", "RemoveRowsIntent", "ShowOutlineIntent", "io.vincode.Zavala.newWindow",
            "io.vincode.Zavala.restoration", "io.vincode.Zavala.selectingDocument",
            "io.vincode.Zavala.selectingDocumentContainer", "io.vincode.Zavala.viewImage"]),
    ]

    @Test("every real Info.plist loads unchanged, with its activity types", arguments: 0..<11)
    func realInfoPlists(index: Int) throws {
        let (prefix, types) = Self.expectedTypes[index]
        let factory = try BundleFactory()
        defer { factory.remove() }
        let url = try factory.bundle("Real", info: try BundleFactory.realFile("infoplists", prefix))
        let app = try AppBundleLoader.load(url)
        #expect(app.activityTypes == types)
        // Source-tree files keep $(PRODUCT_BUNDLE_IDENTIFIER) (or leave it to Xcode): reported, not invented.
        #expect(!app.isIdentityResolved)
        #expect(app.warnings.contains { $0.key == "CFBundleIdentifier" && $0.message.contains("$(PRODUCT_BUNDLE_IDENTIFIER)") })
        // $(EXECUTABLE_NAME) resolves from the bundle's own name, as Xcode's default does.
        #expect(app.executableURL?.lastPathComponent == "Real")
    }

    @Test("with the packager's build settings, the identity and document types resolve (B5)")
    func buildSettings() throws {
        let factory = try BundleFactory()
        defer { factory.remove() }
        let url = try factory.bundle("CotEditor", info: try BundleFactory.realFile("infoplists", "coteditor"))
        let app = try AppBundleLoader.load(
            url,
            buildSettings: ["PRODUCT_BUNDLE_IDENTIFIER": "com.coteditor.CotEditor", "DEVELOPMENT_TEAM": "HT23XAB4R9"]
        )
        #expect(app.bundleIdentifier == "com.coteditor.CotEditor")
        #expect(app.documentActivityTypes == ["com.coteditor.CotEditor.editing"])
        #expect(app.activityTypes.isEmpty)
        #expect(app.claimedActivityTypes == ["com.coteditor.CotEditor.editing"])
        #expect(app.warnings.allSatisfy { $0.key != "CFBundleIdentifier" && $0.key != "CFBundleDocumentTypes" })
    }

    @Test("two document types sharing one activity type claim it once (B5)")
    func sharedDocumentType() throws {
        let factory = try BundleFactory()
        defer { factory.remove() }
        let url = try factory.bundle("QuickNote", info: try BundleFactory.realFile("infoplists", "tomaskraina"))
        let app = try AppBundleLoader.load(url)
        #expect(app.documentActivityTypes == ["com.myapp.view-document"])
        #expect(app.claimedActivityTypes == ["com.myapp.view-document"])
    }

    @Test("focus-ios declares NSUserActivityTypes as a dict: a warning naming the key, the rest loads")
    func wronglyTypedKey() throws {
        let factory = try BundleFactory()
        defer { factory.remove() }
        let url = try factory.bundle("Focus", info: try BundleFactory.realFile("infoplists", "mozilla-mobile"))
        let app = try AppBundleLoader.load(url)
        #expect(app.activityTypes.isEmpty)
        let warning = try #require(app.warnings.first { $0.key == "NSUserActivityTypes" })
        #expect(warning.message.contains("found a dict"))
        #expect(app.name == "$(PRODUCT_NAME)" || !app.name.isEmpty)
    }

    @Test("real entitlements: associated domains, wildcards, and the team from application-identifier")
    func realEntitlements() throws {
        let factory = try BundleFactory()
        defer { factory.remove() }
        let info = BundleFactory.plist("<key>CFBundleIdentifier</key><string>io.wwdc.app</string>")
        let wwdc = try AppBundleLoader.load(
            try factory.bundle("WWDC", infoText: info, entitlements: try BundleFactory.realFile("entitlements", "insidegui"))
        )
        #expect(wwdc.associatedDomains.map(\.description) == ["applinks:wwdc.io", "activitycontinuation:wwdc.io"])

        let home = try AppBundleLoader.load(
            try factory.bundle("Home", infoText: info, entitlements: try BundleFactory.realFile("entitlements", "home-assistant"))
        )
        #expect(home.associatedDomains.map(\.description) == ["applinks:home-assistant.io", "applinks:*.home-assistant.io", "applinks:my.home-assistant.io"])
        #expect(home.associatedDomains[1].isWildcard)

        let mastodon = try AppBundleLoader.load(
            try factory.bundle("Mastodon", infoText: info, entitlements: try BundleFactory.realFile("entitlements", "mastodon"))
        )
        #expect(mastodon.associatedDomains.map(\.host) == ["mastodon.social", "mastodon.online"])

        let simplenote = try AppBundleLoader.load(
            try factory.bundle("Simplenote", infoText: info, entitlements: try BundleFactory.realFile("entitlements", "Automattic"))
        )
        #expect(simplenote.associatedDomains.map(\.description) == ["webcredentials:simplenote.com", "applinks:app.simplenote.com"])

        let withTeam = try AppBundleLoader.load(
            try factory.bundle(
                "Teamed",
                infoText: info,
                entitlementsText: BundleFactory.plist(
                    "<key>application-identifier</key><string>$(AppIdentifierPrefix)io.wwdc.app</string>"
                        + "<key>com.apple.developer.team-identifier</key><string>8C7439RJLG</string>"
                )
            )
        )
        #expect(withTeam.teamIdentifier == "8C7439RJLG")
    }

    @Test("BatonTeamIdentifier gives the team, and with it $(TeamIdentifierPrefix) and $(AppIdentifierPrefix)")
    func teamFromInfoPlist() throws {
        let factory = try BundleFactory()
        defer { factory.remove() }
        let url = try factory.bundle(
            "ShopSnap",
            infoText: BundleFactory.plist(
                """
                <key>CFBundleIdentifier</key><string>com.razeware.ShopSnap</string>
                <key>CFBundleExecutable</key><string>shopsnap</string>
                <key>BatonTeamIdentifier</key><string>RAZEWARE01</string>
                <key>NSUserActivityTypes</key><array>
                  <string>$(TeamIdentifierPrefix)shopsnap.view</string><string>com.razeware.shopsnap.edit</string>
                  <integer>3</integer><string>com.razeware.shopsnap.edit</string>
                </array>
                """
            ),
            executable: "shopsnap"
        )
        let app = try AppBundleLoader.load(url)
        #expect(app.isIdentityResolved)
        #expect(app.teamIdentifier == "RAZEWARE01")
        #expect(app.applicationIdentifier == "RAZEWARE01.com.razeware.ShopSnap")
        #expect(app.activityTypes == ["RAZEWARE01.shopsnap.view", "com.razeware.shopsnap.edit"])
        #expect(app.warnings.map(\.description) == ["NSUserActivityTypes: element 2 is a integer, not a string; ignored"])
        #expect(app.executableURL?.lastPathComponent == "shopsnap")
    }

    @Test("a bundle without Info.plist, or with a broken one, is an error with its path")
    func badBundles() throws {
        let factory = try BundleFactory()
        defer { factory.remove() }
        let empty = try factory.bundle("Empty")
        let missing = #expect(throws: BatonRegistryError.self) { try AppBundleLoader.load(empty) }
        #expect(missing?.code == .bundleUnreadable)
        #expect(missing?.message.contains(empty.path) == true)

        let broken = try factory.bundle("Broken", infoText: "<plist><dict><key>x</key></dict>")
        let invalid = #expect(throws: BatonRegistryError.self) { try AppBundleLoader.load(broken) }
        #expect(invalid?.code == .invalidInfoPlist)
        #expect(invalid?.message.contains("line 1") == true)

        let array = try factory.bundle("Array", infoText: "<plist><array/></plist>")
        #expect(throws: BatonRegistryError.self) { try AppBundleLoader.load(array) }
    }

    @Test("issue 25 item 11: an empty Info.plist or entitlements file is refused unread, with its path and why (the fuzzer's leak)")
    func emptyFiles() throws {
        let factory = try BundleFactory()
        defer { factory.remove() }
        // The bundles fuzzer's first finding: reading an empty file leaked Foundation's 4 KiB buffer, once per load.
        let emptyInfo = try factory.bundle("EmptyInfo", infoText: "")
        let error = #expect(throws: BatonRegistryError.self) { try AppBundleLoader.load(emptyInfo) }
        #expect(error?.code == .invalidInfoPlist)
        #expect(error?.message == "\(emptyInfo.appendingPathComponent("Info.plist").path): empty (0 bytes), not a property list")

        let emptyEntitlements = try factory.bundle(
            "EmptyEntitlements", infoText: BundleFactory.plist("<key>BatonTeamIdentifier</key><string>TEAM</string>"), entitlementsText: ""
        )
        let app = try AppBundleLoader.load(emptyEntitlements)
        #expect(app.teamIdentifier == "TEAM")
        #expect(app.warnings.map(\.description).contains { $0.hasPrefix("entitlements ignored: ") && $0.hasSuffix("empty (0 bytes), not a property list") })
    }
}

@Suite("Build variables")
struct BuildVariablesTests {
    @Test("$(NAME), ${NAME} and modifiers expand; unknown names stay and are reported")
    func expansion() {
        let variables = BuildVariables(["PRODUCT_NAME": "Shop Snap", "ID": "com.example.app"])
        #expect(variables.expand("$(ID).editing").text == "com.example.app.editing")
        #expect(variables.expand("${PRODUCT_NAME}").text == "Shop Snap")
        #expect(variables.expand("$(PRODUCT_NAME:rfc1034identifier)").text == "Shop-Snap")
        #expect(variables.expand("$(PRODUCT_NAME:c99extidentifier)").text == "Shop_Snap")
        let unknown = variables.expand("group.$(BUNDLE_ID_PREFIX).x$(BUNDLE_ID_SUFFIX)")
        #expect(unknown.text == "group.$(BUNDLE_ID_PREFIX).x$(BUNDLE_ID_SUFFIX)")
        #expect(unknown.unresolved == ["BUNDLE_ID_PREFIX", "BUNDLE_ID_SUFFIX"])
        #expect(variables.expand("cost: $5 and $(").text == "cost: $5 and $(")
    }
}

@Suite("Associated-domain entries")
struct AssociatedDomainTests {
    @Test("service:domain with wildcards, ports and modes")
    func parsing() throws {
        let plain = try #require(AssociatedDomain("activitycontinuation:Example.com"))
        #expect(plain.service == .activityContinuation && plain.host == "example.com" && !plain.isWildcard)
        let wildcard = try #require(AssociatedDomain("applinks:*.example.com?mode=developer"))
        #expect(wildcard.isWildcard && wildcard.mode == "developer" && wildcard.host == "example.com")
        let port = try #require(AssociatedDomain("applinks:example.com:8443"))
        #expect(port.port == 8443)
        for bad in ["example.com", "applinks:", ":example.com", "applinks:exa mple.com", "applinks:example.com:99999", "applinks:.com"] {
            #expect(AssociatedDomain(bad) == nil, "\(bad)")
        }
    }

    @Test("a wildcard matches subdomains at any depth, not the domain itself; exact beats wildcard")
    func matching() throws {
        let wildcard = try #require(AssociatedDomain("applinks:*.example.com"))
        let exact = try #require(AssociatedDomain("applinks:shop.example.com"))
        #expect(wildcard.matchLength(host: "shop.example.com") != nil)
        #expect(wildcard.matchLength(host: "a.b.example.com") != nil)
        #expect(wildcard.matchLength(host: "example.com") == nil)
        #expect(wildcard.matchLength(host: "badexample.com") == nil)
        #expect(try #require(exact.matchLength(host: "SHOP.example.com")) > (wildcard.matchLength(host: "shop.example.com") ?? 0))
    }
}

@Suite("An app's executable stays inside its bundle (issue 10 item 9)")
struct BundleExecutableTests {
    static func info(executable: String) -> String {
        BundleFactory.plist(
            """
            <key>CFBundleIdentifier</key><string>com.example.escape</string>
            <key>BatonTeamIdentifier</key><string>TEAM</string>
            <key>CFBundleExecutable</key><string>\(executable)</string>
            """
        )
    }

    /// Loads a bundle whose Info.plist names `executable`, after `prepare` has set up its files.
    static func load(_ executable: String, prepare: (URL) throws -> Void = { _ in }) throws -> (AppRecord, URL, BundleFactory) {
        let factory = try BundleFactory()
        let url = try factory.bundle("Escape", infoText: info(executable: executable))
        try prepare(url)
        return (try AppBundleLoader.load(url), url, factory)
    }

    static func makeExecutable(_ url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("#!/bin/sh\nexit 0\n".utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
    }

    static func executableWarnings(_ app: AppRecord) -> [String] {
        app.warnings.filter { $0.key == "CFBundleExecutable" }.map(\.message)
    }

    @Test("issue 10 item 9: ../../../../bin/sh is refused, with a warning naming the key and the value")
    func parentComponents() throws {
        let (app, _, factory) = try Self.load("../../../../bin/sh")
        defer { factory.remove() }
        #expect(app.executableURL == nil)
        let warnings = Self.executableWarnings(app)
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("\"../../../../bin/sh\" leads outside the bundle") == true, "\(warnings)")
        #expect(app.warnings.contains { $0.description.hasPrefix("CFBundleExecutable: \"../../../../bin/sh\"") })
    }

    @Test("issue 10 item 9: an absolute /bin/sh is refused")
    func absolutePath() throws {
        let (app, _, factory) = try Self.load("/bin/sh")
        defer { factory.remove() }
        #expect(app.executableURL == nil)
        #expect(Self.executableWarnings(app).first?.contains("\"/bin/sh\" leads outside the bundle") == true)
    }

    @Test("issue 10 item 9: a folder of the bundle that is a link leading out is refused; a link the person put in the bundle as the executable is followed")
    func symlinks() throws {
        let (viaFolder, _, folderFactory) = try Self.load("sh") { url in
            try FileManager.default.createDirectory(at: url.appendingPathComponent("Contents"), withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: url.appendingPathComponent("Contents/MacOS").path, withDestinationPath: "/bin")
        }
        defer { folderFactory.remove() }
        #expect(viaFolder.executableURL == nil)
        let warning = try #require(Self.executableWarnings(viaFolder).first)
        #expect(warning.contains("is in a folder that resolves to") && warning.contains("outside the bundle"), "\(warning)")

        // A development build registered by a link (Examples/ShopSnap.app/shopsnap -> ../../.build/debug/shopsnap).
        let (linked, url, factory) = try Self.load("run") { url in
            try FileManager.default.createSymbolicLink(atPath: url.appendingPathComponent("run").path, withDestinationPath: "/bin/sh")
        }
        defer { factory.remove() }
        #expect(linked.executableURL?.path == url.appendingPathComponent("run").path)
        #expect(Self.executableWarnings(linked).isEmpty)
    }

    @Test("issue 10 item 9: a symlink in the bundle pointing to another file in the bundle is accepted")
    func symlinkInside() throws {
        let (app, url, factory) = try Self.load("run") { url in
            try Self.makeExecutable(url.appendingPathComponent("Contents/MacOS/real"))
            try FileManager.default.createSymbolicLink(atPath: url.appendingPathComponent("run").path, withDestinationPath: "Contents/MacOS/real")
        }
        defer { factory.remove() }
        #expect(app.executableURL?.path == url.appendingPathComponent("run").path)
        #expect(Self.executableWarnings(app).isEmpty)
        #expect(app.isIdentityResolved)
    }

    @Test("issue 10 item 9: a normal executable, flat or in Contents/MacOS, is accepted")
    func normalExecutable() throws {
        let (flat, url, factory) = try Self.load("Escape")
        defer { factory.remove() }
        #expect(flat.executableURL?.path == url.appendingPathComponent("Escape").path)
        #expect(Self.executableWarnings(flat).isEmpty)

        let (mac, macURL, macFactory) = try Self.load("Mac") { url in
            try Self.makeExecutable(url.appendingPathComponent("Contents/MacOS/Mac"))
        }
        defer { macFactory.remove() }
        #expect(mac.executableURL?.path == macURL.appendingPathComponent("Contents/MacOS/Mac").path)
        #expect(Self.executableWarnings(mac).isEmpty)
    }
}

@Suite("Registry messages quote input briefly (issue 10 item 10)")
struct RegistryQuotingTests {
    static let huge = String(repeating: "a", count: 2 << 20)

    @Test("issue 10 item 10: a 2 MB activity type, executable or associated domain, or a huge AASA key, gives short warnings and errors")
    func hugeEntries() throws {
        let factory = try BundleFactory()
        defer { factory.remove() }
        // Info.plist and entitlements files are capped at 4 MB, so each bundle holds one 2 MB value.
        func load(_ name: String, info: String, entitlements: String? = nil) throws -> AppRecord {
            let body = "<key>CFBundleIdentifier</key><string>com.example.\(name)</string>"
                + "<key>BatonTeamIdentifier</key><string>TEAM</string>" + info
            return try AppBundleLoader.load(
                try factory.bundle(name, infoText: BundleFactory.plist(body), entitlementsText: entitlements.map(BundleFactory.plist))
            )
        }
        let types = try load(
            "Types",
            info: "<key>NSUserActivityTypes</key><array><string>com.example.view</string><string>\(Self.huge)</string></array>"
        )
        #expect(types.activityTypes == ["com.example.view"])
        #expect(types.warnings.filter { $0.key == "NSUserActivityTypes" }.count == 1)

        let variable = try load("Variable", info: "<key>NSUserActivityTypes</key><array><string>$(\(Self.huge))</string></array>")
        #expect(variable.warnings.contains { $0.key == "NSUserActivityTypes" && $0.message.contains("unresolved build variable") })

        let domains = try load(
            "Domains",
            info: "",
            entitlements: "<key>com.apple.developer.associated-domains</key>"
                + "<array><string>applinks:\(Self.huge)</string><string>applinks:example.com</string></array>"
        )
        #expect(domains.associatedDomains.map(\.description) == ["applinks:example.com"])
        #expect(domains.warnings.filter { $0.key == "com.apple.developer.associated-domains" }.count == 1)

        let executable = try load("Executable", info: "<key>CFBundleExecutable</key><string>\(Self.huge)</string>")
        #expect(executable.executableURL == nil)
        #expect(executable.warnings.contains { $0.key == "CFBundleExecutable" })

        for warning in types.warnings + variable.warnings + domains.warnings + executable.warnings {
            #expect(warning.description.unicodeScalars.count < 300, "\(warning.description.prefix(400))")
        }

        // Association files are capped at 128 KB, so the hostile key is as large as the cap allows.
        let key = String(repeating: "b", count: AppSiteAssociation.maximumSize - 100)
        let aasa = #expect(throws: BatonRegistryError.self) {
            try AppSiteAssociation(json: Data(#"{"applinks": {"details": {"\#(key)": 1}}}"#.utf8))
        }
        #expect(aasa?.code == .invalidAssociationFile)
        #expect((aasa?.description.unicodeScalars.count ?? .max) < 300)
        let noted = try AppSiteAssociation(json: Data(#"{"applinks": {"details": [{"appIDs": ["T.a"], "components": [{"\#(key)": 1}]}]}}"#.utf8))
        #expect(noted.notes.count == 1 && noted.notes.allSatisfy { $0.unicodeScalars.count < 300 })
    }
}
