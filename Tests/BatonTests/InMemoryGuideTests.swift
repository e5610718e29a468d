import Foundation
import Testing

// The guide's section "Testing your app without a network: BatonInMemory" (docs/GUIDE.md; issue 26 item 3): the code
// between the markers below is the guide's sample word for word (a test checks it), so the sample compiles and passes.

/// The guide's BatonInMemory sample, run.
@MainActor
@Suite("The guide's \"Testing your app without a network: BatonInMemory\": compiled as written, and passing (issue 26 item 3)")
struct InMemoryGuideTests {
    @Test("the guide shows the sample here as it is")
    func guideShowsTheSample() throws {
        let here = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let begin = try #require(here.range(of: "// BEGIN InMemoryGuide\n"))
        let end = try #require(here.range(of: "// END InMemoryGuide\n"))
        let sample = String(here[begin.upperBound..<end.lowerBound])
        let guide = try String(contentsOf: FirstAppTests.packageRoot.appendingPathComponent("docs/GUIDE.md"), encoding: .utf8)
        #expect(guide.contains("```swift\n" + sample + "```\n"), "docs/GUIDE.md does not show the sample of InMemoryGuideTests.swift as it is")
    }
}

// BEGIN InMemoryGuide
import Baton
import BatonInMemory

@MainActor
@Suite struct CounterHandoffTests {
    /// The app as both devices install it: Counter's Info.plist (an XML or binary file works the same).
    static let info = Data("""
        <plist version="1.0"><dict>
        <key>CFBundleIdentifier</key><string>com.example.Counter</string>
        <key>CFBundleExecutable</key><string>counter</string>
        <key>BatonTeamIdentifier</key><string>EXAMPLE123</string>
        <key>NSUserActivityTypes</key><array><string>com.example.counter.counting</string></array>
        </dict></plist>
        """.utf8)

    /// Whether `agent` lists an offer from another device (or, with `listed: false`, no longer lists one), moving
    /// the agents' clock on by `step` between looks when one is given. `advance(by:)` returns once the timers it
    /// passed have run; what they woke (an advert sent, an offer dropped) follows at once, so look a few times.
    func nearby(on agent: Agent, listed: Bool = true, in world: InMemoryDevices, step: Duration? = nil) async throws -> Bool {
        for _ in 0..<200 {
            if await agent.nearbyItems().isEmpty != listed { return true }
            if let step { try await world.advance(by: step) }
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    @Test("Counter's activity continues on the desktop; once it has expired (A10), the desktop drops it (A9)")
    func continuesWithoutANetwork() async throws {
        // Two devices of one account, each agent in this process: no socket, no port, time standing still.
        let world = try await InMemoryDevices.start(names: ["laptop", "desktop"], infoPlists: [Self.info])
        let laptop = BatonApplication()
        let desktop = BatonApplication()
        try await laptop.connect(bundleIdentifier: "com.example.Counter", socketPath: world.agents[0].socketPath)
        try await desktop.connect(bundleIdentifier: "com.example.Counter", socketPath: world.agents[1].socketPath)
        var events = desktop.events.makeAsyncIterator()

        // The laptop offers what it counts, for one minute of the agents' time.
        let activity = try UserActivity(activityType: "com.example.counter.counting", application: laptop)
        activity.title = "Counting from 7"
        activity.userInfo["count"] = 7
        activity.expirationDate = world.now.addingTimeInterval(60)
        activity.becomeCurrent()
        #expect(try await nearby(on: world.agents[1], in: world))

        // The desktop continues it, as `baton continue laptop` would; its app gets the state.
        let outcome = await world.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil, "\(outcome)")
        var continued: UserActivity?
        while let event = await events.next(isolation: #isolation) {
            if case .willContinue = event { continue }
            if case .continued(let activity) = event { continued = activity }
            break
        }
        #expect(continued?.title == "Counting from 7" && continued?.userInfo["count"] == 7)

        // A minute passes in a call. The activity has expired: the laptop no longer offers it (A10), and the
        // desktop drops it 5 s after the last advert it heard (A9).
        let started = ContinuousClock.now
        try await world.advance(by: .seconds(61))
        #expect(try await nearby(on: world.agents[1], listed: false, in: world, step: .seconds(1)))
        #expect(await world.agents[1].continueNearby(device: "laptop").failure != nil)
        #expect(ContinuousClock.now - started < .seconds(10), "no minute of real time was waited")

        laptop.disconnect()
        desktop.disconnect()
        await world.shutdown()
    }
}
// END InMemoryGuide
