import BatonEmbedded
import BatonProtocol
import Foundation
import Testing

/// What `baton nearby --watch` is told (C3; issue 26 item 5): a new offer at once from the nearby table, without
/// waiting for its device to describe it, then once more with the type and title it told.
@Suite("C3: watchers see an offer at once, then its description (issue 26 item 5)")
@MainActor
struct WatchNearbyTests {
    /// The lists a watcher was told, in order.
    @MainActor
    final class Told {
        var lists: [[NearbyItem]] = []
        /// The laptop's offers in them, in order.
        var offers: [NearbyItem] { lists.flatMap { $0.filter { $0.deviceName == "laptop" } } }
    }

    @Test("C3, issue 26 item 5: the watcher hears of a new offer before its title is known, then again with the title", .timeLimit(.minutes(1)))
    func offerAtOnceThenDescribed() async throws {
        let world = try await TwoDevices(transport: .memory)
        let watcher = try await AgentClient.connect(path: world.devices.agents[1].socketPath, bundleIdentifier: nil)
        let told = Told()
        var messages = watcher.messages.makeAsyncIterator()
        /// Waits for the next list the watcher is told (false once its connection has ended).
        func hear() async -> Bool {
            while let message = await messages.next(isolation: #isolation) {
                if case .nearbyChanged(let items) = message {
                    told.lists.append(items)
                    return true
                }
            }
            return false
        }
        watcher.send(.watchNearby)
        // The first answer is the list as it is (empty): the offer made after it is a change the watcher is told of.
        _ = await hear()
        #expect(told.lists.first == [], "\(told.lists)")
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: world.laptop)
        activity.title = "Groceries"
        activity.becomeCurrent()
        while !told.offers.contains(where: { $0.title != nil }), await hear() {}
        watcher.close()
        let seen = told.offers
        #expect(seen.first?.title == nil, "the first message waited for the description: \(seen)")
        #expect(seen.first?.app == "com.example.Notes", "the table names the app here at once (D1): \(seen)")
        #expect(seen.last?.title == "Groceries" && seen.last?.activityType == "com.example.notes.edit", "\(seen)")
        await world.stop()
    }
}
