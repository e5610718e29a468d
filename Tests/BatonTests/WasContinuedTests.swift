import BatonEmbedded
import BatonProtocol
import Foundation
import Testing

/// Issue 25 item 4, A8: the originating app hears `userActivityWasContinued` only once the continuing device's app
/// has the activity; a device with no app for it fails `noApp` before asking anyone for the state; an app that
/// refuses to give its state is told apart from one that does not answer (C8).
@Suite("A8: wasContinued only after a real continuation (issue 25 item 4)")
@MainActor
struct WasContinuedTests {
    /// Waits up to `seconds` for `recorder` to record `call`.
    static func wait(for call: String, in recorder: Recorder, seconds: Double) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if recorder.calls.contains(call) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return recorder.calls.contains(call)
    }

    @Test("issue 25 item 4, A8, D1: no app on the continuing device: noApp, and the originating app is neither asked to save nor told wasContinued")
    func noAppTellsNothing() async throws {
        let world = try await TwoDevices(transport: .memory)
        let laptop = Recorder()
        world.laptop.delegate = laptop
        // A type no app of either device claims (only com.example.notes.edit and .document are): the desktop has no
        // app for it, and it has no web page to fall back on.
        let activity = try UserActivity(activityType: "com.example.unclaimed.edit", application: world.laptop)
        activity.delegate = laptop
        activity.userInfo["secret"] = "the full state"
        activity.needsSave = true
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        let outcome = await world.devices.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == ContinuationOutcome.Failure(.noApp), "\(outcome)")
        #expect(!(try await Self.wait(for: "wasContinued", in: laptop, seconds: 1)), "A8: nothing was continued: \(laptop.calls)")
        #expect(!laptop.calls.contains("willSave"), "routed before fetching: the state was never asked for: \(laptop.calls)")
        await world.stop()
    }

    @Test("issue 25 item 4, A8: after a real continuation the originating app hears wasContinued, once")
    func realContinuationTells() async throws {
        let world = try await TwoDevices(transport: .memory)
        let recorder = Recorder()
        world.laptop.delegate = recorder
        world.desktop.delegate = recorder
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: world.laptop)
        activity.delegate = recorder
        activity.userInfo["note"] = "Groceries"
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        let events = await world.continueOnDesktop()
        guard case .continued = events.last else {
            Issue.record("not continued: \(events)")
            await world.stop()
            return
        }
        #expect(try await Self.wait(for: "wasContinued", in: recorder, seconds: 5), "A8: \(recorder.calls)")
        // The agents' order (deliver written to the desktop app, then the notice, then the laptop told) is the broker's
        // and is checked there (HandoffBrokerContinuationTests: a success only after its deliver); two apps in one
        // process run their delegates on one main actor in whatever order their sockets are read, so not here.
        #expect(recorder.calls.contains("continue com.example.notes.edit"), "\(recorder.calls)")
        #expect(recorder.calls.filter { $0 == "wasContinued" }.count == 1)
        await world.stop()
    }

    @Test("issue 25 item 4, C8: an originating app that refuses its state at once fails saveFailed (NSCocoaError 4608), not appNotAnswering (4610)")
    func refusedSave() async throws {
        let world = try await TwoDevices(transport: .memory)
        let recorder = Recorder()
        world.desktop.delegate = recorder
        // A bare client that answers every save at once with saveFailed.
        let refusing = try await AgentClient.connect(path: world.devices.agents[0].socketPath, bundleIdentifier: "com.example.Notes")
        refusing.send(.becomeCurrent(activity: 99, ActivityNotice(activityType: "com.example.notes.edit", title: "Refusing")))
        let answering = Task {
            for await message in refusing.messages {
                if case .save(let request, _, _) = message {
                    refusing.send(.saveFailed(request: request, message: "the note was deleted"))
                }
            }
        }
        try await world.waitUntilNearby()
        // Not timed: with every test running at once on 2 cores the test's own wake-ups can be seconds late. The code
        // says it: the 10 s save deadline would end in appNotAnswering, not saveFailed.
        let events = await world.continueOnDesktop()
        #expect(recorder.calls == ["will com.example.notes.edit", "didFail saveFailed"], "\(recorder.calls)")
        guard case .failed(_, let error) = events.last else {
            Issue.record("\(events)")
            answering.cancel()
            await world.stop()
            return
        }
        #expect(error.code == .saveFailed)
        #expect(error.message.contains("could not give its state: the note was deleted"), "\(error.message)")
        let bridged = error as Error as NSError
        #expect(bridged.domain == NSCocoaErrorDomain && bridged.code == CocoaError.Code.userActivityHandoffFailed.rawValue)
        answering.cancel()
        refusing.close()
        await world.stop()
    }
}
