import BatonRegistry
import Foundation
import Testing

/// Desktop files in a scratch tree: `user/` and `system/` stand for `~/.local/share/applications` and
/// `/usr/share/applications`, `bin/` for the PATH their programs are found on.
struct DesktopFactory {
    let root: URL
    var user: URL { root.appendingPathComponent("user") }
    var system: URL { root.appendingPathComponent("system") }
    var bin: URL { root.appendingPathComponent("bin") }

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-desktop-\(UUID().uuidString)")
        for folder in ["user", "system", "bin"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try program("recipes")
    }

    func remove() { try? FileManager.default.removeItem(at: root) }

    /// An executable script `name` in `bin/`.
    @discardableResult
    func program(_ name: String) throws -> URL {
        let url = bin.appendingPathComponent(name)
        try Data("#!/bin/sh\nexit 0\n".utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        return url
    }

    /// `id` (with `.desktop`) in `folder` holding `[Desktop Entry]` and `lines`.
    @discardableResult
    func desktop(_ id: String, in folder: URL? = nil, _ lines: String) throws -> URL {
        let url = (folder ?? user).appendingPathComponent(id)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("[Desktop Entry]\n\(lines)\n".utf8).write(to: url)
        return url
    }

    /// The registry of `user/` then `system/`, programs found in `bin/`.
    func registry() -> AppRegistry {
        AppRegistry.load(searchPaths: [user, system], programSearchPath: [bin.path])
    }

    /// A Baton app's entry: `Recipes`, team TEAMR, recipe types, `extra` lines after.
    static func recipes(_ extra: String = "") -> String {
        "Type=Application\nName=Recipes\nExec=recipes %U\nX-Baton-TeamIdentifier=TEAMR\nX-Baton-ActivityTypes=org.example.recipes.view;org.example.recipes.cook;\n\(extra)"
    }
}

/// Issue 28 item 2: apps registered by their desktop files' X-Baton-* keys, beside bundles.
@Suite("Issue 28 item 2: apps registered by desktop file")
struct DesktopAppTests {
    @Test("a desktop file with X-Baton-* keys is an app: identity, team, types, documents, domains, executable")
    func goodFile() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        try factory.desktop(
            "org.example.Recipes.desktop",
            DesktopFactory.recipes(
                "Icon=org.example.Recipes\nMimeType=text/x-recipe;application/x-recipe-book;\nX-Baton-DocumentActivityType=org.example.recipes.document\n"
                    + "X-Baton-AssociatedDomains=applinks:recipes.example;activitycontinuation:*.recipes.example;"
            )
        )
        let registry = factory.registry()
        #expect(registry.problems.isEmpty)
        let app = try #require(registry.app(bundleIdentifier: "org.example.Recipes"))
        #expect(app.kind == .desktopFile)
        #expect(app.name == "Recipes")
        #expect(app.teamIdentifier == "TEAMR" && app.isIdentityResolved)
        #expect(app.activityTypes == ["org.example.recipes.view", "org.example.recipes.cook"])
        #expect(app.documentActivityTypes == ["org.example.recipes.document"])
        #expect(app.associatedDomains.map(\.description) == ["applinks:recipes.example", "activitycontinuation:*.recipes.example"])
        #expect(app.executableURL?.path == factory.bin.appendingPathComponent("recipes").path)
        #expect(app.bundleURL.lastPathComponent == "org.example.Recipes.desktop")
        #expect(app.iconFile == "org.example.Recipes")
        #expect(app.warnings.isEmpty)
    }

    @Test("TryExec names the executable; one that is not installed means the app is not (a problem naming TryExec)")
    func tryExec() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        let wrapper = try factory.program("recipes-bin")
        try factory.desktop("org.example.Recipes.desktop", DesktopFactory.recipes("TryExec=\(wrapper.path)"))
        try factory.desktop("org.example.Gone.desktop", DesktopFactory.recipes("TryExec=not-installed-anywhere"))
        // A NUL in the name is no program (stat would read it as "recipes"; found by the desktop-apps fuzzer).
        try factory.desktop("org.example.Nul.desktop", DesktopFactory.recipes("TryExec=recipes\u{0}\u{1}"))
        let registry = factory.registry()
        #expect(registry.app(bundleIdentifier: "org.example.Recipes")?.executableURL?.path == wrapper.path)
        #expect(registry.app(bundleIdentifier: "org.example.Gone") == nil)
        #expect(registry.app(bundleIdentifier: "org.example.Nul") == nil)
        #expect(registry.problems.contains { $0.path.hasSuffix("org.example.Nul.desktop") && $0.reason.contains("which is not installed") })
        #expect(registry.problems.map(\.reason).contains { $0.contains("TryExec names \"not-installed-anywhere\", which is not installed") && $0.contains("[invalidDesktopFile]") })
    }

    @Test("each malformed X-Baton key is a warning naming it; the rest of the file still counts")
    func malformedKeys() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        try factory.desktop("org.example.EmptyTeam.desktop", "Type=Application\nName=A\nExec=recipes\nX-Baton-TeamIdentifier=\nX-Baton-ActivityTypes=a.view;")
        try factory.desktop("org.example.BadTeam.desktop", "Type=Application\nName=B\nExec=recipes\nX-Baton-TeamIdentifier=TEAM R\nX-Baton-ActivityTypes=b.view;")
        try factory.desktop("org.example.NoTeam.desktop", "Type=Application\nName=C\nExec=recipes\nX-Baton-ActivityTypes=c.view;")
        try factory.desktop(
            "org.example.Odd.desktop",
            "Type=Application\nName=D\nExec=missing-program %f\nX-Baton-TeamIdentifier=TEAMD\nX-Baton-ActivityTypes=;\n"
                + "X-Baton-AssociatedDomains=recipes.example;applinks:ok.example\nX-Baton-DocumentActivityType=d.document"
        )
        try factory.desktop("org.example.Escape.desktop", "Type=Application\nName=E\nExec=recipes\nX-Baton-TeamIdentifier=TEAME\nX-Baton-ActivityTypes=e.view;e\\qbad;")
        try factory.desktop("org.example.LongType.desktop", "Type=Application\nName=F\nExec=recipes\nX-Baton-TeamIdentifier=TEAMF\nX-Baton-ActivityTypes=\(String(repeating: "x", count: 2000));f.view")
        let registry = factory.registry()
        #expect(registry.problems.isEmpty)
        func warnings(_ id: String) -> [String] { registry.app(bundleIdentifier: id)?.warnings.map(\.description) ?? ["(not loaded)"] }

        #expect(warnings("org.example.EmptyTeam") == ["X-Baton-TeamIdentifier: is empty; the app continues no activity"])
        #expect(registry.app(bundleIdentifier: "org.example.EmptyTeam")?.isIdentityResolved == false)
        #expect(warnings("org.example.BadTeam").first?.hasPrefix("X-Baton-TeamIdentifier: \"TEAM R\" is not a team identifier") == true)
        #expect(warnings("org.example.NoTeam") == ["X-Baton-TeamIdentifier: missing: the app continues no activity"])
        let odd = warnings("org.example.Odd")
        #expect(odd.contains("X-Baton-ActivityTypes: is empty; ignored"))
        #expect(odd.contains("X-Baton-AssociatedDomains: \"recipes.example\" is not service:domain; ignored"))
        #expect(odd.contains { $0.hasPrefix("X-Baton-DocumentActivityType: is given, but the entry has no MimeType= list") })
        #expect(odd.contains { $0.hasPrefix("Exec: the program \"missing-program\" is not installed") })
        #expect(registry.app(bundleIdentifier: "org.example.Odd")?.associatedDomains.map(\.description) == ["applinks:ok.example"])
        #expect(registry.app(bundleIdentifier: "org.example.Odd")?.executableURL == nil)
        #expect(warnings("org.example.Escape").first?.hasPrefix("X-Baton-ActivityTypes: ") == true)
        #expect(warnings("org.example.LongType").count == 1)
        #expect(warnings("org.example.LongType").first?.hasPrefix("X-Baton-ActivityTypes: \"xxx") == true)
        #expect(registry.app(bundleIdentifier: "org.example.LongType")?.activityTypes == ["f.view"])
    }

    @Test("a desktop file without X-Baton keys is no Baton app: not listed, not a problem, even when malformed")
    func notBaton() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        try factory.desktop("org.gnome.TextEditor.desktop", "Type=Application\nName=Text Editor\nExec=gnome-text-editor %U\nMimeType=text/plain;")
        try factory.desktop("broken.desktop", "this is not a key file\n[[[")
        try factory.desktop("comment.desktop", "Type=Application\nName=C\nExec=recipes\n# X-Baton-TeamIdentifier=TEAMR")
        try factory.desktop("action.desktop", "Type=Application\nName=A\nExec=recipes\n[Desktop Action new]\nName=New\nX-Baton-TeamIdentifier=TEAMR")
        try Data("no group at all".utf8).write(to: factory.user.appendingPathComponent("plain.desktop"))
        try Data("[Desktop Entry]\nType=Application\nName=T\nX-Bat".utf8).write(to: factory.user.appendingPathComponent("truncated.desktop"))
        try Data("[Desktop Entry]\nName=X-Baton-Name\nComment=X\nType=Application\nX".utf8).write(to: factory.user.appendingPathComponent("mid-line.desktop"))
        try Data().write(to: factory.user.appendingPathComponent("empty.desktop"))
        try FileManager.default.createDirectory(at: factory.user.appendingPathComponent("folder.desktop"), withIntermediateDirectories: true)
        let registry = factory.registry()
        #expect(registry.apps.isEmpty)
        #expect(registry.problems.isEmpty)
    }

    @Test("keys indented with spaces or tabs, and CRLF line ends, are read as the key-file syntax reads them")
    func indentedKeys() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        try Data("[Desktop Entry]\r\nType=Application\r\nName=Recipes\r\nExec=recipes\r\n \t X-Baton-TeamIdentifier=TEAMR\r\n\tX-Baton-ActivityTypes=org.example.recipes.view;\r\n".utf8)
            .write(to: factory.user.appendingPathComponent("org.example.Recipes.desktop"))
        let app = try #require(factory.registry().app(bundleIdentifier: "org.example.Recipes"))
        #expect(app.teamIdentifier == "TEAMR" && app.activityTypes == ["org.example.recipes.view"] && app.warnings.isEmpty)
    }

    @Test("Hidden=true is deleted: not registered, and it removes the system's file of the same id; NoDisplay still counts")
    func hidden() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        try factory.desktop("org.example.Recipes.desktop", in: factory.system, DesktopFactory.recipes())
        try factory.desktop("org.example.Recipes.desktop", in: factory.user, "Type=Application\nName=Recipes\nHidden=true")
        try factory.desktop("org.example.Handler.desktop", in: factory.system, DesktopFactory.recipes("NoDisplay=true\nOnlyShowIn=KDE;"))
        try factory.desktop("org.example.HiddenBaton.desktop", in: factory.system, DesktopFactory.recipes("Hidden=true"))
        let registry = factory.registry()
        #expect(registry.apps.map(\.bundleIdentifier) == ["org.example.Handler"])
        #expect(registry.problems.isEmpty)
    }

    @Test("the first file with a desktop file id wins (user before system); subfolders give ids with '-'")
    func precedenceAndIDs() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        try factory.desktop("org.example.Recipes.desktop", in: factory.user, DesktopFactory.recipes().replacingOccurrences(of: "Name=Recipes", with: "Name=Mine"))
        try factory.desktop("org.example.Recipes.desktop", in: factory.system, DesktopFactory.recipes())
        try factory.desktop("vendor/cookbook.desktop", in: factory.system, DesktopFactory.recipes())
        let registry = factory.registry()
        #expect(registry.apps.map(\.bundleIdentifier) == ["org.example.Recipes", "vendor-cookbook"])
        #expect(registry.app(bundleIdentifier: "org.example.Recipes")?.name == "Mine")
        #expect(registry.problems.isEmpty)
        #expect(AppRegistry.watchedFolders(searchPaths: [factory.user, factory.system]).contains(factory.system.appendingPathComponent("vendor").path))
    }

    @Test("a bundle and a desktop file with the same identifier: the bundle wins, the desktop file is a problem saying so")
    func bundleWins() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        let bundles = try BundleFactory()
        defer { bundles.remove() }
        try bundles.bundle(
            "Recipes", in: "apps",
            infoText: BundleFactory.plist("<key>CFBundleIdentifier</key><string>org.example.Recipes</string><key>BatonTeamIdentifier</key><string>TEAMR</string>")
        )
        try factory.desktop("org.example.Recipes.desktop", in: factory.user, DesktopFactory.recipes())
        let registry = AppRegistry.load(searchPaths: [factory.user, bundles.root.appendingPathComponent("apps")], programSearchPath: [factory.bin.path])
        #expect(registry.apps.map(\.kind) == [.bundle])
        let problem = try #require(registry.problems.first)
        #expect(problem.path.hasSuffix("org.example.Recipes.desktop") && problem.reason.contains("shadowed by") && problem.reason.contains("Recipes.app"))
    }

    @Test("not an Application, or a name that is no desktop file id: a problem, not an app")
    func refused() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        try factory.desktop("org.example.Link.desktop", "Type=Link\nName=L\nURL=https://recipes.example\nX-Baton-TeamIdentifier=TEAMR")
        try factory.desktop("my recipes.desktop", DesktopFactory.recipes())
        let registry = factory.registry()
        #expect(registry.apps.isEmpty)
        #expect(registry.problems.contains { $0.path.hasSuffix("org.example.Link.desktop") && $0.reason.contains("only an Application entry") })
        #expect(registry.problems.contains { $0.path.hasSuffix("my recipes.desktop") && $0.reason.contains("is not a desktop file id") })
    }

    @Test("a huge or binary desktop file is bounded: 1 MiB read at most, a problem only when it declares X-Baton keys")
    func bounded() throws {
        let factory = try DesktopFactory()
        defer { factory.remove() }
        let padding = String(repeating: "# padding padding padding padding padding padding padding padding\n", count: 20_000)
        try factory.desktop("org.example.Huge.desktop", DesktopFactory.recipes() + padding)
        try factory.desktop("org.example.HugePlain.desktop", "Type=Application\nName=P\nExec=recipes\n" + padding)
        var binary = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) })
        try binary.write(to: factory.user.appendingPathComponent("org.example.Noise.desktop"))
        binary.append(contentsOf: Array("\nX-Baton-TeamIdentifier=TEAMR\n".utf8) + [0xFF, 0xFE, 0x00])
        try binary.write(to: factory.user.appendingPathComponent("org.example.Binary.desktop"))
        let registry = factory.registry()
        #expect(registry.apps.isEmpty)
        #expect(registry.problems.count == 2)
        #expect(registry.problems.contains { $0.path.hasSuffix("org.example.Huge.desktop") && $0.reason.contains("larger than the 1048576-byte limit") })
        #expect(registry.problems.contains { $0.path.hasSuffix("org.example.Binary.desktop") && $0.reason.contains("[invalidDesktopFile]") })
    }
}
