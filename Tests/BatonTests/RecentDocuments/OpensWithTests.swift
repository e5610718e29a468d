@testable import BatonAgent
import BatonEmbedded
import BatonRegistry
import BatonTestSupport
import Foundation
import Testing

/// Which application will open a document continued here (issue 27 item 3): `baton nearby` (its items' `opensWith`)
/// and the desktop notification name the application the continuing device's documents app will open it with (its
/// desktop file's `Name`), not the built-in app `org.baton.documents`.
@Suite("Issue 27 item 3: nearby and the notification show the application that will open a document", .serialized)
struct OpensWithTests {
    typealias World = RecentDocumentsTests.World

    /// `name`, synced to both devices, used on the laptop in "Baton Test Editor" (as its xbel records it).
    static func laptopUses(_ name: String, in world: World) throws {
        for device in ["laptop", "desktop"] {
            try Data("x".utf8).write(to: world.folder(device).appendingPathComponent(name))
        }
        let href = URL(fileURLWithPath: world.folder("laptop").appendingPathComponent(name).path).absoluteString
        try RecentDocumentsTests.replace(
            world.data("laptop").appendingPathComponent("recently-used.xbel"), with: Data(RecentDocumentsTests.xbel(href: href).utf8)
        )
    }

    @Test(
        "issue 27 item 3: the desktop lists the laptop's document as opening in the desktop's default application for its type, which is what opens it",
        .timeLimit(.minutes(1))
    )
    func defaultApplicationNamed() async throws {
        // The laptop used "Baton Test Editor"; the desktop has not got it, and its default for text/plain is "Baton Test Viewer".
        let world = try await World.start(editorOnDesktop: false)
        defer { Task { await world.stop() } }
        try Self.laptopUses("plan.txt", in: world)
        #expect(await world.offeredTitle(within: 10) == "plan.txt — Baton Test Editor", "the title says what the laptop used")

        let desktop = world.devices.agents[1]
        let items = await desktop.nearbyItems(describe: true)
        let item = try #require(items.first)
        #expect(item.app == RecentDocumentsApp.bundleIdentifier)
        #expect(item.opensWith == "Baton Test Viewer", "nearby names what will open it here: \(items)")
        let notice = try #require(desktop.notificationOffers(items).first)
        #expect(notice.appName == "Baton Test Viewer")
        #expect(notice.notice.body.hasSuffix("continue it here in Baton Test Viewer."), "\(notice.notice.body)")

        // And that is what opens it.
        let outcome = await desktop.continueNearby(device: "laptop")
        #expect(outcome.failure == nil, "\(outcome)")
        let opened = await DesktopFixtures.recordedArguments(world.recorded)
        #expect(opened?.hasPrefix("--view\n") == true, "the viewer opened it: \(opened ?? "nothing")")
    }

    @Test("issue 27 item 3: where the laptop's application is installed, nearby names it", .timeLimit(.minutes(1)))
    func sameApplicationNamed() async throws {
        let world = try await World.start()
        defer { Task { await world.stop() } }
        try Self.laptopUses("plan.txt", in: world)
        #expect(await world.offeredTitle(within: 10) != nil)
        let items = await world.devices.agents[1].nearbyItems(describe: true)
        #expect(items.first?.opensWith == "Baton Test Editor", "\(items)")
    }
}
