import BatonEmbedded
import BatonInMemory
import BatonRegistry
import Foundation
import Testing

/// The continuing side of issue 14 in one process: an app's activity with a web page, continued on a device without
/// that app, goes to the built-in browser app `org.baton.browser` while one is connected (what `baton browser-host`
/// is), else to the agent's browser command (E1, E2).
@MainActor
@Suite("Web pages to the browser: the built-in browser app, else the browser command (issue 14: E1, E2)", .serialized)
struct BrowserRoutingTests {
    /// A laptop with the Notes app offering a note with a web page; a desktop without Notes whose browser command
    /// records the URLs it is given.
    static func devices(browser recording: RecordingBrowser) async throws -> (InMemoryDevices, laptop: BatonApplication, activity: UserActivity) {
        let apps = FileManager.default.temporaryDirectory.appendingPathComponent("baton-apps-\(UUID().uuidString)")
        let bundle = apps.appendingPathComponent("Notes.app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try Data(TwoDevices.info.utf8).write(to: bundle.appendingPathComponent("Info.plist"))
        // In memory on virtual time (issue 26 item 3): no socket, and no deadline is waited for.
        let devices = try await InMemoryDevices.start(names: ["laptop", "desktop"], apps: AppRegistry.load(searchPaths: [apps])) { configuration in
            configuration.saveDeadline = 10
            if configuration.store.folder.lastPathComponent == "desktop" {
                configuration.apps = AppRegistry(apps: [])
                configuration.browserCommand = recording.command
            }
        }
        let laptop = BatonApplication()
        try await laptop.connect(bundleIdentifier: "com.example.Notes", socketPath: devices.agents[0].socketPath)
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: laptop)
        activity.title = "Shopping note"
        try activity.setWebpageURL(URL(string: "https://notes.example/n/42"))
        activity.addUserInfoEntries(from: ["draft": .string("private words")])
        activity.becomeCurrent()
        for _ in 0..<500 where await devices.agents[1].nearbyItems().isEmpty {
            try await Task.sleep(for: .milliseconds(10))
        }
        return (devices, laptop, activity)
    }

    @Test("E1, E2: with the browser app connected, the page arrives there as a web page (URL and title, no userInfo)")
    func toTheConnectedBrowser() async throws {
        let recording = try RecordingBrowser()
        defer { recording.remove() }
        let (devices, laptop, activity) = try await Self.devices(browser: recording)
        let browser = BatonApplication()
        try await browser.connect(bundleIdentifier: BuiltInBrowser.bundleIdentifier, socketPath: devices.agents[1].socketPath)
        var events = browser.events.makeAsyncIterator()

        let outcome = await devices.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil, "\(outcome)")
        #expect(outcome.app == BuiltInBrowser.bundleIdentifier)
        #expect(outcome.reason.contains("a new tab in the running browser (E2)"), "\(outcome.reason)")
        let delivered = await events.nextContinued()
        #expect(delivered?.activityType == NSUserActivityTypeBrowsingWeb)
        #expect(delivered?.webpageURL?.absoluteString == "https://notes.example/n/42")
        #expect(delivered?.title == "Shopping note")
        #expect(delivered?.userInfo.isEmpty == true, "the app's state stays with apps of its team")
        #expect(!recording.wasRun, "the browser command was not run")
        activity.invalidate()
        browser.disconnect()
        laptop.disconnect()
        await devices.shutdown()
    }

    @Test("E1: with no browser app connected, the page goes to the browser command, and nothing is launched")
    func toTheBrowserCommand() async throws {
        let recording = try RecordingBrowser()
        defer { recording.remove() }
        let (devices, laptop, activity) = try await Self.devices(browser: recording)
        let outcome = await devices.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil && outcome.app == "browser", "\(outcome)")
        #expect(outcome.reason.contains("the default browser (E1)"), "\(outcome.reason)")
        #expect(try await recording.opened() == "https://notes.example/n/42\n")
        activity.invalidate()
        laptop.disconnect()
        await devices.shutdown()
    }
}
