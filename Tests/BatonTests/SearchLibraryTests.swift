@testable import Baton
import BatonCore
import BatonProtocol
import Foundation
import Testing

/// An app connected to a ``FakeStreamAgent`` that plays its agent: the test reads what the library sends and answers
/// for the agent (docs/PROTOCOL.md §7).
@MainActor
final class FakeAgentApp {
    let agent: FakeStreamAgent
    let app: BatonApplication
    let connection: FakeStreamAgent.Connection

    init() async throws {
        let agent = try await FakeStreamAgent()
        let app = BatonApplication()
        let connecting = Task { try await app.connect(bundleIdentifier: "com.example.Notes", socketPath: agent.path) }
        guard let connection = await agent.next() else { throw ContinuationError(.other, "the app did not connect") }
        _ = await connection.hello()
        connection.send(.welcome(device: "d", deviceName: "laptop"))
        try await connecting.value
        self.agent = agent
        self.app = app
        self.connection = connection
    }

    /// The next message the app sends, or nil once its connection closed.
    func next() async -> IPCMessage? {
        for await event in connection.events {
            switch event {
            case .message(let message): return message
            case .data: continue
            case .closed: return nil
            }
        }
        return nil
    }

    func stop() {
        app.disconnect()
        agent.stop()
    }
}

/// Counts the saves the library asks of an activity's delegate (A7) and stamps each into `userInfo`.
@MainActor
final class SaveCounter: UserActivityDelegate {
    var saves = 0

    func userActivityWillSave(_ userActivity: UserActivity) {
        saves += 1
        userActivity.userInfo["save"] = .integer(Int64(saves))
    }
}

/// What the library sends the device's search index (G1) and how it deletes what was saved (G3), against a fake agent:
/// the agent's side is its own (BatonAgentTests).
@Suite("On-device search from the app's side (G1, G3)", .timeLimit(.minutes(1)))
@MainActor
struct SearchLibraryTests {
    static let type = "com.example.notes.edit"

    /// An activity eligible for search, as a notes app makes one.
    static func searchable(_ app: BatonApplication, _ delegate: SaveCounter? = nil) throws -> UserActivity {
        let activity = try UserActivity(activityType: type, application: app)
        activity.title = "Shopping list"
        activity.keywords = ["groceries", "milk"]
        activity.persistentIdentifier = "note-7"
        activity.isEligibleForSearch = true
        activity.delegate = delegate
        return activity
    }

    @Test("G1: an eligible activity becoming current is indexed with its saved state: title, identifier, keywords")
    func indexedWhenCurrent() async throws {
        let world = try await FakeAgentApp()
        let counter = SaveCounter()
        let activity = try Self.searchable(world.app, counter)
        activity.becomeCurrent()
        guard case .becomeCurrent(let current, _, _) = await world.next(), case .index(let indexed, let data) = await world.next() else {
            Issue.record("no becomeCurrent then index")
            return
        }
        #expect(current == activity.identifier && indexed == activity.identifier, "the same number as becomeCurrent's")
        let payload = try ActivityPayload(decoding: data)
        #expect(payload.title == "Shopping list" && payload.persistentIdentifier == "note-7")
        #expect(payload.keywords == ["groceries", "milk"] && payload.isEligibleForSearch)
        #expect(payload.userInfo["save"] == 1, "the delegate was asked for the state first (A7)")
        #expect(counter.saves == 1)
        activity.invalidate()
        world.stop()
    }

    @Test("G1: an activity not eligible for search is never indexed, current or saved")
    func notEligibleNotIndexed() async throws {
        let world = try await FakeAgentApp()
        let activity = try Self.searchable(world.app)
        activity.isEligibleForSearch = false
        activity.becomeCurrent()
        #expect(await world.next() == .becomeCurrent(activity: activity.identifier, world.app.notice(activity)))
        world.connection.send(.save(request: 4, activity: activity.identifier, deadlineMilliseconds: 1_000))
        guard case .saved(4, _) = await world.next() else {
            Issue.record("the save was not answered")
            return
        }
        activity.needsSave = true
        activity.resignCurrent()
        // The socket keeps order: had anything been indexed, it would come before the resign.
        #expect(await world.next() == .resignCurrent(activity: activity.identifier))
        world.stop()
    }

    @Test("G1, A6: a save the agent asks for is indexed too, with the same state and one call to the delegate")
    func agentSaveIndexed() async throws {
        let world = try await FakeAgentApp()
        world.app.searchSaveDelay = .seconds(60)  // only the agent's request saves here
        let counter = SaveCounter()
        let activity = try Self.searchable(world.app, counter)
        activity.becomeCurrent()
        _ = await world.next()
        _ = await world.next()
        activity.title = "Shopping list, Saturday"
        activity.needsSave = true
        // The new title is an update (issue 27 item 3): applied while current, never a takeover.
        #expect(await world.next() == .becomeCurrent(activity: activity.identifier, world.app.notice(activity), isUpdate: true), "the new title")
        world.connection.send(.save(request: 9, activity: activity.identifier, deadlineMilliseconds: 1_000))
        guard case .saved(9, let saved) = await world.next(), case .index(activity.identifier, let indexed) = await world.next() else {
            Issue.record("no saved then index")
            return
        }
        #expect(saved == indexed, "the state the agent was given is the one indexed")
        let payload = try ActivityPayload(decoding: indexed)
        #expect(payload.title == "Shopping list, Saturday" && payload.userInfo["save"] == 2)
        #expect(counter.saves == 2, "once at becomeCurrent, once for the agent's request")
        activity.invalidate()
        world.stop()
    }

    @Test("G1, A6: needsSave on the current eligible activity is saved and indexed shortly after, once however often set")
    func needsSaveIndexed() async throws {
        let world = try await FakeAgentApp()
        world.app.searchSaveDelay = .milliseconds(20)
        let counter = SaveCounter()
        let activity = try Self.searchable(world.app, counter)
        activity.becomeCurrent()
        _ = await world.next()
        _ = await world.next()
        for keystroke in 1...5 {
            activity.keywords.insert("item \(keystroke)")
            activity.needsSave = true
        }
        guard case .index(activity.identifier, let data) = await world.next() else {
            Issue.record("needsSave was not indexed")
            return
        }
        let payload = try ActivityPayload(decoding: data)
        #expect(payload.keywords.contains("item 5") && payload.userInfo["save"] == 2)
        #expect(counter.saves == 2)
        // Set from another thread, through Apple's shape: the same.
        let wrapper = activity.nsUserActivity
        await Task.detached { wrapper.needsSave = true }.value
        guard case .index(activity.identifier, let again) = await world.next() else {
            Issue.record("needsSave from another thread was not indexed")
            return
        }
        #expect(try ActivityPayload(decoding: again).userInfo["save"] == 3)
        activity.resignCurrent()
        #expect(await world.next() == .resignCurrent(activity: activity.identifier), "nothing else was indexed")
        #expect(counter.saves == 3)
        world.stop()
    }

    @Test("G3: deleting 2,500 identifiers sends three deletes of at most 1,000, each answered, and returns the total")
    func deleteInParts() async throws {
        let world = try await FakeAgentApp()
        let identifiers = (0..<2_500).map { "note-\($0)" }
        let app = world.app
        let deleted = Task { try await UserActivity.deleteSavedUserActivities(withPersistentIdentifiers: identifiers, application: app) }
        var sent: [String] = []
        var requests: Set<UInt64> = []
        for _ in 0..<3 {
            guard case .deleteSaved(let request, let part?) = await world.next() else {
                Issue.record("no delete with identifiers")
                return
            }
            #expect(part.count <= IPCMessage.maximumDeletedIdentifiers)
            sent += part
            requests.insert(request)
            world.connection.send(.deletedSaved(request: request, count: UInt64(part.count) - 1, failure: nil))
        }
        #expect(try await deleted.value == 2_497, "the counts the agent reported, added up")
        #expect(sent == identifiers && requests.count == 3)
        world.stop()
    }

    @Test("G3: deleteAll sends a delete without identifiers; a failure the agent reports is thrown as searchFailed")
    func deleteAllAndFailure() async throws {
        let world = try await FakeAgentApp()
        let app = world.app
        let all = Task { try await UserActivity.deleteAllSavedUserActivities(application: app) }
        guard case .deleteSaved(let request, nil) = await world.next() else {
            Issue.record("no delete of everything")
            return
        }
        world.connection.send(.deletedSaved(request: request, count: 3, failure: nil))
        #expect(try await all.value == 3)

        let failing = Task { try await UserActivity.deleteSavedUserActivities(withPersistentIdentifiers: ["note-1"], application: app) }
        guard case .deleteSaved(let second, ["note-1"]?) = await world.next() else {
            Issue.record("no delete of note-1")
            return
        }
        world.connection.send(.deletedSaved(request: second, count: 0, failure: SearchIndexFailure(.unwritable, "the disk is full")))
        let error = await #expect(throws: ContinuationError.self) { try await failing.value }
        #expect(error?.code == .searchFailed && error?.message.contains("the disk is full") == true)
        world.stop()
    }

    @Test("G3: no agent, an overlong identifier, or the connection ending first: each its own code")
    func deleteErrors() async throws {
        let lonely = BatonApplication()
        let notConnected = await #expect(throws: ContinuationError.self) {
            try await UserActivity.deleteAllSavedUserActivities(application: lonely)
        }
        #expect(notConnected?.code == .notConnected)

        let world = try await FakeAgentApp()
        let app = world.app
        let long = String(repeating: "x", count: IPCMessage.maximumPersistentIdentifierLength + 1)
        let tooLong = await #expect(throws: ContinuationError.self) {
            try await UserActivity.deleteSavedUserActivities(withPersistentIdentifiers: ["ok", long], application: app)
        }
        #expect(tooLong?.code == .identifierTooLong)
        #expect(try await UserActivity.deleteSavedUserActivities(withPersistentIdentifiers: [], application: app) == 0, "nothing to ask")

        let waiting = Task { try await UserActivity.deleteSavedUserActivities(withPersistentIdentifiers: ["note-1"], application: app) }
        guard case .deleteSaved = await world.next() else {
            Issue.record("no delete")
            return
        }
        world.connection.close()
        let gone = await #expect(throws: ContinuationError.self) { try await waiting.value }
        #expect(gone?.code == .agentGone)
        world.stop()
    }

    @Test("G3: an agent that never answers a delete (one that does not know it) ends in timedOut, not a wait forever")
    func deleteTimesOut() async throws {
        let world = try await FakeAgentApp()
        world.app.deletionTimeout = .milliseconds(50)
        let app = world.app
        let waiting = Task { try await UserActivity.deleteAllSavedUserActivities(application: app) }
        guard case .deleteSaved(let request, nil) = await world.next() else {
            Issue.record("no delete")
            return
        }
        let late = await #expect(throws: ContinuationError.self) { try await waiting.value }
        #expect(late?.code == .timedOut)
        world.connection.send(.deletedSaved(request: request, count: 1, failure: nil))  // too late: ignored
        #expect(world.app.deletions.isEmpty)
        world.stop()
    }

    @Test("G3: Apple's completion-handler form calls its handler on the main actor even when the deletion failed")
    func completionHandlerAfterFailure() async throws {
        // The shared application is not connected in this process's BatonTests (AppleShapedTests connect it).
        guard !BatonApplication.shared.isConnected else { return }
        var called = false
        NSUserActivity.deleteAllSavedUserActivities {
            MainActor.assertIsolated()
            called = true
        }
        #expect(!called, "not before the deletion was tried")
        for _ in 0..<500 where !called {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(called)
    }
}
