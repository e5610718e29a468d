import BatonTestSupport
import Foundation
import Testing

/// Recipes, the example app in Python, hands off through the agents' D-Bus interface (issue 28's Show, on loopback):
/// two `baton agent` processes, each with a session bus of its own (one bus holds one `org.baton.Agent`) and an X
/// server of its own, as two people's sessions have. Host 1's Recipes offers the recipe it shows; `baton continue` on
/// host 2 has host 2's bus start Recipes by D-Bus activation, and it shows the same recipe at the same place.
@Suite("Recipes hands off between two agents through their D-Bus interface (issue 28)", .serialized)
struct RecipesHandoffCLITests {
    @Test(
        "host 1's Recipes offers Kanelbullar scrolled to 0.7, saved when asked (A6, A7); baton continue on host 2 starts Recipes by D-Bus activation, which shows Kanelbullar at 0.7 titled so (C5); host 1 hears it was continued (A8)",
        .requires(.gtk4, .xvfb, .dbusDaemon, .xwininfo, .imagemagick), .timeLimit(.minutes(5))
    )
    func continuedOnAnotherHost() async throws {
        // On the threads of tests that start processes (ProcessThreads), with waits that are async (the app's lines).
        try await withTaskExecutorPreference(ProcessThreads.shared) {
            let world = try HandoffWorld()
            let applications = world.root.appendingPathComponent("applications")
            let services = world.root.appendingPathComponent("services")
            try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
            _ = try RecipesFixtures.fill("org.baton.Recipes.desktop.in", into: applications, as: "org.baton.Recipes.desktop")
            _ = try RecipesFixtures.fill("org.baton.Recipes.service.in", into: services, as: "org.baton.Recipes.service")
            try FileManager.default.createDirectory(at: RecipesFixtures.output, withIntermediateDirectories: true)

            let display1 = try XvfbDisplay(log: world.root.appendingPathComponent("xvfb1.log"))
            defer { display1.stop() }
            let display2 = try XvfbDisplay(log: world.root.appendingPathComponent("xvfb2.log"))
            defer { display2.stop() }
            let quiet = ["NO_AT_BRIDGE": "1", "GTK_A11Y": "none"]  // no accessibility bus on a test's own bus
            let bus1 = try PrivateSessionBus(in: world.root.appendingPathComponent("bus1"))
            defer { bus1.stop() }
            // Host 2's bus starts Recipes itself, on host 2's display, writing its state lines where the test reads them.
            let states2 = world.root.appendingPathComponent("host2/recipes-states.jsonl")
            try FileManager.default.createDirectory(at: states2.deletingLastPathComponent(), withIntermediateDirectories: true)
            let bus2 = try ActivatingSessionBus(
                in: world.root.appendingPathComponent("bus2"), services: services,
                environment: ["DISPLAY": display2.name, "RECIPES_STATE_FILE": states2.path, "HOME": world.root.path].merging(quiet) { $1 })
            defer { bus2.stop() }

            for name in ["host1", "host2"] { try world.device(name) }
            try world.pair("host1", "host2")
            try world.agent("host1", apps: applications.path, environment: ["DBUS_SESSION_BUS_ADDRESS": bus1.address, "DISPLAY": display1.name].merging(quiet) { $1 })
            try world.agent("host2", peers: ["host1"], apps: applications.path, environment: ["DBUS_SESSION_BUS_ADDRESS": bus2.address, "DISPLAY": display2.name].merging(quiet) { $1 })

            // Host 1: Kanelbullar at 0.3, then scrolled to 0.7 as a person would: only SetNeedsSave says so (A6).
            let recipes1 = try await RecipesProcess.start(
                arguments: ["--recipe", "kanelbullar", "--scroll", "0.3", "--then-scroll", "0.7"], display: display1.name, bus: bus1.address,
                in: world.root.appendingPathComponent("host1-recipes"))
            defer { recipes1.stop() }
            _ = try await recipes1.waitFor("registered")
            let scrolled = try await recipes1.waitFor("scrolled")
            #expect(abs((scrolled["scroll"] as? Double ?? 0) - 0.7) < 0.02, "\(scrolled)")
            #expect(
                try eventually(timeout: 10) { try world.nearby("host2").stdout.contains("Kanelbullar") },
                "host 2 was offered no Kanelbullar: \(world.agents.values.map(\.output).joined(separator: "\n"))")

            let continued = try Baton.run("continue", "host1", "--state", world.state("host2"))
            #expect(continued.status == 0 && continued.stdout.contains("continued in org.baton.Recipes"), "\(continued.output)")

            // Host 1 was asked for the state (A7) and told its activity went on elsewhere (A8).
            let saved = try await recipes1.waitFor("saved")
            #expect(saved["recipe"] as? String == "kanelbullar" && abs((saved["scroll"] as? Double ?? 0) - 0.7) < 0.02, "\(saved)")
            _ = try await recipes1.waitFor("was_continued")

            // Host 2: started by its bus, continued at the same recipe and place, titled by the recipe.
            let host2 = try #require(world.agents["host2"])
            #expect(host2.lines(containing: "D-Bus activation").count == 1, "\(host2.output)")
            let recipes2 = RecipesStates(file: states2)
            let arrived = try await recipes2.waitFor("continued")
            #expect(arrived["recipe"] as? String == "kanelbullar" && abs((arrived["scroll"] as? Double ?? 0) - 0.7) < 0.02, "\(arrived)")
            let shown = try await recipes2.waitFor("shown")
            #expect(shown["window_title"] as? String == "Kanelbullar" && abs((shown["scroll"] as? Double ?? 0) - 0.7) < 0.02, "\(shown)")
            #expect(try display2.windowTitles().contains("\"Kanelbullar\""))
            try display2.screenshot(to: RecipesFixtures.output.appendingPathComponent("continued-on-host-2.png"))
        }
    }
}
