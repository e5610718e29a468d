import Baton
import BatonInMemory
import BatonRegistry
import Foundation
import Testing

/// Issue 28 item 2 through real agents (in memory, issue 26 item 3): a Swift app registered by its bundle on the
/// laptop and an app registered by its desktop file on the desktop, of one team, continue each other's activities (D1).
@MainActor
@Suite("Issue 28 item 2: a bundle app and a desktop-file app hand off to each other")
struct DesktopFileHandoffTests {
    static let bundleInfo = """
        <plist version="1.0"><dict>
        <key>CFBundleIdentifier</key><string>com.example.Notes</string>
        <key>BatonTeamIdentifier</key><string>TEAMN</string>
        <key>NSUserActivityTypes</key><array><string>com.example.notes.edit</string></array>
        </dict></plist>
        """
    static let desktopEntry = """
        [Desktop Entry]
        Type=Application
        Name=Notes (GTK)
        Exec=true %f
        X-Baton-TeamIdentifier=TEAMN
        X-Baton-ActivityTypes=com.example.notes.edit;

        """

    /// Whether `agent` lists an offer of `app` (the app here that would continue it) within a few seconds.
    func offered(on agent: Agent, app: String, in world: InMemoryDevices) async throws -> Bool {
        for _ in 0..<400 {
            if await agent.nearbyItems().contains(where: { $0.app == app }) { return true }
            try await world.advance(by: .milliseconds(100))
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    /// The first activity `application` is given to continue.
    func continued(_ application: BatonApplication) async -> UserActivity? {
        var events = application.events.makeAsyncIterator()
        while let event = await events.next(isolation: #isolation) {
            if case .willContinue = event { continue }
            if case .continued(let activity) = event { return activity }
            return nil
        }
        return nil
    }

    @Test("the bundle's activity continues in the desktop-file app, and the desktop-file app's in the bundle (D1)")
    func bothWays() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-desktop-handoff-\(UUID().uuidString)")
        let bundles = root.appendingPathComponent("laptop-apps")
        let applications = root.appendingPathComponent("desktop-applications")
        try FileManager.default.createDirectory(at: bundles.appendingPathComponent("Notes.app"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data(Self.bundleInfo.utf8).write(to: bundles.appendingPathComponent("Notes.app/Info.plist"))
        try Data(Self.desktopEntry.utf8).write(to: applications.appendingPathComponent("org.example.NotesGtk.desktop"))

        // Each device its own apps: the laptop the bundle, the desktop the desktop file (its store is named by device).
        let world = try await InMemoryDevices.start(names: ["laptop", "desktop"], apps: AppRegistry(apps: [])) { configuration in
            configuration.apps = nil
            configuration.appFolders = [configuration.store.folder.lastPathComponent == "laptop" ? bundles : applications]
        }
        let laptop = world.agents[0]
        let desktop = world.agents[1]
        #expect(desktop.appListing().contains { $0.bundle == "org.example.NotesGtk" && $0.kind == "desktop-file" })

        let swiftApp = BatonApplication()
        let gtkApp = BatonApplication()
        try await swiftApp.connect(bundleIdentifier: "com.example.Notes", socketPath: laptop.socketPath)
        try await gtkApp.connect(bundleIdentifier: "org.example.NotesGtk", socketPath: desktop.socketPath)

        // Laptop to desktop: the bundle app's note opens in the desktop-file app.
        let note = try UserActivity(activityType: "com.example.notes.edit", application: swiftApp)
        note.title = "Shopping list"
        note.userInfo["line"] = 3
        note.becomeCurrent()
        #expect(try await offered(on: desktop, app: "org.example.NotesGtk", in: world))
        let there = await desktop.continueNearby(device: "laptop")
        #expect(there.failure == nil && there.app == "org.example.NotesGtk", "\(there)")
        let inGtk = await continued(gtkApp)
        #expect(inGtk?.title == "Shopping list" && inGtk?.userInfo["line"] == 3)

        // Desktop to laptop: the desktop-file app's note opens in the bundle app.
        note.resignCurrent()
        let back = try UserActivity(activityType: "com.example.notes.edit", application: gtkApp)
        back.title = "Shopping list, edited"
        back.userInfo["line"] = 4
        back.becomeCurrent()
        #expect(try await offered(on: laptop, app: "com.example.Notes", in: world))
        let home = await laptop.continueNearby(device: "desktop")
        #expect(home.failure == nil && home.app == "com.example.Notes", "\(home)")
        let inSwift = await continued(swiftApp)
        #expect(inSwift?.title == "Shopping list, edited" && inSwift?.userInfo["line"] == 4)

        swiftApp.disconnect()
        gtkApp.disconnect()
        await world.shutdown()
    }
}
