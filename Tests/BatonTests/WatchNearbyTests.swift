import BatonEmbedded
import BatonProtocol
import Foundation
import Testing

/// What `baton nearby --watch` is told (C3; issue 26 item 5): a new offer at once from the nearby table, without
/// waiting for its device to describe it, then once more with the type and title it told.
@Suite("C3: watchers see an offer at once, then its description (issue 26 item 5)")
@MainActor
struct WatchNearbyTests {
    @Test("C3, issue 26 item 5: the watcher hears of a new offer before its title is known, then again with the title")
    func offerAtOnceThenDescribed() async throws {
        let world = try await TwoDevices()
        let watcher = try await AgentClient.connect(path: world.devices.agents[1].socketPath, bundleIdentifier: nil)
        defer { watcher.close() }
        var messages = watcher.messages.makeAsyncIterator()
        watcher.send(.watchNearby)
        // The first answer is the list as it is (empty): the offer made after it is a change the watcher is told of.
        guard case .nearbyChanged(let before) = await messages.next(isolation: #isolation) else {
            Issue.record("the watcher's first answer was not the list")
            return await world.stop()
        }
        #expect(before.isEmpty)
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: world.laptop)
        activity.title = "Groceries"
        activity.becomeCurrent()
        // Reads up to the first titled offer; if none comes in 10 s, closing the watcher ends the stream.
        let stopping = Task { @MainActor in
            try? await Task.sleep(for: .seconds(10))
            watcher.close()
        }
        var offers: [NearbyItem] = []
        while !offers.contains(where: { $0.title != nil }), let message = await messages.next(isolation: #isolation) {
            guard case .nearbyChanged(let items) = message else { continue }
            offers += items.filter { $0.deviceName == "laptop" }
        }
        stopping.cancel()
        let seen = offers
        #expect(seen.first?.title == nil, "the first message waited for the description: \(seen)")
        #expect(seen.first?.app == "com.example.Notes", "the table names the app here at once (D1): \(seen)")
        #expect(seen.last?.title == "Groceries" && seen.last?.activityType == "com.example.notes.edit", "\(seen)")
        await world.stop()
    }
}
