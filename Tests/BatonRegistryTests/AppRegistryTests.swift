import BatonRegistry
import Foundation
import Testing

@Suite("App registry")
struct AppRegistryTests {
    @Test("search paths follow XDG: BATON_APPS_PATH, then XDG_DATA_HOME, then each XDG_DATA_DIRS; then their applications folders (issue 28 item 2)")
    func searchPaths() {
        let paths = AppRegistry.searchPaths(environment: [
            "BATON_APPS_PATH": "/opt/a:relative:/opt/b", "XDG_DATA_HOME": "/home/u/data", "XDG_DATA_DIRS": "/x:/y",
            "HOME": "/home/u",
        ])
        #expect(
            paths.map(\.path) == [
                "/opt/a", "/opt/b", "/home/u/data/baton/apps", "/x/baton/apps", "/y/baton/apps", "/home/u/data/applications", "/x/applications",
                "/y/applications",
            ]
        )
        let defaults = AppRegistry.searchPaths(environment: ["HOME": "/home/u"])
        #expect(
            defaults.map(\.path) == [
                "/home/u/.local/share/baton/apps", "/usr/local/share/baton/apps", "/usr/share/baton/apps", "/home/u/.local/share/applications",
                "/usr/local/share/applications", "/usr/share/applications",
            ]
        )
    }

    @Test("one bad bundle is reported with its path and why; the rest load; a duplicate is shadowed")
    func loading() throws {
        let factory = try BundleFactory()
        defer { factory.remove() }
        let info = BundleFactory.plist("<key>CFBundleIdentifier</key><string>com.example.notes</string><key>BatonTeamIdentifier</key><string>TEAM</string>")
        try factory.bundle("Notes", in: "user", infoText: info)
        try factory.bundle("Broken", in: "user", infoText: "not a plist")
        try factory.bundle("NotesAgain", in: "system", infoText: info)
        try factory.bundle("Reader", in: "system", infoText: BundleFactory.plist("<key>CFBundleIdentifier</key><string>com.example.reader</string>"))
        let registry = AppRegistry.load(searchPaths: [
            factory.root.appendingPathComponent("user"), factory.root.appendingPathComponent("missing"),
            factory.root.appendingPathComponent("system"),
        ])
        #expect(registry.apps.map(\.bundleIdentifier) == ["com.example.notes", "com.example.reader"])
        #expect(registry.apps.first?.bundleURL.path.contains("/user/") == true)
        #expect(registry.problems.count == 2)
        #expect(registry.problems.contains { $0.path.hasSuffix("Broken.app") && $0.reason.contains("[invalidInfoPlist]") })
        #expect(registry.problems.contains { $0.path.hasSuffix("NotesAgain.app") && $0.reason.contains("shadowed by") })
        #expect(registry.app(bundleIdentifier: "com.example.reader")?.teamIdentifier == nil)
    }
}
