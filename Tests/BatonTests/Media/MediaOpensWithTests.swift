@testable import BatonAgent
import BatonTestSupport
import Foundation
import Testing

/// Which player will play a track continued here (issue 27 item 3): `baton nearby` (its items' `opensWith`) and the
/// desktop notification name the player the laptop's player's desktop entry names, as installed on the desktop, not
/// the built-in app `org.baton.media`.
@Suite("Issue 27 item 3: nearby and the notification name the player that will play a track", .serialized)
struct MediaOpensWithTests {
    @Test(
        "issue 27 item 3: the desktop lists the laptop's track as playing in the player its desktop entry names there; not installed there, as the media app",
        .requires(.dbusDaemon, .pythonDBus), .timeLimit(.minutes(1))
    )
    func playerNamed() async throws {
        let hosts = try await MediaSourceTests.TwoHosts()
        // The fake player says DesktopEntry "fakeplayer"; the desktop has that application installed.
        let applications = hosts.root.appendingPathComponent("desktop-applications")
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        let entry = applications.appendingPathComponent("fakeplayer.desktop")
        try Data("[Desktop Entry]\nType=Application\nName=Fake Player\nExec=/bin/true %U\n".utf8).write(to: entry)
        let player = try hosts.player("fake")
        defer { player.quit() }

        player.set(["status": "Playing", "url": "https://radio.example/live.ogg", "title": "Blue in Green", "artist": ["Miles Davis"], "position": 1_000_000])
        let item = await MediaSourceTests.shown(on: hosts.desktop, where: MediaSourceTests.media("Blue in Green — Miles Davis"))
        #expect(item?.app == BuiltInMedia.bundleIdentifier)
        #expect(item?.opensWith == "Fake Player", "\(String(describing: item))")
        let notice = hosts.desktop.notificationOffers(item.map { [$0] } ?? []).first
        #expect(notice?.appName == "Fake Player")

        // Not installed there (and no default for a type: a track names none): shown as the media app, as before.
        try FileManager.default.removeItem(at: entry)
        player.set(["title": "So What"])
        let next = await MediaSourceTests.shown(on: hosts.desktop, where: MediaSourceTests.media("So What — Miles Davis"))
        #expect(next != nil && next?.opensWith == nil, "\(String(describing: next))")
        #expect(hosts.desktop.notificationOffers(next.map { [$0] } ?? []).first?.appName == BuiltInMedia.name)
        player.quit()
        await hosts.stop()
    }
}
