import Foundation
import Testing

/// Who wins between the browser and an app (issue 27 item 3; A9; docs/ARCHITECTURE.md, "Who wins"), as `baton nearby`
/// on the other device shows it: agent processes on loopback, `baton browser-host` fed as a browser feeds it, and the
/// Notes example.
@Suite("Issue 27 item 3: who wins between the browser and Notes, as baton nearby shows it (A9)", .serialized)
struct WhoWinsCLITests {
    @Test(
        "issue 27 item 3, A9: a page retitling itself after Notes became current (the browser kept focus) does not take current back; a tab switch does"
    )
    func pageRetitledDoesNotTakeOver() async throws {
        let world = try await startingProcesses {
            let (world, _) = try HandoffWorld.notesOnTwoDevices()
            return world
        }
        let host = try await world.browserHost(on: "laptop")
        host.sendNative(Background.tab("https://mail.example/inbox", "Inbox"))
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Inbox") }, "\(host.output)")

        // The person opens a note: Notes' activity wins (the latest person action).
        let note = try world.note("Shared/groceries.note").path
        let shared = world.root.appendingPathComponent("Shared").resolvingSymlinksInPath().path
        for name in ["laptop", "desktop"] {
            let state = world.state(name)
            let added = try await offPool { try Baton.run("folders", "add", "shared", shared, "--state", state) }
            try #require(added.status == 0, "\(added.output)")
        }
        _ = try await startingProcesses { try world.notes(on: "laptop", [note, "--line", "3"], ready: "opened \(note) at line 3") }
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Groceries") })

        // The page retitles itself (a new message) while the browser keeps focus: an update, not the person's doing.
        host.sendNative(Background.tab("https://mail.example/inbox", "(1) Inbox"))
        try await Task.sleep(for: .seconds(1))
        let shown = try await world.nearbyList("desktop")
        #expect(shown.contains("Groceries") && !shown.contains("Inbox"), "the desktop still offers the note: \(shown)\n\(host.output)")

        // The person switches tabs: that is theirs, and takes over.
        host.sendNative(Background.tab("https://mail.example/sent", "Sent"))
        #expect(try await settles(timeout: 8) { try await world.nearbyShows("desktop", "Sent") }, "\(host.output)")
    }
}
