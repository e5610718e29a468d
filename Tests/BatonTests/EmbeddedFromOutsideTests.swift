import BatonEmbedded
import BatonInMemory
import Foundation
import Testing

// No `import BatonRegistry` here, on purpose: this is what code outside the package can write (issue 12 part 5).

/// The embedded mode as another package uses it: devices started from Info.plist data, an `NSUserActivity` made for
/// one of several application objects in the process.
@Suite("The embedded mode from outside the package (issue 12 part 5)")
@MainActor
struct EmbeddedFromOutsideTests {
    @Test("devices from Info.plist data alone; NSUserActivity(activityType:application:) hands over on the other device")
    func fromInfoPlistData() async throws {
        let info = Data(TwoDevices.info.utf8)
        // In memory (issue 26 item 3), from outside the package as well: BatonInMemory's public API, no socket.
        let devices = try await InMemoryDevices.start(names: ["laptop", "desktop"], infoPlists: [info]) { $0.saveDeadline = 10 }
        let laptop = BatonApplication()
        let desktop = BatonApplication()
        try await laptop.connect(bundleIdentifier: "com.example.Notes", socketPath: devices.agents[0].socketPath)
        try await desktop.connect(bundleIdentifier: "com.example.Notes", socketPath: devices.agents[1].socketPath)
        var events = desktop.events.makeAsyncIterator()

        let activity = NSUserActivity(activityType: "com.example.notes.edit", application: laptop)
        activity.title = "From outside"
        activity.userInfo = ["note": "Milk"]
        activity.becomeCurrent()
        #expect(activity.activity.application === laptop && laptop.currentActivity === activity.activity)
        var nearby = false
        for _ in 0..<500 where !nearby {
            nearby = await !devices.agents[1].nearbyItems().isEmpty
            if !nearby { try await Task.sleep(for: .milliseconds(2)) }
        }
        #expect(nearby)
        _ = await devices.agents[1].continueNearby(device: "laptop")
        var continued: UserActivity?
        while let event = await events.next(isolation: #isolation) {
            if case .willContinue = event { continue }
            if case .continued(let activity) = event { continued = activity }
            break
        }
        #expect(continued?.title == "From outside" && continued?.userInfo["note"] == "Milk")
        activity.invalidate()
        laptop.disconnect()
        desktop.disconnect()
        await devices.shutdown()
    }

    @Test("an Info.plist that does not load leaves its app unregistered: the agent refuses it by name")
    func badInfoPlist() async throws {
        // LocalDevices on the network, as outside code embeds agents for real: its infoPlists entry stays covered.
        let devices = try await LocalDevices.start(names: ["laptop"], infoPlists: [Data("not a plist".utf8)])
        let app = BatonApplication()
        let error = await #expect(throws: BatonClientError.self) {
            try await app.connect(bundleIdentifier: "com.example.Notes", socketPath: devices.agents[0].socketPath)
        }
        #expect("\(error.map { "\($0)" } ?? "")".contains("unknownApp"))
        await devices.shutdown()
    }
}
