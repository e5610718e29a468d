import BatonEmbedded
import BatonTestSupport
import Foundation
import Testing

/// The agent's D-Bus interface for apps (issue 28 item 1; docs/PROTOCOL.md §11) between two real agents on loopback,
/// each with a session bus of its own (dbus-daemon), the app on each side played by Python (``DBusAppPeer``),
/// registered by a desktop file naming its script (`World(script: true)`: only the interpreter running that script is
/// the app, §11 Identity 3; the stream suites' World names the interpreter, so any Python program passes there).
@Suite("Issue 28 item 1: apps on the session bus hand off through the agent's D-Bus interface", .serialized)
struct DBusAppTests {
    static let team = "TEAMR"

    /// The world: two buses, two agents (laptop on bus 1, desktop on bus 2) knowing `org.example.Recipes` (the Python
    /// interpreter's desktop file) and `org.example.Other` (another program's).
    final class World {
        let root: URL
        let buses: [PrivateSessionBus]
        let devices: LocalDevices

        /// With `sharedBus`, both agents are given bus 1: the second finds `org.baton.Agent` owned and runs without it.
        /// With `script`, the recipe app is the script `ROOT/app.py` (``DBusAppPeer/install(in:as:)``), named by its
        /// desktop file's `TryExec`/`Exec` as an installed Python app's is: only the interpreter running that script is
        /// the app (§11 Identity 3), not any Python program.
        /// `saveDeadline` (seconds) is both agents' (the default's 1 s otherwise).
        init(sharedBus: Bool = false, script: Bool = false, saveDeadline: Double? = nil) async throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-dbus-apps-\(UUID().uuidString.prefix(8))")
            let applications = root.appendingPathComponent("applications")
            try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
            let program = script ? try DBusAppPeer.install(in: root).path : DBusAppPeer.python
            try Data(
                """
                [Desktop Entry]
                Type=Application
                Name=Recipes
                Exec=\(program) %u
                TryExec=\(program)
                X-Baton-TeamIdentifier=\(DBusAppTests.team)
                X-Baton-ActivityTypes=org.example.recipe;

                """.utf8
            ).write(to: applications.appendingPathComponent("org.example.Recipes.desktop"))
            try Data(
                """
                [Desktop Entry]
                Type=Application
                Name=Other
                Exec=/usr/bin/true
                X-Baton-TeamIdentifier=\(DBusAppTests.team)
                X-Baton-ActivityTypes=org.example.other;

                """.utf8
            ).write(to: applications.appendingPathComponent("org.example.Other.desktop"))
            let buses = [
                try PrivateSessionBus(in: root.appendingPathComponent("bus-laptop")),
                try PrivateSessionBus(in: root.appendingPathComponent("bus-desktop")),
            ]
            self.buses = buses
            let addresses = ["laptop": buses[0].address, "desktop": buses[sharedBus ? 0 : 1].address]
            devices = try await LocalDevices.start(names: ["laptop", "desktop"], appFolders: []) { configuration in
                configuration.apps = nil
                configuration.appFolders = [applications]
                configuration.dbusApps.isEnabled = true
                configuration.dbusApps.busAddress = addresses[configuration.store.folder.lastPathComponent]
                if let saveDeadline { configuration.saveDeadline = saveDeadline }
            }
        }

        /// Whether `agent` comes to list (or, `is` false, no longer lists) the recipe app's offer within 10 s.
        func recipeListed(on agent: Agent, is listed: Bool = true) async throws -> Bool {
            for _ in 0..<200 {
                if await agent.nearbyItems().contains(where: { $0.app == "org.example.Recipes" }) == listed { return true }
                try await Task.sleep(for: .milliseconds(50))
            }
            return false
        }

        func stop() async {
            await devices.shutdown()
            for bus in buses { bus.stop() }
            try? FileManager.default.removeItem(at: root)
        }
    }

    @Test(
        "C5, C7, A6, A7, A8: a Python app's recipe, offered through org.baton.Agent1 on one device, continues in the Python app on another: Save called for needsSave, WillContinue then Continue with the userInfo, WasContinued at home; Introspect names every method",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func handoffBetweenTwoAgents() async throws {
        let world = try await World(script: true)
        let laptop = world.devices.agents[0]
        let desktop = world.devices.agents[1]
        do {
            let introspect = try DBusAppPeer("introspect", app: "", address: world.buses[0].address, folder: world.root, name: "introspect")
            #expect(await introspect.line("introspected") == "introspected True True", "\(introspect.lines)")

            let receiver = try DBusAppPeer("receive", app: "org.example.Recipes", address: world.buses[1].address, folder: world.root, name: "receiver")
            let registered = await receiver.line("registered")
            #expect(registered?.hasPrefix("registered \(desktop.identity.id.description)") == true, "\(receiver.lines)")
            let offerer = try DBusAppPeer("offer", app: "org.example.Recipes", address: world.buses[0].address, folder: world.root, name: "offerer")
            #expect(await offerer.line("current") != nil, "\(offerer.lines)")

            #expect(try await world.recipeListed(on: desktop), "the desktop never listed the laptop's recipe")
            let started = ContinuousClock.now
            let outcome = await desktop.continueNearby(device: "laptop")
            print("issue 28 item 1: continued over D-Bus in \(ContinuousClock.now - started) (\(outcome.microseconds) µs by the agent)")
            #expect(outcome.failure == nil && outcome.app == "org.example.Recipes", "\(outcome)")

            #expect(await receiver.line("will") == "will org.example.recipe", "\(receiver.lines)")
            let continued = try #require(await receiver.line("continue "), "\(receiver.lines)")
            let activity = try JSONSerialization.jsonObject(with: Data(continued.dropFirst("continue ".count).utf8)) as? [String: Any]
            #expect(activity?["activityType"] as? String == "org.example.recipe")
            #expect(activity?["title"] as? String == "Tarte Tatin")
            // Step 4 is what the app's Save answered: needsSave made the agent ask (A6, A7).
            #expect((activity?["userInfo"] as? [String: Any])?["step"] as? Int == 4, "\(continued)")
            #expect(await offerer.line("save") != nil, "\(offerer.lines)")
            #expect(await offerer.line("wasContinued") != nil, "\(offerer.lines)")
            print("issue 28 item 1: the offering app heard \(offerer.lines); the continuing app \(receiver.lines)")
            let receiverEnded = await receiver.finished()
            let offererEnded = await offerer.finished()
            #expect(receiverEnded && offererEnded)
            _ = laptop
        }
        await world.stop()
    }

    @Test(
        "§11 Identity: Register is refused UnknownApp for an app id nobody registered and AccessDenied for a process that is not the app's program; nothing is delivered",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func registerRefusals() async throws {
        let world = try await World(script: true)
        let unknown = try DBusAppPeer("receive", app: "org.example.Nobody", address: world.buses[0].address, folder: world.root, name: "unknown")
        #expect(await unknown.line("refused")?.hasPrefix("refused org.baton.Error.UnknownApp") == true, "\(unknown.lines)")
        let impostor = try DBusAppPeer("receive", app: "org.example.Other", address: world.buses[0].address, folder: world.root, name: "impostor")
        #expect(await impostor.line("refused")?.hasPrefix("refused org.freedesktop.DBus.Error.AccessDenied") == true, "\(impostor.lines)")
        // The app itself still registers after both, on a connection whose first Register was refused (a new hello).
        let app = try DBusAppPeer("retry", app: "org.example.Recipes", address: world.buses[0].address, folder: world.root, name: "app")
        #expect(await app.line("registered") != nil, "\(app.lines)")
        #expect(app.lines.first == "first org.baton.Error.UnknownApp", "\(app.lines)")
        app.stop()
        await world.stop()
    }

    @Test(
        "Hostile calls (wrong signature, unknown method, a 1 MiB string and a 100k-element array in userInfo, variants 58 deep, a file: webpageURL, an unknown key, a sender not registered) each get a typed D-Bus error, and the agent still answers",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func hostileCalls() async throws {
        let world = try await World(script: true)
        let app = try DBusAppPeer("hostile", app: "org.example.Recipes", address: world.buses[0].address, folder: world.root, name: "hostile")
        #expect(await app.finished(), "\(app.lines)")
        let lines = app.lines
        print("issue 28 item 1: hostile calls answered: \(lines.joined(separator: "; "))")
        func answer(_ key: String) -> String? {
            lines.first { $0.hasPrefix(key + " ") }.map { String($0.dropFirst(key.count + 1)) }
        }
        #expect(answer("wrongSignature") == "org.freedesktop.DBus.Error.InvalidArgs", "\(lines)")
        #expect(answer("unknownMethod") == "org.freedesktop.DBus.Error.UnknownMethod", "\(lines)")
        #expect(answer("bigString") == "org.freedesktop.DBus.Error.InvalidArgs", "\(lines)")
        #expect(answer("bigArray") == "org.freedesktop.DBus.Error.InvalidArgs", "\(lines)")
        #expect(["none", "org.freedesktop.DBus.Error.InvalidArgs"].contains(answer("deepVariants")), "\(lines)")
        #expect(answer("badURL") == "org.freedesktop.DBus.Error.InvalidArgs", "\(lines)")
        #expect(answer("unknownKey") == "org.freedesktop.DBus.Error.InvalidArgs", "\(lines)")
        #expect(answer("notRegistered") == "org.freedesktop.DBus.Error.AccessDenied", "\(lines)")
        #expect(answer("stillAnswering") == "none", "\(lines)")
        await world.stop()
    }

    @Test(
        "A9: an app that leaves the bus (killed) has left the agent: its current activity is no longer offered to the other device",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func appLeavingTheBus() async throws {
        let world = try await World(script: true)
        let desktop = world.devices.agents[1]
        let offerer = try DBusAppPeer("offer", app: "org.example.Recipes", address: world.buses[0].address, folder: world.root, name: "offerer")
        #expect(await offerer.line("current") != nil, "\(offerer.lines)")
        #expect(try await world.recipeListed(on: desktop), "the desktop never listed the laptop's recipe")
        // While the app is on the bus its recipe stays offered (adverts every second).
        try await Task.sleep(for: .milliseconds(1_500))
        #expect(await desktop.nearbyItems().contains { $0.app == "org.example.Recipes" })
        let left = ContinuousClock.now
        offerer.stop()
        #expect(try await world.recipeListed(on: desktop, is: false), "the recipe of an app that left the bus was still offered")
        print("issue 28 item 1: an app that left the bus stopped being offered nearby within \(ContinuousClock.now - left)")
        await world.stop()
    }

    @Test(
        "A second agent on a bus where org.baton.Agent is owned runs without the interface; apps register with the first",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func nameOwnedAlready() async throws {
        let world = try await World(sharedBus: true, script: true)
        let app = try DBusAppPeer("receive", app: "org.example.Recipes", address: world.buses[0].address, folder: world.root, name: "app")
        let registered = try #require(await app.line("registered"), "\(app.lines)")
        let ids = world.devices.agents.map { $0.identity.id.description }
        #expect(ids.contains { registered.hasPrefix("registered \($0)") }, "\(registered)")
        // Both agents still answer.
        for agent in world.devices.agents { _ = await agent.nearbyItems() }
        app.stop()
        await world.stop()
    }

    @Test(
        "A7, C5, C8: an app whose Save does not answer within the deadline fails the continuation; the continuing app gets DidFail, not Continue",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func saveNotAnswered() async throws {
        let world = try await World(script: true)
        let desktop = world.devices.agents[1]
        let receiver = try DBusAppPeer("receive", app: "org.example.Recipes", address: world.buses[1].address, folder: world.root, name: "receiver")
        #expect(await receiver.line("registered") != nil, "\(receiver.lines)")
        let offerer = try DBusAppPeer("slowOffer", app: "org.example.Recipes", address: world.buses[0].address, folder: world.root, name: "offerer")
        #expect(await offerer.line("current") != nil, "\(offerer.lines)")
        #expect(try await world.recipeListed(on: desktop), "the desktop never listed the laptop's recipe")
        let outcome = await desktop.continueNearby(device: "laptop")
        #expect(outcome.failure != nil, "\(outcome)")
        let failed = await receiver.line("didFail")
        #expect(
            failed?.hasPrefix("didFail org.baton.Error.SaveFailed") == true || failed?.hasPrefix("didFail org.baton.Error.AppNotAnswering") == true,
            "\(receiver.lines)"
        )
        #expect(!receiver.lines.contains { $0.hasPrefix("continue ") })
        print("issue 28 item 1: a Save not answered in time: \(outcome.failure.map { "\($0)" } ?? "none"); the continuing app heard \(failed ?? "nothing")")
        receiver.stop()
        offerer.stop()
        await world.stop()
    }

    @Test(
        "§11 Identity 1: a process of another user, on a bus that lets it in, is refused AccessDenied by the bus's own credentials for it",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "runs the app as another user: needs root and setpriv"),
        .timeLimit(.minutes(2))
    )
    func anotherUser() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-dbus-uid-\(UUID().uuidString.prefix(8))")
        let applications = root.appendingPathComponent("applications")
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data(
            """
            [Desktop Entry]
            Type=Application
            Name=Recipes
            Exec=\(DBusAppPeer.python)
            X-Baton-TeamIdentifier=\(Self.team)
            X-Baton-ActivityTypes=org.example.recipe;

            """.utf8
        ).write(to: applications.appendingPathComponent("org.example.Recipes.desktop"))
        // A bus any user may connect to (the test's usual one lets in its own user only).
        let bus = try PrivateSessionBus(in: root.appendingPathComponent("bus"), anyUser: true)
        defer { bus.stop() }
        let address = bus.address
        let devices = try await LocalDevices.start(names: ["laptop"], appFolders: []) { configuration in
            configuration.apps = nil
            configuration.appFolders = [applications]
            configuration.dbusApps.isEnabled = true
            configuration.dbusApps.busAddress = address
        }
        let stranger = try DBusAppPeer(
            "receive", app: "org.example.Recipes", address: address, folder: root, name: "stranger",
            launcher: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        )
        let refused = await stranger.line("refused")
        #expect(refused?.hasPrefix("refused org.freedesktop.DBus.Error.AccessDenied") == true, "\(stranger.lines)")
        print("issue 28 item 1: another user's Register: \(refused ?? "no answer")")
        // The same program as this user registers.
        let own = try DBusAppPeer("receive", app: "org.example.Recipes", address: address, folder: root, name: "own")
        #expect(await own.line("registered") != nil, "\(own.lines)")
        own.stop()
        await devices.shutdown()
    }
}
