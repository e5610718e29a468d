import BatonRegistry
import BatonTestSupport
import Foundation
import Testing

@testable import BatonAgent

/// Issue 28 item 4: a desktop-file app is started the way its desktop file says: by the session bus when it says
/// `DBusActivatable=true` and the bus has a service file for it, else by its `Exec` line's arguments (no shell, the
/// field codes for documents dropped). Against a dbus-daemon of the test's own, with a service folder.
@Suite("Issue 28 item 4: launch by D-Bus activation or by Exec", .serialized)
struct AppLaunchTests {
    /// A bus with `services/` as its service folder, a D-Bus service for `org.example.Recipes`, and desktop files.
    final class Desktop {
        let folder: URL
        let address: String
        private var bus: PrivateSessionBus?

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-app-launch-\(UUID().uuidString)")
            // PrivateSessionBus's socket.
            address = "unix:path=\(folder.path)/bus"
            let services = folder.appendingPathComponent("services")
            try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
            // The activated app: takes its name on the bus that started it, says it ran, and stays.
            try write(
                "service.py",
                """
                import dbus, os, sys, time
                bus = dbus.bus.BusConnection(os.environ["DBUS_STARTER_ADDRESS"])
                bus.request_name("org.example.Recipes")
                with open(sys.argv[1], "w") as f:
                    f.write(str(os.getpid()))
                time.sleep(30)
                """
            )
            // The app started by Exec: writes the arguments it was given.
            try write(
                "argv.py",
                """
                import json, os, sys, time
                with open(os.path.join(os.path.dirname(sys.argv[0]), sys.argv[1] + ".json"), "w") as f:
                    json.dump(sys.argv[1:], f)
                """
            )
            try write(
                "services/org.example.Recipes.service",
                "[D-BUS Service]\nName=org.example.Recipes\nExec=/usr/bin/python3 \(folder.path)/service.py \(folder.path)/activated\n"
            )
            bus = try PrivateSessionBus(in: folder, serviceFolder: services)
        }

        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: folder.appendingPathComponent(name))
        }

        /// The app registered by the desktop file `id`.desktop, which says `activatable` and runs argv.py `tag`.
        func app(_ id: String, activatable: Bool, tag: String) throws -> AppRecord {
            try write(
                "\(id).desktop",
                """
                [Desktop Entry]
                Type=Application
                Name=Recipes
                Exec=python3 \(folder.path)/argv.py \(tag) "two words" %U --flag
                DBusActivatable=\(activatable)
                X-Baton-TeamIdentifier=TEAMR
                X-Baton-ActivityTypes=org.example.recipes.view;

                """
            )
            return try #require(try DesktopAppLoader.load(folder.appendingPathComponent("\(id).desktop"), id: "\(id).desktop", programSearchPath: ["/usr/bin", "/bin"]))
        }

        /// What argv.py run as `tag` was given, once it has written it.
        func arguments(_ tag: String) -> [String]? {
            let file = folder.appendingPathComponent("\(tag).json")
            for _ in 0..<500 {
                if let data = try? Data(contentsOf: file), let arguments = try? JSONDecoder().decode([String].self, from: data) { return arguments }
                usleep(10_000)
            }
            return nil
        }

        deinit {
            if let pid = (try? String(contentsOf: folder.appendingPathComponent("activated"), encoding: .utf8)).flatMap({ Int32($0) }) {
                kill(pid, SIGKILL)
            }
            bus?.stop()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// The note of a start that spawned the app's command; records an issue (and gives nil) when it did not.
    static func spawnedNote(_ started: Launcher.Started) -> String?? {
        guard case .spawned(_, let note) = started else {
            Issue.record("not spawned: \(started)")
            return nil
        }
        return .some(note)
    }

    static func reap(_ started: Launcher.Started) {
        guard case .spawned(let pid, _) = started else { return }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    @Test("the registry records Exec's arguments without the document codes, and DBusActivatable", .requires(.dbusDaemon, .python3))
    func recorded() throws {
        let desktop = try Desktop()
        let app = try desktop.app("org.example.Recipes", activatable: true, tag: "recorded")
        #expect(app.isDBusActivatable)
        #expect(app.launchCommand == ["/usr/bin/python3", "\(desktop.folder.path)/argv.py", "recorded", "two words", "--flag"])
        #expect(try desktop.app("org.example.Plain", activatable: false, tag: "plain").isDBusActivatable == false)
    }

    @Test("DBusActivatable=true with a service file: the session bus starts the app", .requires(.dbusDaemon, .libsystemd, .pythonDBus))
    func activated() throws {
        let desktop = try Desktop()
        let app = try desktop.app("org.example.Recipes", activatable: true, tag: "exec-instead")
        let started = Launcher.start(app, environment: ["PATH": "/usr/bin:/bin"], busAddress: desktop.address, timeoutMicroseconds: 10_000_000)
        #expect(started == .activated)
        // The service's program ran (it owns the name: the bus answered only then; it writes its pid just after); Exec
        // did not.
        let written = desktop.folder.appendingPathComponent("activated")
        for _ in 0..<500 where (try? String(contentsOf: written, encoding: .utf8)).flatMap({ Int32($0) }) == nil { usleep(10_000) }
        #expect((try? String(contentsOf: written, encoding: .utf8)).flatMap { Int32($0) } != nil)
        #expect(!FileManager.default.fileExists(atPath: desktop.folder.appendingPathComponent("exec-instead.json").path))
        // Asked again while it runs: the bus says so, and nothing more is started.
        #expect(Launcher.start(app, environment: [:], busAddress: desktop.address, timeoutMicroseconds: 10_000_000) == .activated)
    }

    @Test("DBusActivatable=true without a service file: Exec's arguments run instead, and the log says why", .requires(.dbusDaemon, .libsystemd, .python3))
    func fallsBackToExec() throws {
        let desktop = try Desktop()
        let app = try desktop.app("org.example.NoService", activatable: true, tag: "fallback")
        let started = Launcher.start(app, environment: ["PATH": "/usr/bin:/bin"], busAddress: desktop.address, timeoutMicroseconds: 10_000_000)
        defer { Self.reap(started) }
        guard let note = Self.spawnedNote(started) else { return }
        #expect(note?.contains("ServiceUnknown") == true && note?.contains("Exec line instead") == true, "\(note ?? "no note")")
        #expect(desktop.arguments("fallback") == ["fallback", "two words", "--flag"])
    }

    @Test("an app that is not D-Bus activatable runs its Exec line's arguments, no shell", .requires(.dbusDaemon, .python3))
    func execArguments() throws {
        let desktop = try Desktop()
        let app = try desktop.app("org.example.Plain", activatable: false, tag: "plain")
        let started = Launcher.start(app, environment: ["PATH": "/usr/bin:/bin"], busAddress: desktop.address, timeoutMicroseconds: 10_000_000)
        defer { Self.reap(started) }
        guard let note = Self.spawnedNote(started) else { return }
        #expect(note == nil)
        #expect(desktop.arguments("plain") == ["plain", "two words", "--flag"])
    }
}
