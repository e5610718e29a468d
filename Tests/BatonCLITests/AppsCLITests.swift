import BatonTestSupport
import Foundation
import Testing

@Suite("baton apps and baton aasa")
struct AppsCLITests {
    /// A folder with a ShopSnap bundle, a broken bundle, and focus-ios' real Info.plist.
    static func makeApps() throws -> URL {
        let root = try Baton.temporaryDirectory()
        let shop = root.appendingPathComponent("ShopSnap.app")
        try FileManager.default.createDirectory(at: shop, withIntermediateDirectories: true)
        try Data(
            """
            <plist version="1.0"><dict>
            <key>CFBundleIdentifier</key><string>com.razeware.ShopSnap</string>
            <key>CFBundleExecutable</key><string>shopsnap</string>
            <key>BatonTeamIdentifier</key><string>RAZE</string>
            <key>NSUserActivityTypes</key><array><string>com.razeware.shopsnap.view</string></array>
            </dict></plist>
            """.utf8
        ).write(to: shop.appendingPathComponent("Info.plist"))
        try Data(
            """
            <plist version="1.0"><dict><key>com.apple.developer.associated-domains</key>
            <array><string>activitycontinuation:shopsnap.example</string></array></dict></plist>
            """.utf8
        ).write(to: shop.appendingPathComponent("ShopSnap.entitlements"))
        let executable = shop.appendingPathComponent("shopsnap")
        try Data("#!/bin/sh\n".utf8).write(to: executable)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: executable.path)

        let broken = root.appendingPathComponent("Broken.app")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try Data("<plist><dict>".utf8).write(to: broken.appendingPathComponent("Info.plist"))

        let focus = root.appendingPathComponent("Focus.app")
        try FileManager.default.createDirectory(at: focus, withIntermediateDirectories: true)
        let focusInfo = try FileManager.default.contentsOfDirectory(atPath: Baton.realWorld.appendingPathComponent("infoplists").path)
            .first { $0.hasPrefix("mozilla-mobile") } ?? ""
        try FileManager.default.copyItem(
            at: Baton.realWorld.appendingPathComponent("infoplists/\(focusInfo)"),
            to: focus.appendingPathComponent("Info.plist")
        )
        return root
    }

    @Test("apps list shows each app, and each bundle that did not load with why")
    func list() async throws {
        try await startingProcesses {
            let root = try Self.makeApps()
            defer { try? FileManager.default.removeItem(at: root) }
            let result = try Baton.run("apps", "list", "--apps-path", root.path)
            #expect(result.status == 0, "\(result.output)")
            #expect(result.stdout.contains("com.razeware.ShopSnap  team RAZE  1 activity type"))
            #expect(result.stdout.contains("not loaded: \(root.path)/Broken.app"))
            #expect(result.stdout.contains("[invalidInfoPlist]"))
            let json = try Baton.run("apps", "list", "--apps-path", root.path, "--json")
            #expect(json.stdout.contains("\"bundleIdentifier\" : \"com.razeware.ShopSnap\""))
        }
    }

    @Test("issue 28 item 2: apps list shows a desktop-file app with its kind, inspect reads its desktop file, doctor counts it")
    func desktopFile() async throws {
        try await startingProcesses {
            let root = try Self.makeApps()
            defer { try? FileManager.default.removeItem(at: root) }
            let file = root.appendingPathComponent("org.example.Recipes.desktop")
            try Data(
                "[Desktop Entry]\nType=Application\nName=Recipes\nExec=sh %U\nX-Baton-TeamIdentifier=RAZE\nX-Baton-ActivityTypes=com.razeware.shopsnap.view;;\nX-Baton-AssociatedDomains=shopsnap.example\n"
                    .utf8
            ).write(to: file)
            let list = try Baton.run("apps", "list", "--apps-path", root.path)
            #expect(list.status == 0, "\(list.output)")
            #expect(list.stdout.contains("com.razeware.ShopSnap  team RAZE  1 activity type  bundle  "), "\(list.output)")
            #expect(list.stdout.contains("org.example.Recipes  team RAZE  1 activity type, 1 warning  desktop-file  \(file.path)"), "\(list.output)")
            let json = try Baton.run("apps", "list", "--apps-path", root.path, "--json")
            #expect(json.stdout.contains("\"kind\" : \"desktop-file\""), "\(json.output)")
            let inspect = try Baton.run("apps", "inspect", file.path)
            #expect(inspect.status == 0, "\(inspect.output)")
            #expect(inspect.stdout.contains("kind               desktop-file"))
            #expect(inspect.stdout.contains("warning: X-Baton-AssociatedDomains: \"shopsnap.example\" is not service:domain; ignored"), "\(inspect.output)")
            // Both apps of team RAZE claim the type: the one that made it continues it (D1, D4).
            let route = try Baton.run("apps", "route", "--apps-path", root.path, "--type", "com.razeware.shopsnap.view", "--team", "RAZE", "--origin", "org.example.Recipes")
            #expect(route.stdout.hasPrefix("app org.example.Recipes: team RAZE claims com.razeware.shopsnap.view in X-Baton-ActivityTypes (D1)"), "\(route.output)")
        }
    }

    @Test("apps inspect names the focus-ios key that has the wrong type")
    func inspect() async throws {
        try await startingProcesses {
            let root = try Self.makeApps()
            defer { try? FileManager.default.removeItem(at: root) }
            let result = try Baton.run("apps", "inspect", root.appendingPathComponent("Focus.app").path)
            #expect(result.status == 0)
            #expect(result.stdout.contains("warning: NSUserActivityTypes: should be an array of strings, found a dict"))
            let resolved = try Baton.run(
                "apps", "inspect", root.appendingPathComponent("Focus.app").path, "--build-setting", "PRODUCT_BUNDLE_IDENTIFIER=org.mozilla.ios.Klar", "--json"
            )
            #expect(resolved.stdout.contains("\"bundleIdentifier\" : \"org.mozilla.ios.Klar\""))
            let missing = try Baton.run("apps", "inspect", root.appendingPathComponent("Nope.app").path)
            #expect(missing.status != 0 && missing.stderr.contains("[bundleUnreadable]"))
        }
    }

    @Test("apps route: the team's app, another team's nothing, a web page to the approved app")
    func route() async throws {
        try await startingProcesses {
            let root = try Self.makeApps()
            defer { try? FileManager.default.removeItem(at: root) }
            let same = try Baton.run("apps", "route", "--apps-path", root.path, "--type", "com.razeware.shopsnap.view", "--team", "RAZE")
            #expect(same.stdout.hasPrefix("app com.razeware.ShopSnap: team RAZE claims com.razeware.shopsnap.view"))
            let other = try Baton.run("apps", "route", "--apps-path", root.path, "--type", "com.razeware.shopsnap.view", "--team", "EVIL")
            #expect(other.stdout.hasPrefix("nothing: no app of team EVIL claims"))
            let file = root.appendingPathComponent("aasa.json")
            try Data(#"{"activitycontinuation": {"apps": ["RAZE.com.razeware.ShopSnap"]}}"#.utf8).write(to: file)
            let web = try Baton.run(
                "apps", "route", "--apps-path", root.path, "--type", "NSUserActivityTypeBrowsingWeb",
                "--url", "https://shopsnap.example/lists/1", "--association", "shopsnap.example=\(file.path)", "--json"
            )
            #expect(web.stdout.contains("\"bundleIdentifier\" : \"com.razeware.ShopSnap\""))
            #expect(web.stdout.contains("\"emptiesUserInfo\" : true"))
        }
    }

    @Test("aasa check reports per app and service, with reasons")
    func aasaCheck() async throws {
        try await startingProcesses {
            let file = Baton.realWorld.appendingPathComponent("aasa/wikimedia__operations-mediawiki-config__testwiki_apple-app-site-association.json")
            let result = try Baton.run("aasa", "check", file.path, "--url", "https://test.wikipedia.org/wiki/Special:Random", "--app", "AKK7J2GV64.org.wikimedia.wikipedia")
            #expect(result.status == 0, "\(result.output)")
            #expect(result.stdout.contains("AKK7J2GV64.org.wikimedia.wikipedia  activitycontinuation  approved"))
            #expect(result.stdout.contains("AKK7J2GV64.org.wikimedia.wikipedia  applinks  not approved  (applinks.details[0].components[1] (Exclude Special: pages) excludes the URL)"))
            let all = try Baton.run("aasa", "check", file.path, "--url", "https://test.wikipedia.org/wiki/Cat", "--json")
            #expect(all.stdout.components(separatedBy: "\"service\"").count - 1 == 20)
        }
    }
}

@Suite("baton aasa check on signed files")
struct SignedAasaCLITests {
    @Test("a file signed with openssl verifies for its domain and is refused for another", .requires(.openssl))
    func signed() async throws {
        try await startingProcesses {
            let directory = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try Data(#"{"activitycontinuation": {"apps": ["RAZE.com.razeware.ShopSnap"]}}"#.utf8).write(to: directory.appendingPathComponent("aasa.json"))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.currentDirectoryURL = directory
            process.arguments = [
                "-e", "-c",
                """
                printf 'subjectAltName=DNS:shopsnap.example\\nbasicConstraints=CA:FALSE\\n' > leaf.ext
                openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 5 -subj "/CN=CLI Test CA" 2>/dev/null
                openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj "/CN=shopsnap.example" 2>/dev/null
                openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 5 -extfile leaf.ext -out leaf.pem 2>/dev/null
                openssl smime -sign -in aasa.json -inkey leaf.key -signer leaf.pem -noattr -nodetach -outform DER -out signed
                """,
            ]
            try process.run()
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "openssl could not make the test files")
            let signed = directory.appendingPathComponent("signed").path
            let roots = directory.appendingPathComponent("ca.pem").path
            let good = try Baton.run("aasa", "check", signed, "--url", "https://shopsnap.example/", "--trust-roots", roots)
            #expect(good.status == 0, "\(good.output)")
            #expect(good.stdout.contains("signature: valid, signed for shopsnap.example"))
            #expect(good.stdout.contains("RAZE.com.razeware.ShopSnap  activitycontinuation  approved"))
            let wrong = try Baton.run("aasa", "check", signed, "--url", "https://evil.example/", "--trust-roots", roots)
            #expect(wrong.status != 0)
            #expect(wrong.stderr.contains("[domainMismatch]"))
        }
    }
}
