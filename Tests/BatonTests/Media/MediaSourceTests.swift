@testable import BatonAgent
import BatonEmbedded
import BatonProtocol
import BatonRegistry
import BatonTestSupport
import Foundation
import Logging
import Testing

/// Issue 27 items 1 and 4, end to end: a media player on a real session bus (dbus-daemon of the test's own), the agent
/// following it with sd-bus, and the track it plays shown by `nearby` on a second device, gone once it stops.
@Suite("Issue 27 item 1: a media player's track offered on the other device", .serialized)
struct MediaSourceTests {
    /// Two devices, each with a session bus of its own; the laptop's media source follows the laptop's bus.
    final class TwoHosts {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-media-\(UUID().uuidString)")
        let laptopBus: PrivateSessionBus
        let desktopBus: PrivateSessionBus
        let world: LocalDevices
        var desktop: Agent { world.agents[1] }

        init() async throws {
            laptopBus = try PrivateSessionBus(in: root.appendingPathComponent("laptop-bus"))
            desktopBus = try PrivateSessionBus(in: root.appendingPathComponent("desktop-bus"))
            let (laptop, desktop) = (laptopBus.address, desktopBus.address)
            world = try await LocalDevices.start(names: ["laptop", "desktop"], apps: AppRegistry(apps: [], problems: [])) { configuration in
                configuration.media.isEnabled = true
                configuration.media.busAddress = configuration.store.folder.lastPathComponent == "laptop" ? laptop : desktop
                if ProcessInfo.processInfo.environment["BATON_TEST_MEDIA_LOG"] != nil {
                    var logger = Logger(label: "baton.agent.\(configuration.store.folder.lastPathComponent)")
                    logger.logLevel = .debug
                    configuration.logger = logger
                }
            }
        }

        /// A fake player on the laptop's bus.
        func player(_ name: String) throws -> FakeMediaPlayer {
            try FakeMediaPlayer(name: name, address: laptopBus.address, folder: root)
        }

        func stop() async {
            await world.shutdown()
            laptopBus.stop()
            desktopBus.stop()
            try? FileManager.default.removeItem(at: root)
        }
    }

    /// What the desktop shows of the laptop's media, within `timeout`: the first item satisfying `match`, or nil.
    static func shown(on agent: Agent, timeout: Double = 10, where match: @escaping (NearbyItem) -> Bool) async -> NearbyItem? {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if let item = await agent.nearbyItems(describe: true).first(where: match) { return item }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Whether the desktop shows nothing from the laptop within `timeout`.
    static func nothingShown(on agent: Agent, timeout: Double = 10) async -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if await agent.nearbyItems().isEmpty { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    static func media(_ title: String) -> (NearbyItem) -> Bool {
        { $0.activityType == BuiltInMedia.activityType && $0.title == title }
    }

    @Test(
        "A player starts an http track: the desktop's nearby shows 'Title — Artist' as the media app's; paused it stays, stopped or quit it goes",
        .requires(.dbusDaemon, .pythonDBus)
    )
    func playingTrackIsShown() async throws {
        let hosts = try await TwoHosts()
        let desktop = hosts.desktop
        let player = try hosts.player("fake")
        defer { player.quit() }

        let started = Date()
        player.set(["status": "Playing", "url": "https://radio.example/live.ogg", "title": "Blue in Green", "artist": ["Miles Davis"], "position": 42_000_000])
        let item = await Self.shown(on: desktop, where: Self.media("Blue in Green — Miles Davis"))
        let visible = Date().timeIntervalSince(started)
        let seen = await desktop.nearbyItems(describe: true)
        try #require(item != nil, "the desktop never showed the track: \(seen)")
        #expect(item?.app == BuiltInMedia.bundleIdentifier)
        #expect(item?.deviceName == "laptop")
        print("issue 27 item 1: player starts -> nearby on the other device in \(Int(visible * 1000)) ms")

        // Paused: still offered (a pause in the room), with the same title.
        player.set(["status": "Paused", "position": 43_000_000])
        try await Task.sleep(for: .milliseconds(300))
        #expect(await Self.shown(on: desktop, timeout: 1, where: Self.media("Blue in Green — Miles Davis")) != nil)

        // Stopped: gone.
        let stopping = Date()
        player.set(["status": "Stopped"])
        #expect(await Self.nothingShown(on: desktop))
        print("issue 27 item 1: player stops -> gone from nearby in \(Int(Date().timeIntervalSince(stopping) * 1000)) ms")

        // Playing again, then the player quits (killed): gone.
        player.set(["status": "Playing", "title": "So What"])
        #expect(await Self.shown(on: desktop, where: Self.media("So What — Miles Davis")) != nil)
        player.quit()
        #expect(await Self.nothingShown(on: desktop))
        await hosts.stop()
    }

    @Test(
        "Issue 27 item 4: a hostile player (1 MB title, javascript:, position -1 and 2^63, vanishing mid-call) offers nothing refused, and the agent stays up",
        .requires(.dbusDaemon, .pythonDBus)
    )
    func hostilePlayer() async throws {
        let hosts = try await TwoHosts()
        let desktop = hosts.desktop
        let player = try hosts.player("hostile")
        defer { player.quit() }
        let good: [String: Any] = ["status": "Playing", "url": "https://radio.example/a.ogg", "title": "Good", "artist": ["Band"], "position": 1_000_000, "positionType": "x"]

        // A title of 1 MB: offered, cut to what a person can read.
        player.set(good.merging(["title": String(repeating: "A", count: 1 << 20)]) { $1 })
        let long = await Self.shown(on: desktop) { $0.activityType == BuiltInMedia.activityType }
        try #require(long != nil)
        #expect((long?.title?.utf8.count ?? .max) < 1024)

        // Each refused state withdraws what was offered; the good track is offered again in between.
        for hostile: [String: Any] in [
            ["url": "javascript:alert(1)"],
            ["url": "file:///home/../etc/passwd"],
            ["url": "file:///etc/passwd"],
            ["position": -1],
            ["position": UInt64(1) << 63, "positionType": "t"],
        ] {
            player.set(good)
            #expect(await Self.shown(on: desktop, where: Self.media("Good — Band")) != nil)
            player.set(good.merging(hostile) { $1 })
            #expect(await Self.nothingShown(on: desktop), "offered: \(hostile)")
        }

        // The player vanishes in the middle of the agent's call: nothing offered, and the agent goes on.
        player.set(good)
        #expect(await Self.shown(on: desktop, where: Self.media("Good — Band")) != nil)
        player.set(["vanishOnRead": true, "title": "Vanishing"])
        #expect(await Self.nothingShown(on: desktop))
        let next = try hosts.player("next")
        defer { next.quit() }
        next.set(good.merging(["title": "After"]) { $1 })
        #expect(await Self.shown(on: desktop, where: Self.media("After — Band")) != nil)
        await hosts.stop()
    }
}
