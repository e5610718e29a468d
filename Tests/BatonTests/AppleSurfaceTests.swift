import BatonEmbedded
import Foundation
import Testing

/// Apple-shaped code: a helper that builds activities off the main actor, as real apps' activity managers do
/// (issue 12 part 1). Not isolated to any actor.
final class ReadingActivityManager: NSUserActivityDelegate, @unchecked Sendable {
    let application: BatonApplication
    private let lock = NSLock()
    private var _saves = 0
    var saves: Int { lock.withLock { _saves } }

    init(application: BatonApplication) {
        self.application = application
    }

    func readingActivity(article: String, position: Int) -> NSUserActivity {
        let activity = NSUserActivity(activityType: "com.example.notes.edit", application: application)
        activity.title = "Reading \(article)"
        activity.keywords = ["reading", article]
        activity.isEligibleForSearch = true
        activity.isEligibleForPrediction = true
        activity.userInfo = ["article": article, "position": position]
        activity.requiredUserInfoKeys = ["article", "position", "savedBy"]
        activity.delegate = self
        activity.needsSave = true
        return activity
    }

    func userActivityWillSave(_ userActivity: NSUserActivity) {
        lock.withLock { _saves += 1 }
        userActivity.addUserInfoEntries(from: ["savedBy": "manager"])
    }
}

@Suite("Apple's NSUserActivity from any thread (issue 12)", .serialized)
@MainActor
struct AppleSurfaceTests {
    @Test("an activity made, filled and made current off the main actor is continued with its state; numbers bridge")
    func offTheMainActor() async throws {
        let world = try await TwoDevices(transport: .memory)
        let manager = ReadingActivityManager(application: world.laptop)
        // Built on the cooperative pool, not the main actor, as a background helper would.
        let activity = await Task.detached {
            let activity = manager.readingActivity(article: "Handoff", position: 3)
            activity.becomeCurrent()
            return activity
        }.value
        try await world.waitUntilNearby()
        #expect(world.laptop.currentActivity === activity.activity)
        let events = await world.continueOnDesktop()
        guard case .continued(let continued) = events.last else {
            Issue.record("\(events)")
            return
        }
        #expect(manager.saves == 1, "the delegate was asked once")
        let info = continued.nsUserActivity.userInfo
        #expect(info?["article"] as? String == "Handoff" && info?["savedBy"] as? String == "manager")
        #expect(info?["position"] as? Int == 3 && info?["position"] as? Double == 3.0, "NSNumber bridging")
        #expect(continued.keywords.isEmpty || continued.keywords == ["reading", "Handoff"])
        await Task.detached { activity.invalidate() }.value
        await world.stop()
    }

    @Test("calls from another thread take effect in the order made: the last of 100 alternating becomeCurrent calls wins")
    func orderFromAnotherThread() async throws {
        let app = BatonApplication()
        let first = NSUserActivity(activityType: "com.example.first", application: app)
        let second = NSUserActivity(activityType: "com.example.second", application: app)
        await Task.detached {
            for index in 0..<100 { (index.isMultiple(of: 2) ? second : first).becomeCurrent() }
            second.title = "renamed from afar"
            second.invalidate()  // the last call: once it has run, so has everything before it
        }.value
        for _ in 0..<500 where second.activity.isValid {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(app.currentActivity === first.activity && !second.activity.isCurrent)
        #expect(second.activity.title == "renamed from afar", "values are shared at once")
        first.invalidate()
        #expect(app.currentActivity == nil && !first.activity.isValid, "on the main actor it takes effect before returning")
    }

    @Test("the delegate's userInfo survives responders: emptied first, then willSave, then each responder (B2)")
    func delegateAndResponders() async throws {
        let world = try await TwoDevices(transport: .memory)
        let manager = ReadingActivityManager(application: world.laptop)
        let activity = manager.readingActivity(article: "Order", position: 1)
        var log: [String] = []
        let pane = Pane("pane", "value") { log.append($0) }
        pane.userActivity = activity.activity
        activity.requiredUserInfoKeys = nil
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        let events = await world.continueOnDesktop()
        guard case .continued(let continued) = events.last else {
            Issue.record("\(events)")
            return
        }
        #expect(log == ["update pane (userInfo had 1 keys)"], "the responder ran after the delegate's entry was added")
        #expect(continued.userInfo["savedBy"] == "manager" && continued.userInfo["pane"] == "value")
        #expect(continued.userInfo["article"] == nil, "what was there before the save is gone (B2)")
        pane.userActivity = nil
        await world.stop()
    }

    @Test("dropping the NSUserActivity wrapper keeps its delegate: a responder holding only the activity still saves through it")
    func wrapperDropped() async throws {
        let world = try await TwoDevices(transport: .memory)
        let manager = ReadingActivityManager(application: world.laptop)
        let pane = Pane("pane", "kept") { _ in }
        do {
            let activity = manager.readingActivity(article: "Dropped", position: 2)
            activity.requiredUserInfoKeys = nil
            pane.userActivity = activity.activity
            activity.becomeCurrent()
        }
        try await world.waitUntilNearby()
        let events = await world.continueOnDesktop()
        guard case .continued(let continued) = events.last else {
            Issue.record("\(events)")
            return
        }
        #expect(manager.saves == 1)
        #expect(continued.userInfo["savedBy"] == "manager" && continued.userInfo["pane"] == "kept")
        pane.userActivity = nil
        await world.stop()
    }
}
