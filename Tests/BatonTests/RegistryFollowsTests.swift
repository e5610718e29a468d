import BatonEmbedded
import BatonInMemory
import BatonRegistry
import Foundation
import Testing

/// Issue 11 part 7: an app installed, changed or removed while the agent runs is seen without a restart, and a bad
/// bundle is a problem listed, not a crash.
@Suite("Issue 11: the registry follows installs")
@MainActor
struct RegistryFollowsTests {
    /// Waits (event-driven by the agent's inotify watch; this only looks) until `condition` holds, at most 5 s.
    static func eventually(_ condition: @Sendable () -> Bool) async throws -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test("a bundle added, changed, broken and removed while the agent runs")
    func followsInstalls() async throws {
        let apps = FileManager.default.temporaryDirectory.appendingPathComponent("baton-installs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: apps, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: apps) }
        // In memory on virtual time (issue 26 item 3): no socket; the registry follows inotify, not a timer.
        let devices = try await InMemoryDevices.start(names: ["laptop"], apps: AppRegistry(apps: [])) { configuration in
            configuration.apps = nil
            configuration.appFolders = [apps]
        }
        let agent = devices.agents[0]
        // Nothing installed: only the browser every agent registers itself (issue 14).
        #expect(agent.appListing().map(\.bundle) == ["org.baton.browser"])

        // Installed: listed, and it can connect at once.
        let bundle = apps.appendingPathComponent("Notes.app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try Data(TwoDevices.info.utf8).write(to: bundle.appendingPathComponent("Info.plist"))
        #expect(try await Self.eventually { agent.appListing().map(\.bundle) == ["com.example.Notes", "org.baton.browser"] })
        let application = BatonApplication()
        try await application.connect(bundleIdentifier: "com.example.Notes", socketPath: agent.socketPath)
        application.disconnect()

        // Changed in place: a new activity type shows.
        let edited = TwoDevices.info.replacingOccurrences(of: "<string>com.example.notes.edit</string>", with: "<string>com.example.notes.edit</string><string>com.example.notes.read</string>")
        try Data(edited.utf8).write(to: bundle.appendingPathComponent("Info.plist"), options: .atomic)
        #expect(try await Self.eventually { agent.appListing().first?.activityTypes.contains("com.example.notes.read") == true })

        // A bad bundle: a problem, and the good one still listed.
        let broken = apps.appendingPathComponent("Broken.app")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try Data("<plist><dict><key>CFBundleIdentifier".utf8).write(to: broken.appendingPathComponent("Info.plist"))
        #expect(try await Self.eventually { agent.appListing().contains { $0.bundle.isEmpty && $0.problem.contains("Broken.app") } })
        #expect(agent.appListing().contains { $0.bundle == "com.example.Notes" })

        // Removed: gone, and it can no longer connect.
        try FileManager.default.removeItem(at: bundle)
        #expect(try await Self.eventually { !agent.appListing().contains { $0.bundle == "com.example.Notes" } })
        let late = BatonApplication()
        await #expect(throws: (any Error).self) {
            try await late.connect(bundleIdentifier: "com.example.Notes", socketPath: agent.socketPath)
        }
        await devices.shutdown()
    }

    @Test("issue 28 item 2: a desktop file with X-Baton keys installed, hidden and removed while the agent runs (D1)")
    func followsDesktopFiles() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-applications-\(UUID().uuidString)")
        let applications = root.appendingPathComponent("applications")
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let devices = try await InMemoryDevices.start(names: ["laptop"], apps: AppRegistry(apps: [])) { configuration in
            configuration.apps = nil
            configuration.appFolders = [applications]
        }
        let agent = devices.agents[0]
        // A desktop file without X-Baton keys is no Baton app.
        let plain = applications.appendingPathComponent("org.gnome.TextEditor.desktop")
        try Data("[Desktop Entry]\nType=Application\nName=Text Editor\nExec=true %U\n".utf8).write(to: plain)

        // Installed after start: listed as a desktop-file app, and it can connect at once.
        let file = applications.appendingPathComponent("org.example.Recipes.desktop")
        let entry = "[Desktop Entry]\nType=Application\nName=Recipes\nExec=true %U\nX-Baton-TeamIdentifier=TEAMR\nX-Baton-ActivityTypes=org.example.recipes.view;\n"
        try Data(entry.utf8).write(to: file, options: .atomic)
        #expect(try await Self.eventually { Set(agent.appListing().map(\.bundle)) == ["org.baton.browser", "org.example.Recipes"] })
        let listed = try #require(agent.appListing().first { $0.bundle == "org.example.Recipes" })
        #expect(listed.kind == "desktop-file" && listed.team == "TEAMR" && listed.activityTypes == ["org.example.recipes.view"] && listed.problem.isEmpty)
        let application = BatonApplication()
        try await application.connect(bundleIdentifier: "org.example.Recipes", socketPath: agent.socketPath)
        application.disconnect()

        // A malformed key: still listed, its warning naming the key is the agent's to log; an empty team continues nothing.
        try Data(entry.replacingOccurrences(of: "TEAMR", with: "").utf8).write(to: file, options: .atomic)
        #expect(try await Self.eventually { agent.appListing().first { $0.bundle == "org.example.Recipes" }?.problem.contains("no resolved identity") == true })

        // Hidden=true is deleted (Desktop Entry specification): gone, and it can no longer connect.
        try Data((entry + "Hidden=true\n").utf8).write(to: file, options: .atomic)
        #expect(try await Self.eventually { !agent.appListing().contains { $0.bundle == "org.example.Recipes" } })
        let late = BatonApplication()
        await #expect(throws: (any Error).self) {
            try await late.connect(bundleIdentifier: "org.example.Recipes", socketPath: agent.socketPath)
        }

        // Back, in a subfolder made after start (its id is vendor-recipes), then removed.
        let vendor = applications.appendingPathComponent("vendor")
        try FileManager.default.createDirectory(at: vendor, withIntermediateDirectories: true)
        try Data(entry.utf8).write(to: vendor.appendingPathComponent("recipes.desktop"), options: .atomic)
        #expect(try await Self.eventually { agent.appListing().contains { $0.bundle == "vendor-recipes" } })
        try FileManager.default.removeItem(at: vendor.appendingPathComponent("recipes.desktop"))
        #expect(try await Self.eventually { !agent.appListing().contains { $0.bundle == "vendor-recipes" } })
        await devices.shutdown()
    }

    @Test("issue 28 item 2: an applications folder made after the agent started is followed (a new account's ~/.local/share/applications)")
    func applicationsFolderMadeLater() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-applications-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        // Two levels missing, as `mkdir -p ~/.local/share/applications` on an account with no ~/.local/share.
        let applications = root.appendingPathComponent("share/applications")
        let devices = try await InMemoryDevices.start(names: ["laptop"], apps: AppRegistry(apps: [])) { configuration in
            configuration.apps = nil
            configuration.appFolders = [applications]
        }
        let agent = devices.agents[0]
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        let entry = "[Desktop Entry]\nType=Application\nName=Recipes\nExec=true\nX-Baton-TeamIdentifier=TEAMR\nX-Baton-ActivityTypes=org.example.recipes.view;\n"
        try Data(entry.utf8).write(to: applications.appendingPathComponent("org.example.Recipes.desktop"), options: .atomic)
        #expect(try await Self.eventually { agent.appListing().contains { $0.bundle == "org.example.Recipes" } })
        // And the folder now watched itself: a second app is seen too.
        try Data(entry.utf8).write(to: applications.appendingPathComponent("org.example.Cookbook.desktop"), options: .atomic)
        #expect(try await Self.eventually { agent.appListing().contains { $0.bundle == "org.example.Cookbook" } })
        await devices.shutdown()
    }
}
