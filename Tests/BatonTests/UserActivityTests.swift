import BatonEmbedded
import BatonInMemory
import BatonProtocol
import BatonRegistry
import Foundation
import Testing

/// A note document that records the URL it was restored from (B6).
final class NoteDocument: ActivityDocument {
    var restoredFrom: URL?
    override func restoreUserActivityState(_ activity: UserActivity) {
        if case .url(let url) = activity.userInfo[ActivityDocument.documentURLKey] { restoredFrom = url }
    }
}

/// Two embedded devices with an app registered on both, and an application object per device.
@MainActor
final class TwoDevices {
    /// What carries the two agents' bytes and times their deadlines (issue 26 item 3).
    enum Transport {
        /// ``InMemoryDevices`` on virtual time: no socket, and a deadline passes only by ``TwoDevices/advance(by:)``.
        case memory
        /// TLS over loopback and the Unix app socket, on the system's clocks (``LocalDevices``).
        case network
    }

    let devices: LocalDevices
    /// The devices in memory, when ``Transport/memory``: what moves their clock.
    let memory: InMemoryDevices?
    let laptop = BatonApplication()
    let desktop = BatonApplication()
    let apps: URL
    var desktopEvents: AsyncStream<ContinuationEvent>.Iterator

    static let info = """
        <plist version="1.0"><dict>
        <key>CFBundleIdentifier</key><string>com.example.Notes</string>
        <key>CFBundleExecutable</key><string>notes</string>
        <key>BatonTeamIdentifier</key><string>NOTESTEAM1</string>
        <key>NSUserActivityTypes</key><array><string>com.example.notes.edit</string></array>
        <key>CFBundleDocumentTypes</key><array><dict>
          <key>CFBundleTypeExtensions</key><array><string>note</string></array>
          <key>NSUbiquitousDocumentUserActivityType</key><string>com.example.notes.document</string>
        </dict></array>
        </dict></plist>
        """

    /// The save deadline is generous by default: on a loaded two-core CI machine a healthy app's answer has been seen
    /// to take over a second. Only the test of the deadline itself sets a short one.
    /// On the network by default (the continuation streams' suites, and MemoryAppTransportTests' apps in memory
    /// beside peers on TLS); the suites of the app library pass ``Transport/memory``.
    init(
        saveDeadline: Double = 10,
        transport: Transport = .network,
        appConnections: AppConnections = .unixSocket,
        streamPath: StreamPath = .direct,
        relaying: Set<String> = []
    ) async throws {
        apps = FileManager.default.temporaryDirectory.appendingPathComponent("baton-apps-\(UUID().uuidString)")
        let bundle = apps.appendingPathComponent("Notes.app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try Data(Self.info.utf8).write(to: bundle.appendingPathComponent("Info.plist"))
        let registry = AppRegistry.load(searchPaths: [apps])
        switch transport {
        case .memory:
            let memory = try await InMemoryDevices.start(names: ["laptop", "desktop"], apps: registry) { $0.saveDeadline = saveDeadline }
            self.memory = memory
            devices = memory.devices
        case .network:
            memory = nil
            devices = try await LocalDevices.start(names: ["laptop", "desktop"], apps: registry) { configuration in
                configuration.saveDeadline = saveDeadline
                configuration.appConnections = appConnections
                // `relaying`: devices whose agent relays every stream, as one from before issue 30 does.
                configuration.streamPath = relaying.contains(configuration.store.folder.lastPathComponent) ? .relayed : streamPath
            }
        }
        try await laptop.connect(bundleIdentifier: "com.example.Notes", socketPath: devices.agents[0].socketPath)
        try await desktop.connect(bundleIdentifier: "com.example.Notes", socketPath: devices.agents[1].socketPath)
        desktopEvents = desktop.events.makeAsyncIterator()
    }

    /// Moves the agents' virtual clock on (``Transport/memory`` only), running the timers it passes.
    func advance(by duration: Duration) async throws {
        guard let memory else {
            Issue.record("advance(by:) needs the devices in memory, on virtual time")
            return
        }
        try await memory.advance(by: duration)
    }

    /// Waits until the desktop agent lists something from the laptop.
    func waitUntilNearby(_ present: Bool = true) async throws {
        for _ in 0..<500 {
            if await !devices.agents[1].nearbyItems().isEmpty == present { return }
            try await Task.sleep(for: .milliseconds(2))
        }
        Issue.record("the nearby list never became \(present ? "non-empty" : "empty")")
    }

    /// A folder synced between the two devices, at the same path on both (one machine): a document in it is a
    /// file here too (C9), so B6 opens it.
    func sharedFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-shared-\(UUID().uuidString)").resolvingSymlinksInPath()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.resolvingSymlinksInPath().path
        for agent in devices.agents { try agent.configuration.store.addSyncedFolder(SyncedFolder(id: "shared", path: path)) }
        return URL(fileURLWithPath: path)
    }

    /// Continues on the desktop and returns the events up to the one that ends the continuation.
    /// Continues on the desktop, opening a document activity the app does not handle as a ``NoteDocument`` (B6).
    func continueOpeningNote() async -> ([ContinuationEvent], NoteDocument?) {
        var opened: NoteDocument?
        desktop.documentOpener = { [desktop] url in
            opened = try? NoteDocument(fileURL: url, activityType: "com.example.notes.document", application: desktop)
            return opened
        }
        let events = await continueOnDesktop()
        return (events, opened)
    }

    func continueOnDesktop() async -> [ContinuationEvent] {
        let outcome = await devices.agents[1].continueNearby(device: "laptop")
        var seen: [ContinuationEvent] = []
        guard outcome.failure != .notFound else { return [] }
        var events = desktopEvents
        defer { desktopEvents = events }
        while let event = await events.next(isolation: #isolation) {
            seen.append(event)
            if case .willContinue = event { continue }
            break
        }
        return seen
    }

    func stop() async {
        laptop.disconnect()
        desktop.disconnect()
        await devices.shutdown()
        try? FileManager.default.removeItem(at: apps)
    }
}

/// Records what the library calls, in order.
@MainActor
final class Recorder: UserActivityDelegate, BatonApplicationDelegate {
    var calls: [String] = []
    var restoreTargets: [UserActivityResponder] = []
    var handles = true

    func userActivityWillSave(_ userActivity: UserActivity) { calls.append("willSave") }
    func userActivityWasContinued(_ userActivity: UserActivity) { calls.append("wasContinued") }
    func application(_ application: BatonApplication, didUpdate userActivity: UserActivity) {
        calls.append("didUpdate")
        userActivity.userInfo["version"] = 2
    }
    func application(_ application: BatonApplication, willContinueUserActivityWithType userActivityType: String) -> Bool {
        calls.append("will \(userActivityType)")
        return true
    }
    func application(
        _ application: BatonApplication,
        continue userActivity: UserActivity,
        restorationHandler: @escaping @MainActor ([UserActivityResponder]) -> Void
    ) -> Bool {
        calls.append("continue \(userActivity.activityType)")
        restorationHandler(restoreTargets)
        return handles
    }
    func application(_ application: BatonApplication, didFailToContinueUserActivityWithType userActivityType: String, error: Error) {
        calls.append("didFail \((error as? ContinuationError)?.code.name ?? "?")")
    }
}

@MainActor
final class Pane: ActivityResponder {
    let key: String
    var value: String
    var restored: String?
    var log: (String) -> Void

    init(_ key: String, _ value: String, log: @escaping (String) -> Void) {
        self.key = key
        self.value = value
        self.log = log
    }

    override func updateUserActivityState(_ activity: UserActivity) {
        log("update \(key) (userInfo had \(activity.userInfo.count) keys)")
        activity.userInfo[key] = .string(value)
    }

    override func restoreUserActivityState(_ activity: UserActivity) {
        restored = activity.userInfo[key]?.stringValue
    }
}

@Suite("UserActivity and the app library", .serialized)
@MainActor
struct UserActivityTests {
    @Test("A1-A5: the type is checked, userInfo merges and replaces, only plist values and http(s) URLs are accepted")
    func values() throws {
        #expect(throws: BatonCoreError.self) { try UserActivity(activityType: "", application: BatonApplication()) }
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: BatonApplication())
        activity.userInfo = ["a": 1]
        activity.addUserInfoEntries(from: ["b": 2])
        #expect(activity.userInfo == ["a": 1, "b": 2])
        try activity.addUserInfoEntries(from: ["c": "three", "d": [1, 2] as [Any]] as [AnyHashable: Any])
        #expect(activity.userInfo["c"] == "three" && activity.userInfo.count == 4)
        activity.userInfo = ["z": true]
        #expect(activity.userInfo == ["z": true], "assigning replaces (A4)")
        #expect {
            try activity.setUserInfo(["view": NSObject()])
        } throws: { ($0 as? BatonCoreError)?.code == .unsupportedType && "\($0)".contains("view") }
        #expect(activity.userInfo == ["z": true], "nothing changes on error")
        #expect { try activity.setWebpageURL(URL(string: "file:///etc/passwd")) } throws: { ($0 as? BatonCoreError)?.code == .unsupportedURLScheme }
        try activity.setWebpageURL(URL(string: "https://notes.example/1"))
        #expect(activity.webpageURL?.host == "notes.example")
    }

    @Test("A6, A7, B2, B3: keystrokes only mark the state dirty; a fetch asks once: willSave, responders on an emptied userInfo, then didUpdate")
    func savingOrder() async throws {
        let world = try await TwoDevices(transport: .memory)
        let recorder = Recorder()
        world.laptop.delegate = recorder
        world.desktop.delegate = recorder
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: world.laptop)
        activity.delegate = recorder
        let title = Pane("title", "Groceries") { recorder.calls.append($0) }
        let body = Pane("body", "Milk") { recorder.calls.append($0) }
        title.userActivity = activity
        body.userActivity = activity
        activity.userInfo["stale"] = true
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        for character in " and eggs" {
            body.value.append(character)
            activity.needsSave = true
        }
        #expect(recorder.calls.isEmpty, "nothing is asked before another device needs the state")
        let events = await world.continueOnDesktop()
        let laptopCalls = recorder.calls.filter { !$0.hasPrefix("will ") && !$0.hasPrefix("continue ") }
        #expect(
            laptopCalls.prefix(4) == ["willSave", "update title (userInfo had 0 keys)", "update body (userInfo had 1 keys)", "didUpdate"],
            "\(laptopCalls)"
        )
        guard case .continued(let continued) = events.last else {
            Issue.record("not continued: \(events)")
            return
        }
        #expect(continued.userInfo == ["title": "Groceries", "body": "Milk and eggs", "version": 2], "the stale key is gone (B2)")
        #expect(!activity.needsSave, "reset after the save (A7)")
        // The laptop hears of the continuation after the desktop has it (A8): waited for, as it crosses two agents.
        for _ in 0..<250 where !recorder.calls.contains("wasContinued") {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(recorder.calls.contains("wasContinued"), "A8")
        // Without a new needsSave, the next fetch sends the state as it is, asking no one.
        recorder.calls = []
        _ = await world.continueOnDesktop()
        #expect(!recorder.calls.contains("willSave") && !recorder.calls.contains("didUpdate"), "\(recorder.calls)")
        await world.stop()
    }

    @Test("C3: a current activity retitled in place shows its new title on the other device, and stays the same activity")
    func retitledInPlace() async throws {
        let world = try await TwoDevices(transport: .memory)
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: world.laptop)
        activity.title = "Groceries"
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        let desktop = world.devices.agents[1]
        func shownTitle(_ title: String) async throws -> [NearbyItem] {
            var items = await desktop.nearbyItems(describe: true)
            for _ in 0..<250 where items.first?.title != title {
                try await Task.sleep(for: .milliseconds(20))
                items = await desktop.nearbyItems(describe: true)
            }
            return items
        }
        let before = try await shownTitle("Groceries")
        #expect(before.first?.title == "Groceries")
        activity.title = "Groceries (3 items)"
        let after = try await shownTitle("Groceries (3 items)")
        #expect(after.first?.title == "Groceries (3 items)", "the other device asked again (the advert's revision moved on)")
        #expect(after.first?.sequence == before.first?.sequence, "the same activity, not a new one")
        activity.invalidate()
        await world.stop()
    }

    @Test("B1, B4, A9: responders share an activity; when the last lets go it is invalidated and gone from the other device")
    func sharedAndReleased() async throws {
        let world = try await TwoDevices(transport: .memory)
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: world.laptop)
        let first = Pane("a", "1") { _ in }
        var second: Pane? = Pane("b", "2") { _ in }
        first.userActivity = activity
        second?.userActivity = activity
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        first.userActivity = nil
        #expect(activity.isValid && activity.isCurrent, "one holder is left")
        second = nil
        #expect(!activity.isValid && !activity.isCurrent, "the last holder went away: invalidated (B4)")
        try await world.waitUntilNearby(false)
        activity.becomeCurrent()
        #expect(!activity.isCurrent, "an invalidated activity never becomes current again (A9)")
        withExtendedLifetime(second) {}
        await world.stop()
    }

    @Test("B5, B6, C7: a document's activity carries its URL; the other device opens the document and restores it")
    func documents() async throws {
        let world = try await TwoDevices(transport: .memory)
        let recorder = Recorder()
        recorder.handles = false
        world.desktop.delegate = recorder
        try world.laptop.loadDocumentTypes(fromInfoPlistAt: world.apps.appendingPathComponent("Notes.app/Info.plist"))
        // In a synced folder: a file outside every folder is the other device's, never opened (issue 25 item 2).
        let folder = try world.sharedFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("list.note")
        try Data("milk".utf8).write(to: url)
        let document = try NoteDocument(fileURL: url, application: world.laptop)
        #expect(document.activityType == "com.example.notes.document")
        try document.open()
        #expect(world.laptop.currentActivity?.userInfo[NSUserActivityDocumentURLKey] == .url(url))
        try await world.waitUntilNearby()
        let (events, opened) = await world.continueOpeningNote()
        #expect(events.count == 2, "\(events)")
        #expect(opened?.restoredFrom == url, "the app did not handle it, so the document was opened and restored (B6)")
        document.close()
        try await world.waitUntilNearby(false)

        // The same in UIDocument's shape: NSUserActivity in both methods; the URL is still put back (issue 12).
        final class AppleNote: ActivityDocument {
            var cursor = 42
            var restored: (URL?, Int?) = (nil, nil)
            override func updateUserActivityState(_ activity: NSUserActivity) {
                activity.addUserInfoEntries(from: ["cursor": cursor])
            }
            override func restoreUserActivityState(_ activity: NSUserActivity) {
                restored = (activity.userInfo?[NSUserActivityDocumentURLKey] as? URL, activity.userInfo?["cursor"] as? Int)
            }
        }
        let apple = try AppleNote(fileURL: url, application: world.laptop)
        try apple.open()
        try await world.waitUntilNearby()
        var appleOpened: AppleNote?
        world.desktop.documentOpener = { url in
            appleOpened = try? AppleNote(fileURL: url, activityType: "com.example.notes.document", application: world.desktop)
            return appleOpened
        }
        _ = await world.continueOnDesktop()
        #expect(appleOpened?.restored.0 == url && appleOpened?.restored.1 == 42)
        apple.close()
        #expect(world.laptop.currentActivity == nil, "closing the document invalidates its activity (B5)")
        try await world.waitUntilNearby(false)
        await world.stop()
    }

    @Test(
        "issue 25 item 2, B6, C9: a document URL outside every synced folder arrives marked foreign, unchanged in userInfo, and no document is opened",
        arguments: [false, true]
    )
    func foreignDocumentIsNotOpened(withFolders: Bool) async throws {
        let world = try await TwoDevices(transport: .memory)
        let recorder = Recorder()
        recorder.handles = false
        world.desktop.delegate = recorder
        try world.laptop.loadDocumentTypes(fromInfoPlistAt: world.apps.appendingPathComponent("Notes.app/Info.plist"))
        // A file this machine has (the two devices share it), outside every synced folder: the laptop's path names
        // the laptop's file; on the desktop the same path is the desktop's own, here a secret.
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-foreign-\(UUID().uuidString)").resolvingSymlinksInPath()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let secret = root.appendingPathComponent("config.note")
        try Data("db_password=hunter2\n".utf8).write(to: secret)
        let folder = withFolders ? try world.sharedFolder() : nil
        defer { folder.map { try? FileManager.default.removeItem(at: $0) } }
        let document = try NoteDocument(fileURL: secret, application: world.laptop)
        try document.open()
        try await world.waitUntilNearby()
        let (events, opened) = await world.continueOpeningNote()
        #expect(opened == nil, "the library asked the app to open a file of the other device: \(String(describing: opened?.fileURL))")
        #expect(recorder.calls == ["will com.example.notes.document", "continue com.example.notes.document"], "\(recorder.calls)")
        guard case .continued(let activity) = events.last else {
            Issue.record("\(events)")
            return
        }
        #expect(activity.userInfo[NSUserActivityDocumentURLKey] == .url(secret), "the URL as it came (C9)")
        #expect(activity.foreignFileURLs == [secret] && activity.isForeignFileURL(secret))
        #expect(activity.nsUserActivity.isForeignFileURL(secret), "Apple-shaped code sees it too")
        #expect((activity.nsUserActivity.userInfo?[NSUserActivityDocumentURLKey] as? URL) == secret)
        #expect(world.desktop.currentActivity == nil, "nothing became current on the desktop")
        document.close()
        try await world.waitUntilNearby(false)
        await world.stop()
    }

    @Test("B6, C9: a document in a synced folder is opened at the continuing device's copy of the folder")
    func documentInSyncedFolder() async throws {
        let world = try await TwoDevices(transport: .memory)
        let recorder = Recorder()
        recorder.handles = false
        world.desktop.delegate = recorder
        try world.laptop.loadDocumentTypes(fromInfoPlistAt: world.apps.appendingPathComponent("Notes.app/Info.plist"))
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-folders-\(UUID().uuidString)").resolvingSymlinksInPath()
        defer { try? FileManager.default.removeItem(at: root) }
        let laptopNotes = root.appendingPathComponent("laptop/Notes")
        let desktopNotes = root.appendingPathComponent("desktop/synced/Notes")
        for folder in [laptopNotes, desktopNotes] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("Week 48"), withIntermediateDirectories: true)
            try Data("milk".utf8).write(to: folder.appendingPathComponent("Week 48/list.note"))
        }
        try world.devices.agents[0].configuration.store.addSyncedFolder(SyncedFolder(id: "notes", path: laptopNotes.path))
        try world.devices.agents[1].configuration.store.addSyncedFolder(SyncedFolder(id: "notes", path: desktopNotes.path))
        let document = try NoteDocument(fileURL: laptopNotes.appendingPathComponent("Week 48/list.note"), application: world.laptop)
        try document.open()
        try await world.waitUntilNearby()
        let (events, opened) = await world.continueOpeningNote()
        #expect(events.count == 2, "\(events)")
        let here = desktopNotes.appendingPathComponent("Week 48/list.note")
        #expect(opened?.fileURL == here, "opened at the desktop's copy (B6): \(String(describing: opened?.fileURL))")
        #expect(opened?.restoredFrom == here)
        #expect(world.laptop.currentActivity?.userInfo[NSUserActivityDocumentURLKey] == .url(document.fileURL), "the laptop's own activity keeps its own path")
        document.close()
        try await world.waitUntilNearby(false)
        await world.stop()
    }

    @Test("C5, C8: an originating app that does not answer in time ends in exactly one didFail(appNotAnswering)")
    func appNotAnswering() async throws {
        let world = try await TwoDevices(saveDeadline: 0.2, transport: .memory)
        let recorder = Recorder()
        world.desktop.delegate = recorder
        // The laptop's "app" is a bare client that publishes an activity and never answers a save.
        let silent = try await AgentClient.connect(path: world.devices.agents[0].socketPath, bundleIdentifier: "com.example.Notes")
        silent.send(.becomeCurrent(activity: 99, ActivityNotice(activityType: "com.example.notes.edit", title: "Silent")))
        try await world.waitUntilNearby()
        // The 0.2 s deadline, not the fetch's network timeout, ends it: the reason says so (A7, C8). When the
        // deadline passes is the broker's (HandoffBrokerTests), with the time passed in, not measured here. On
        // virtual time the 0.2 s pass when the test moves the clock: once the laptop's agent has asked its app to
        // save (it arms the deadline as it asks), with no real wait.
        let continuing = Task { await world.continueOnDesktop() }
        for await message in silent.messages {
            if case .save = message { break }
        }
        try await world.advance(by: .milliseconds(200))
        let events = await continuing.value
        #expect(recorder.calls == ["will com.example.notes.edit", "didFail appNotAnswering"], "\(recorder.calls)")
        guard case .failed(_, let error) = events.last else {
            Issue.record("\(events)")
            return
        }
        #expect(error.code == .appNotAnswering)
        silent.close()
        await world.stop()
    }

    @Test("NSUserActivity: Apple-style code compiles and works, [AnyHashable: Any] userInfo and the delegate included")
    func appleStyle() async throws {
        final class Controller: NSUserActivityDelegate {
            var saves = 0
            func userActivityWillSave(_ userActivity: NSUserActivity) {
                saves += 1
                userActivity.addUserInfoEntries(from: ["saved": true])
            }
        }
        let world = try await TwoDevices(transport: .memory)
        let controller = Controller()
        // The laptop's application object, not `.shared` (AppleShapedTests uses that one, maybe at the same time).
        let activity = NSUserActivity(activityType: "com.example.notes.edit", application: world.laptop)
        activity.title = "Apple style"
        activity.userInfo = ["items": ["Milk", "Eggs"], "count": 2]
        activity.webpageURL = URL(string: "ftp://nope.example")
        #expect(activity.webpageURL == nil, "refused, as Apple's would be")
        activity.needsSave = true
        activity.delegate = controller
        #expect(activity.userInfo?["count"] as? Int == 2)
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        let events = await world.continueOnDesktop()
        guard case .continued(let continued) = events.last else {
            Issue.record("\(events)")
            return
        }
        #expect(controller.saves == 1)
        #expect(continued.userInfo["saved"] == true && continued.userInfo["items"] == ["Milk", "Eggs"])
        #expect(NSUserActivity(continued).userInfo?["count"] as? Int == 2)
        // Numbers bridge as NSNumber does on Apple's systems: a stored integer reads back as a Double too (issue 12).
        #expect(NSUserActivity(continued).userInfo?["count"] as? Double == 2.0)
        #expect(NSUserActivity(continued).userInfo?["saved"] as? Bool == true)
        activity.invalidate()
        await world.stop()
    }
}
