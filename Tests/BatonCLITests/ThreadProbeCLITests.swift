import Foundation
import Testing

/// Issue 25 item 5: every call Baton makes to an app's code runs on the process's first thread when the app starts the
/// GUIDE's way (`BatonApplication.main`), or drives its own main loop on the first thread (as a GTK app would). The
/// app is Tests/ThreadProbe, installed as ShopSnap on two devices and continued through their real agents.
@Suite("The main actor on the first thread, through real agents (issue 25 item 5)", .serialized)
struct ThreadProbeCLITests {
    /// Every call the probe reports: the originating app's, then the continuing app's (C5-C8, A6-A8, B2, B3, C7, F2,
    /// F3, G3).
    static let calls = [
        "updateUserActivityState", "userActivityWillSave", "didUpdate", "userActivityWasContinued", "didReceiveStreams",
        "streamRequestRead", "streamReplyWritten",
        "willContinueUserActivityWithType", "events.willContinue", "continue", "restoreUserActivityState",
        "events.continued", "deleteAllSavedUserActivities.completionHandler", "continuationStreams.resumed",
        "streamReplyRead", "didFailToContinueUserActivityWithType", "events.failed",
    ]

    @Test(
        "issue 25 item 5: each delegate, responder, restoration and completion handler, event and stream resumption runs with Thread.isMainThread under BatonApplication.main and under a foreign loop on the first thread; with dispatchMain (what an async main does) none does",
        arguments: ["baton", "loop", "dispatch"]
    )
    func everyCallOnTheFirstThread(startup: String) async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            let probe = Baton.executable.deletingLastPathComponent().appendingPathComponent("thread-probe")
            for name in ["laptop", "desktop"] { try world.device(name) }
            try world.pair("laptop", "desktop")
            let environment = ["THREAD_PROBE_STARTUP": startup]
            // The agent passes its environment on to the apps it launches: the continuing probe starts the same way.
            try world.agent("laptop", apps: try Self.probeApps(world, "laptop", probe: probe), environment: environment)
            try world.agent("desktop", peers: ["laptop"], apps: try Self.probeApps(world, "desktop", probe: probe), environment: environment)
            let laptop = try #require(world.agents["laptop"])
            let desktop = try #require(world.agents["desktop"])

            let socket = try String(contentsOfFile: world.state("laptop") + "/agent-socket", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let offer = try Background(
                probe, ["offer"],
                environment: environment.merging(["BATON_AGENT_SOCKET": socket]) { $1 },
                log: world.root.appendingPathComponent("probe-offer.log")
            )
            world.background.append(offer)
            try #require(offer.waitFor("probe: offering", timeout: 30) != nil, "\(offer.output)")
            #expect(try eventually(timeout: 30) { try world.nearby("desktop").stdout.contains("Probe list") })

            // A continuation that succeeds, with a stream each way and a deletion from search...
            let continued = try Baton.run("continue", "laptop", "--state", world.state("desktop"))
            #expect(continued.status == 0, "\(continued.output)")
            #expect(desktop.waitFor("probe: streamed pong:ping", timeout: 30) != nil, "\(desktop.output)")
            #expect(offer.waitFor("probe: state too large now", timeout: 30) != nil, "\(offer.output)")
            // ...and one that fails: the originating state is now over the limit (saveFailed, C8).
            let failed = try Baton.run("continue", "laptop", "--state", world.state("desktop"))
            #expect(failed.status != 0, "\(failed.output)")
            #expect(desktop.waitFor("probe: didFailToContinueUserActivityWithType", timeout: 30) != nil, "\(desktop.output)")
            #expect(desktop.waitFor("probe: events.failed", timeout: 30) != nil, "\(desktop.output)")

            // Quitting: the originating app's body returns once its agent is gone, and the process exits with 0.
            laptop.stop()
            let quit = offer.waitForExit(timeout: 30)
            #expect(quit, "the app quits when its body returns")
            if quit { #expect(offer.process.terminationStatus == 0, "\(offer.output)") }
            #expect(world.stopAndDrain("desktop"), "the continuing app quits too")

            let reports = (offer.lines(containing: "probe: ") + desktop.lines(containing: "probe: ")).compactMap(Self.report)
            let seen = Set(reports.map(\.call))
            #expect(Set(Self.calls).subtracting(seen).isEmpty, "not called: \(Set(Self.calls).subtracting(seen).sorted())")
            if startup == "dispatch" {
                // The old startup: the main actor's queue is drained by a worker thread once the first thread has gone.
                #expect(reports.allSatisfy { !$0.onFirstThread }, "\(reports.filter(\.onFirstThread).map(\.call))")
            } else {
                let elsewhere = reports.filter { !$0.onFirstThread }.map(\.call)
                #expect(elsewhere.isEmpty, "called off the first thread: \(elsewhere)")
            }
        }
    }

    @Test("issue 25 item 5: BatonApplication.main called inside a task (an async main) is refused with exit status 70, saying why")
    func refusedInsideATask() async throws {
        try await startingProcesses {
            let probe = Baton.executable.deletingLastPathComponent().appendingPathComponent("thread-probe")
            let result = try Baton.run([], environment: ["THREAD_PROBE_STARTUP": "task"], executable: probe)
            #expect(result.status == 70, "\(result.output)")
            #expect(result.stderr.contains("BatonApplication.main was called inside a task"), "\(result.output)")
            #expect(!result.output.contains("ran inside a task"))
        }
    }

    /// "probe: CALL main=BOOL" as the call and where it ran.
    static func report(_ line: String) -> (call: String, onFirstThread: Bool)? {
        guard let start = line.range(of: "probe: "), let flag = line.range(of: " main=") else { return nil }
        return (String(line[start.upperBound..<flag.lowerBound]), line[flag.upperBound...].hasPrefix("true"))
    }

    /// A folder with ShopSnap.app whose executable is the probe (the agent checks the app runs its registered
    /// executable, so the probe is ShopSnap here).
    static func probeApps(_ world: HandoffWorld, _ name: String, probe: URL) throws -> String {
        let folder = world.root.appendingPathComponent("probe-apps-\(name)")
        let bundle = folder.appendingPathComponent("ShopSnap.app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Baton.packageRoot.appendingPathComponent("Examples/ShopSnap.app/Info.plist"),
            to: bundle.appendingPathComponent("Info.plist")
        )
        try FileManager.default.createSymbolicLink(at: bundle.appendingPathComponent("shopsnap"), withDestinationURL: probe)
        return folder.path
    }
}
