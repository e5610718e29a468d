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
}
