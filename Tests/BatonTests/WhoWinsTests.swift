@testable import BatonAgent
import BatonInMemory
import Foundation
import Testing

/// Who wins (issue 27 item 3; A9; docs/ARCHITECTURE.md, "Who wins"), as a person on the other device sees it: two
/// apps on the laptop, wholly in memory (``InMemoryDevices``). The latest app the person made current is what the
/// desktop offers; the other app changing its title later does not take that back.
@Suite("Issue 27 item 3: who wins, seen from the other device (A9)")
@MainActor
struct WhoWinsTests {
    static func info(_ bundle: String, _ executable: String, type: String) -> Data {
        Data(
            """
            <plist version="1.0"><dict>
            <key>CFBundleIdentifier</key><string>\(bundle)</string>
            <key>CFBundleExecutable</key><string>\(executable)</string>
            <key>BatonTeamIdentifier</key><string>EXAMPLE123</string>
            <key>NSUserActivityTypes</key><array><string>\(type)</string></array>
            </dict></plist>
            """.utf8
        )
    }

    /// What the desktop offers from the laptop, once it shows `title` (asking the laptop what it is, C3), within 2 s
    /// of real time; nil when it never does.
    static func desktopOffers(_ title: String, in world: InMemoryDevices) async throws -> NearbyItem? {
        for _ in 0..<400 {
            if let item = await world.agents[1].nearbyItems(describe: true).first, item.title == title { return item }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    @Test(
        "issue 27 item 3, A9: Notes' title change after Music became current leaves Music offered on the desktop; Notes' becomeCurrent takes over again"
    )
    func updateDoesNotTakeOver() async throws {
        let world = try await InMemoryDevices.start(
            names: ["laptop", "desktop"],
            infoPlists: [
                Self.info("com.example.Notes", "notes", type: "com.example.notes.edit"),
                Self.info("com.example.Music", "music", type: "com.example.music.play"),
            ]
        )
        let notes = BatonApplication()
        let music = BatonApplication()
        defer {
            notes.disconnect()
            music.disconnect()
            Task { await world.shutdown() }
        }
        try await notes.connect(bundleIdentifier: "com.example.Notes", socketPath: world.agents[0].socketPath)
        try await music.connect(bundleIdentifier: "com.example.Music", socketPath: world.agents[0].socketPath)

        let note = try UserActivity(activityType: "com.example.notes.edit", application: notes)
        note.title = "Groceries"
        note.becomeCurrent()
        #expect(try await Self.desktopOffers("Groceries", in: world)?.app == "com.example.Notes")

        // The person starts a song: Music's activity wins (the latest person action).
        let song = try UserActivity(activityType: "com.example.music.play", application: music)
        song.title = "Song — Artist"
        song.becomeCurrent()
        // Notes updates its title at once, before it can have heard that it is no longer current: an update, ignored.
        note.title = "Groceries (2)"
        #expect(try await Self.desktopOffers("Song — Artist", in: world)?.app == "com.example.Music")
        for _ in 0..<400 where note.isCurrent { try await Task.sleep(for: .milliseconds(5)) }
        #expect(!note.isCurrent && notes.currentActivity == nil, "Notes heard notCurrent: its note is no longer current")
        #expect(song.isCurrent)

        // Later, Notes changes its title again (a sync, a counter): the desktop still offers the song.
        note.title = "Groceries (3)"
        note.needsSave = true
        try await Task.sleep(for: .milliseconds(100))
        let offered = await world.agents[1].nearbyItems(describe: true)
        #expect(offered.count == 1 && offered.first?.title == "Song — Artist" && offered.first?.app == "com.example.Music", "\(offered)")
        #expect(!note.isCurrent)

        // The person goes back to the note: its becomeCurrent is theirs, and takes over; Music is told.
        note.becomeCurrent()
        #expect(try await Self.desktopOffers("Groceries (3)", in: world)?.app == "com.example.Notes")
        for _ in 0..<400 where song.isCurrent { try await Task.sleep(for: .milliseconds(5)) }
        #expect(!song.isCurrent && note.isCurrent)
    }
}
