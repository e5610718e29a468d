@testable import BatonAgent
import BatonEmbedded
import Foundation
import Testing

/// An agent stopped and dropped is freed, with its links, whoever is still connected to it (issue 26 item 1: no two
/// objects hold each other).
@MainActor
@Suite("Issue 26 item 1: an agent shut down and dropped leaves nothing behind")
struct AgentReleaseTests {
    @Test("issue 26 item 1: agents shut down after a handoff, their apps still connected, are freed with their links")
    func stoppedAgentsAreFreed() async throws {
        var held: [StreamReleaseTests.Weak<AnyObject>] = []
        let apps: [BatonApplication]
        let folder: URL
        do {
            let world = try await TwoDevices(transport: .memory)
            apps = [world.laptop, world.desktop]
            folder = world.apps
            let activity = try UserActivity(activityType: "com.example.notes.edit", application: world.laptop)
            activity.title = "Freed"
            activity.becomeCurrent()
            try await world.waitUntilNearby()
            let events = await world.continueOnDesktop()
            #expect(events.contains { if case .continued = $0 { true } else { false } }, "\(events)")
            let agents = world.devices.agents
            for (agent, other) in zip(agents, agents.reversed()) {
                // The link was used (the roster sync and the fetch) and the apps are connected: both reach the agent.
                #expect(agent.links.existing(other.identity.id) != nil)
                held += [StreamReleaseTests.Weak<AnyObject>(agent), StreamReleaseTests.Weak<AnyObject>(agent.links)]
            }
            activity.invalidate()
            // The apps stay connected: an app's connection must not keep a stopped agent alive.
            await world.devices.shutdown()
        }
        defer {
            for app in apps { app.disconnect() }
            try? FileManager.default.removeItem(at: folder)
        }
        #expect(held.count == 4)
        var gone = false
        for _ in 0..<200 where !gone {
            gone = held.allSatisfy { $0.object == nil }
            if !gone { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(gone, "\(held.compactMap { $0.object.map { "\(type(of: $0))" } }) still alive 10 s after the shutdown")
    }
}
