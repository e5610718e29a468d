import BatonTestSupport
import Foundation
import Testing

/// A session bus of the test's own (`dbus-daemon` with a configuration in the test's folder, no service activation)
/// and the stand-in notification server on it (Fixtures/notification-server.py), which records every call.
final class TestSessionBus {
    let folder: URL
    let calls: URL
    /// The bus's address, and the two processes, while they run.
    private(set) var address = ""
    private(set) var daemon: Background?
    private(set) var server: Background?

    /// A bus at `root/session-bus/bus` and the server on it, started.
    init(in root: URL) throws {
        folder = root.appendingPathComponent("session-bus")
        calls = folder.appendingPathComponent("calls.jsonl")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try start()
    }

    /// Starts the bus and the server (again, after ``stop()``: the same path, a new guid, no calls recorded yet).
    func start() throws {
        try? FileManager.default.removeItem(at: folder.appendingPathComponent("bus"))
        try? FileManager.default.removeItem(at: calls)
        let configuration = try PrivateSessionBus.configuration(in: folder)
        let executable = try Requirement.dbusDaemon.executable()
        let daemon = try Background(
            executable,
            ["--config-file=\(configuration.path)", "--nofork", "--print-address"],
            log: folder.appendingPathComponent("daemon.log")
        )
        self.daemon = daemon
        let printed = try #require(daemon.waitFor("unix:path="), "\(daemon.output)")
        // Without the `guid=` the daemon prints, as systemd's user session gives it (`unix:path=/run/user/UID/bus`): a
        // bus started again at the same path has another guid, and a client holding the old one refuses it.
        address = String(printed.trimmingCharacters(in: .whitespaces).split(separator: ",").first ?? "")
        try startServer()
    }

    private func startServer() throws {
        let script = Baton.packageRoot.appendingPathComponent("Tests/BatonCLITests/Fixtures/notification-server.py")
            .path
        let server = try Background(
            try Requirement.pythonDBus.executable(),
            [script, address, calls.path],
            log: folder.appendingPathComponent("server.log")
        )
        self.server = server
        try #require(server.waitFor("ready") != nil, "\(server.output)")
    }

    /// Kills the notification server and starts another on the same bus (a crash, or a desktop switching servers).
    func restartServer() throws {
        killServer()
        try startServer()
    }

    /// Kills the notification server, leaving the bus without one.
    func killServer() {
        server?.kill()
    }

    /// Runs `body` with a bus of its own in a temporary folder; stops it and removes the folder after.
    static func running(_ body: (TestSessionBus) throws -> Void) throws {
        let root = try Baton.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let bus = try TestSessionBus(in: root)
        defer { bus.stop() }
        try body(bus)
    }

    /// The server emits ActionInvoked(id, key), as a click on a notification's button makes a real one do.
    func invoke(_ id: Int, _ key: String) {
        server?.send("invoke \(id) \(key)")
    }

    /// The server emits NotificationClosed(id, 2): the person dismissed it.
    func dismiss(_ id: Int) {
        server?.send("closed \(id) 2")
    }

    deinit { stop() }

    /// Kills both (the test runner's threads block SIGTERM, and children inherit the mask: only SIGKILL is prompt).
    func stop() {
        server?.kill()
        daemon?.kill()
    }

    /// Every call the server received, in order.
    var records: [[String: Any]] {
        let text = (try? String(contentsOf: calls, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    func records(_ call: String) -> [[String: Any]] {
        records.filter { $0["call"] as? String == call }
    }

    /// Waits until the server has received `count` calls of `call`; returns the last of them.
    func waitFor(_ call: String, count: Int = 1, timeout: Double = 10) -> [String: Any]? {
        var found: [String: Any]?
        _ = eventually(timeout: timeout) {
            let matching = records(call)
            found = matching.count >= count ? matching.last : nil
            return found != nil
        }
        return found
    }
}

/// Issue 16 part 2, end to end: separate agent processes on loopback, the continuing one on a real session bus with a
/// notification server that records what it is asked (C3, C5, A9).
@Suite("Desktop notifications over a real session bus (issue 16)", .serialized)
struct NotifyCLITests {
    /// What an agent sees where there is no session bus at all.
    static let noBus = ["DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": ""]

    /// A laptop and a desktop, paired, each with its agent; the laptop has no session bus, the desktop `desktop`'s
    /// environment. The laptop re-advertises five times a second, so "once per offer, not per advert" is tested.
    /// With `icon`, the desktop's ShopSnap.app has `CFBundleIconFile` `AppIcon` and a `Resources/AppIcon.png`.
    static func pairedDevices(
        desktop environment: [String: String],
        extra: [String] = [],
        icon: Bool = false,
        failingApp: Bool = false
    ) throws -> HandoffWorld {
        let world = try HandoffWorld()
        for name in ["laptop", "desktop"] { try world.device(name) }
        try world.pair("laptop", "desktop")
        let desktopApps = try world.apps("desktop")
        if icon {
            let bundle = URL(fileURLWithPath: desktopApps).appendingPathComponent("ShopSnap.app")
            let info = bundle.appendingPathComponent("Info.plist")
            let text = try String(contentsOf: info, encoding: .utf8)
                .replacingOccurrences(
                    of: "</dict>",
                    with: "\t<key>CFBundleIconFile</key>\n\t<string>AppIcon</string>\n</dict>"
                )
            try Data(text.utf8).write(to: info)
            try FileManager.default.createDirectory(
                at: bundle.appendingPathComponent("Resources"),
                withIntermediateDirectories: true
            )
            try Data([0x89, 0x50, 0x4E, 0x47]).write(to: bundle.appendingPathComponent("Resources/AppIcon.png"))
        }
        if failingApp {
            // The desktop's ShopSnap.app runs /bin/false: launched, it exits at once, and the continuation fails.
            let executable = URL(fileURLWithPath: desktopApps).appendingPathComponent("ShopSnap.app/shopsnap")
            try FileManager.default.removeItem(at: executable)
            try FileManager.default.createSymbolicLink(at: executable, withDestinationURL: URL(fileURLWithPath: "/bin/false"))
        }
        try world.agent(
            "laptop",
            apps: try world.apps("laptop"),
            extra: ["--advert-interval", "0.2"],
            environment: noBus
        )
        try world.agent(
            "desktop",
            peers: ["laptop"],
            apps: desktopApps,
            extra: extra,
            environment: environment
        )
        return world
    }

    /// Log lines at warning level or worse.
    static func problems(_ agent: Background) -> [String] {
        agent.output.split(separator: "\n").map(String.init).filter {
            $0.contains(" warning ") || $0.contains(" error ") || $0.contains(" critical ")
        }
    }

    @Test(
        "C3, C5, A9: one notification per offer (title, device, app, Continue); Continue launches ShopSnap with the list; the offer's end withdraws it",
        .requires(.dbusDaemon, .pythonDBus)
    )
    func notificationContinuesAndCloses() async throws {
        try await startingProcesses {
            try TestSessionBus.running { bus in
                let world = try Self.pairedDevices(desktop: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
                let desktop = try #require(world.agents["desktop"])
                #expect(
                    desktop.waitFor("desktop notifications: connected to the session bus") != nil,
                    "\(desktop.output)"
                )

                let offered = Date()
                let list = try world.shopSnap(on: "laptop", ["list", "Milk", "Eggs"])
                let shown = try #require(bus.waitFor("Notify"), "\(desktop.output)")
                let shownAt = try #require(shown["time"] as? Double)
                print(
                    "figure: ShopSnap started on the laptop to Notify on the desktop's bus: \(Int((shownAt - offered.timeIntervalSince1970) * 1000)) ms"
                )
                #expect(shown["summary"] as? String == "Shopping list (2 items)", "\(shown)")
                #expect((shown["body"] as? String)?.contains("laptop") == true, "the offering device's name: \(shown)")
                #expect(shown["app_name"] as? String == "ShopSnap")
                #expect(
                    shown["app_icon"] as? String == "application-x-executable",
                    "ShopSnap.app has no CFBundleIconFile"
                )
                #expect(shown["actions"] as? [String] == ["continue", "Continue", "default", "Continue"])
                #expect(shown["replaces_id"] as? Int == 0)
                let id = try #require(shown["id"] as? Int)

                // Many adverts later, still the one notification.
                Thread.sleep(forTimeInterval: 1.5)
                #expect(bus.records("Notify").count == 1, "\(bus.records)")

                // The person presses Continue: ShopSnap is launched on the desktop with the list (C5).
                let invoked = Date()
                bus.invoke(id, "continue")
                #expect(desktop.waitFor("shopsnap: continued list: Milk, Eggs") != nil, "\(desktop.output)")
                print(
                    "figure: ActionInvoked to the list restored on the desktop: \(Int(Date().timeIntervalSince(invoked) * 1000)) ms"
                )
                #expect(desktop.lines(containing: "launched com.razeware.ShopSnap").count == 1)
                #expect(list.waitFor("was continued on another device") != nil, "A8 on the laptop")
                #expect(bus.records("CloseNotification").isEmpty, "the offer is still there: \(bus.records)")

                // The laptop's list ends (A9): the notification is withdrawn, by its id.
                let ended = Date()
                list.send("done")
                let closed = try #require(bus.waitFor("CloseNotification"), "\(desktop.output)")
                let closedAt = try #require(closed["time"] as? Double)
                print(
                    "figure: the offer's goodbye to CloseNotification: \(Int((closedAt - ended.timeIntervalSince1970) * 1000)) ms"
                )
                #expect(closed["id"] as? Int == id)
                #expect(bus.records("Notify").count == 1, "\(bus.records)")
                #expect(Self.problems(desktop).isEmpty, "\(Self.problems(desktop))")
            }
        }
    }

    @Test(
        "C5: a Continue that fails (the app exits at launch) says why on the notification, replacing it, with Try again",
        .requires(.dbusDaemon, .pythonDBus)
    )
    func failedContinueIsShown() async throws {
        try await startingProcesses {
            try TestSessionBus.running { bus in
                let world = try Self.pairedDevices(desktop: ["DBUS_SESSION_BUS_ADDRESS": bus.address], failingApp: true)
                let desktop = try #require(world.agents["desktop"])
                _ = try world.shopSnap(on: "laptop", ["list", "Milk"])
                let shown = try #require(bus.waitFor("Notify"), "\(desktop.output)")
                let id = try #require(shown["id"] as? Int)
                bus.invoke(id, "continue")
                let failed = try #require(bus.waitFor("Notify", count: 2), "\(desktop.output)")
                #expect(failed["replaces_id"] as? Int == id, "\(failed)")
                #expect(failed["summary"] as? String == "Could not continue Shopping list (1 item)", "\(failed)")
                // How the app ended, at once (the agent reaps it), not after the 10 s launch deadline.
                #expect(failed["body"] as? String == "From laptop: com.razeware.ShopSnap exited with status 1 before it connected", "\(failed)")
                #expect(failed["actions"] as? [String] == ["continue", "Try again"], "\(failed)")
                #expect(desktop.lines(containing: "could not continue").count == 1, "\(desktop.output)")
            }
        }
    }

    @Test(
        "the bus, or the server alone, goes away and comes back: no error, the offer is shown again as new; SIGTERM withdraws it",
        .requires(.dbusDaemon, .pythonDBus)
    )
    func busComesBackAndShutdownWithdraws() async throws {
        try await startingProcesses {
            try TestSessionBus.running { bus in
                let world = try Self.pairedDevices(
                    desktop: ["DBUS_SESSION_BUS_ADDRESS": bus.address],
                    extra: ["--log-level", "debug"]
                )
                let desktop = try #require(world.agents["desktop"])
                _ = try world.shopSnap(on: "laptop", ["list", "Milk"])
                #expect(bus.waitFor("Notify") != nil, "\(desktop.output)")

                // The session bus dies (a logout, a crash): the agent notices, says so once at info, and tries again.
                bus.stop()
                #expect(desktop.waitFor("the session bus went away") != nil, "\(desktop.output)")
                let restarted = Date()
                try bus.start()
                let again = try #require(bus.waitFor("Notify", timeout: 15), "\(desktop.output)")
                print(
                    "figure: a new bus at the same address to Notify again: \(Int(Date().timeIntervalSince(restarted) * 1000)) ms"
                )
                #expect(again["summary"] as? String == "Shopping list (1 item)", "\(again)")

                // The notification server alone restarts: the agent forgets the old ids and shows the offer anew, never
                // replacing an id of the old server (the new one counts from 1 again, another app's could have it).
                let wentAway = desktop.lines(containing: "the notification server went away").count
                try bus.restartServer()
                let anew = try #require(bus.waitFor("Notify", count: 2), "\(desktop.output)")
                #expect(anew["replaces_id"] as? Int == 0, "\(anew)")
                #expect(
                    desktop.lines(containing: "the notification server went away").count == wentAway + 1,
                    "\(desktop.output)"
                )
                let id = try #require(anew["id"] as? Int)

                // The agent stops: its notification is withdrawn first, since the offer cannot be continued here any more.
                desktop.signal(SIGTERM)
                #expect(desktop.waitForExit(timeout: 10))
                let closed = bus.records("CloseNotification")
                #expect(closed.count == 1 && closed.first?["id"] as? Int == id, "\(bus.records)")
                #expect(Self.problems(desktop).isEmpty, "\(Self.problems(desktop))")
            }
        }
    }

    @Test(
        "dismissed on the desktop: forgotten, not shown again, nothing to close when the offer ends; the app's own icon",
        .requires(.dbusDaemon, .pythonDBus)
    )
    func dismissedIsForgotten() async throws {
        try await startingProcesses {
            try TestSessionBus.running { bus in
                let world = try Self.pairedDevices(
                    desktop: ["DBUS_SESSION_BUS_ADDRESS": bus.address],
                    extra: ["--log-level", "debug"],
                    icon: true
                )
                let desktop = try #require(world.agents["desktop"])
                let list = try world.shopSnap(on: "laptop", ["list", "Milk"])
                let shown = try #require(bus.waitFor("Notify"), "\(desktop.output)")
                let icon = try #require(shown["app_icon"] as? String)
                #expect(icon.hasPrefix("file:///") && icon.hasSuffix("/ShopSnap.app/Resources/AppIcon.png"), "\(icon)")
                let id = try #require(shown["id"] as? Int)

                bus.dismiss(id)
                #expect(desktop.waitFor("\(id) closed by the server (reason 2)") != nil, "\(desktop.output)")
                list.send("done")
                #expect(desktop.waitFor("withdrew its activity (goodbye") != nil, "\(desktop.output)")
                Thread.sleep(forTimeInterval: 0.5)
                #expect(bus.records("CloseNotification").isEmpty, "\(bus.records)")
                #expect(bus.records("Notify").count == 1, "\(bus.records)")
            }
        }
    }

    @Test(
        "--no-notify: the agent sends nothing to the notification server",
        .requires(.dbusDaemon, .pythonDBus)
    )
    func noNotifySendsNothing() async throws {
        try await startingProcesses {
            try TestSessionBus.running { bus in
                let world = try Self.pairedDevices(
                    desktop: ["DBUS_SESSION_BUS_ADDRESS": bus.address],
                    extra: ["--no-notify"]
                )
                _ = try world.shopSnap(on: "laptop", ["list", "Milk"])
                #expect(try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list") })
                Thread.sleep(forTimeInterval: 1)
                #expect(bus.records.isEmpty, "\(bus.records)")
                let desktop = try #require(world.agents["desktop"])
                #expect(desktop.lines(containing: "desktop notifications").isEmpty, "\(desktop.output)")
            }
        }
    }

    @Test(
        "baton doctor names the notification server on the session bus, warns where the bus has none, and is content without a bus",
        .requires(.dbusDaemon, .pythonDBus)
    )
    func doctorChecksNotifications() async throws {
        try await startingProcesses {
            try TestSessionBus.running { bus in
                let state = bus.folder.appendingPathComponent("state").path
                #expect(try Baton.run("init", "--name", "laptop", "--state", state).status == 0)
                func notificationsLine(_ environment: [String: String]) throws -> String? {
                    let doctor = try Baton.run(
                        ["doctor", "--state", state, "--timeout", "0.5"],
                        environment: environment
                    )
                    return doctor.stdout.split(separator: "\n").map(String.init).first { $0.contains("notifications:") }
                }
                let served = try #require(try notificationsLine(["DBUS_SESSION_BUS_ADDRESS": bus.address]))
                #expect(served.hasPrefix("ok") && served.contains("baton-test-notifications"), "\(served)")
                bus.killServer()
                let unserved = try #require(try notificationsLine(["DBUS_SESSION_BUS_ADDRESS": bus.address]))
                #expect(unserved.hasPrefix("warn") && unserved.contains("no notification server"), "\(unserved)")
                let none = try #require(try notificationsLine(Self.noBus))
                #expect(none.hasPrefix("ok") && none.contains("no session bus"), "\(none)")
            }
        }
    }

    @Test("without any session bus the agent runs as before: one info line, no error, continuing works")
    func noBusRunsNormally() async throws {
        try await startingProcesses {
            let world = try Self.pairedDevices(desktop: Self.noBus)
            let line = try Self.continuesWithoutNotifications(world)
            #expect(line.contains("no session bus"), "\(line)")
        }
    }

    /// ShopSnap's list continues on the desktop; its agent said once, and at no level worse than info, why it shows
    /// no desktop notifications: that line.
    static func continuesWithoutNotifications(_ world: HandoffWorld) throws -> String {
        _ = try world.shopSnap(on: "laptop", ["list", "Milk"])
        #expect(try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list") })
        let continued = try Baton.run("continue", "laptop", "--state", world.state("desktop"))
        #expect(continued.status == 0, "\(continued.output)")
        let desktop = try #require(world.agents["desktop"])
        #expect(desktop.waitFor("shopsnap: continued list: Milk") != nil, "\(desktop.output)")
        let lines = desktop.lines(containing: "desktop notifications")
        #expect(lines.count == 1, "\(lines)")
        #expect(problems(desktop).isEmpty, "\(problems(desktop))")
        return try #require(lines.first)
    }

    /// Issue 24 part 1: sd-bus is loaded at run time, so a machine without libsystemd0 builds and runs Baton; here the
    /// library is named somewhere it is not (`BATON_LIBSYSTEMD`) while a session bus is configured.
    static let noLibrary = [
        "BATON_LIBSYSTEMD": "/nonexistent/libsystemd.so.0",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus",
    ]

    @Test("without libsystemd the agent runs and continues as before, says why once at info, and baton doctor says why")
    func noLibsystemdRunsNormally() async throws {
        try await startingProcesses {
            let world = try Self.pairedDevices(desktop: Self.noLibrary)
            let line = try Self.continuesWithoutNotifications(world)
            #expect(line.contains(" info ") && line.contains("libsystemd"), "\(line)")
            let doctor = try Baton.run(
                ["doctor", "--state", world.state("desktop"), "--timeout", "0.5"],
                environment: Self.noLibrary
            )
            let check = try #require(doctor.stdout.split(separator: "\n").map(String.init).first { $0.contains("notifications:") })
            #expect(check.hasPrefix("warn") && check.contains("/nonexistent/libsystemd.so.0") && check.contains("libsystemd0"), "\(check)")
        }
    }
}
