import BatonTestSupport
import Foundation
import Testing

/// Issue 28 items 3 and 4 through real agents: ShopSnap's list on the laptop is continued on the desktop in an app
/// that is a Python script registered by its desktop file with `DBusActivatable=true`. The desktop's agent asks its
/// session bus (a dbus-daemon of the test's own, with a service folder) to start the app, which takes its name, says
/// hello as a script (its interpreter running it) and is delivered the state within the launch deadline (C5). Without
/// a service file the agent logs that the bus has none and runs the desktop file's `Exec` line, with the same end.
@Suite("Issue 28 items 3 and 4: a continuation starts a Python app by D-Bus activation", .serialized)
struct DBusActivationCLITests {
    static let app = Baton.packageRoot.appendingPathComponent("Tests/BatonCLITests/Fixtures/script-app-hello.py")

    @Test(
        "continue starts the DBusActivatable script app through the session bus (or, with no service file, by Exec, saying so), and it is welcomed and given the state (C5)",
        .requires(.python3, .pythonDBus, .dbusDaemon, .libsystemd),
        arguments: [true, false]
    )
    func continuationActivatesTheApp(serviceFile: Bool) async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            for name in ["laptop", "desktop"] { try world.device(name) }
            try world.pair("laptop", "desktop")

            let apps = world.root.appendingPathComponent("apps-desktop")
            let services = world.root.appendingPathComponent("services")
            for folder in [apps, services] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            let script = apps.appendingPathComponent("lists.py")
            try FileManager.default.copyItem(at: Self.app, to: script)
            chmod(script.path, 0o755)
            let output = world.root.appendingPathComponent("lists.out")
            // Exec runs the script writing `output`-exec; the bus, from the service file, writing `output`.
            try Data(
                """
                [Desktop Entry]
                Type=Application
                Name=Lists
                TryExec=\(script.path)
                Exec=/usr/bin/python3 \(script.path) \(world.state("desktop")) org.example.Lists \(output.path)-exec
                DBusActivatable=true
                X-Baton-TeamIdentifier=RAZEWARE01
                X-Baton-ActivityTypes=com.razeware.shopsnap.view;com.razeware.shopsnap.edit;

                """.utf8
            ).write(to: apps.appendingPathComponent("org.example.Lists.desktop"))
            if serviceFile {
                try Data(
                    "[D-BUS Service]\nName=org.example.Lists\nExec=/usr/bin/python3 \(script.path) \(world.state("desktop")) org.example.Lists \(output.path)\n".utf8
                ).write(to: services.appendingPathComponent("org.example.Lists.service"))
            }
            let bus = try PrivateSessionBus(in: world.root.appendingPathComponent("bus"), serviceFolder: services)
            defer { bus.stop() }

            try world.agent("laptop", apps: try world.apps("laptop"))
            try world.agent("desktop", peers: ["laptop"], apps: apps.path, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
            _ = try world.shopSnap(on: "laptop", ["list", "Milk", "Eggs"])
            #expect(try eventually(timeout: 10) { try world.nearby("desktop").stdout.contains("Shopping list") })

            let continued = try Baton.run("continue", "--state", world.state("desktop"))
            #expect(continued.status == 0, "\(continued.output)")
            let desktop = try #require(world.agents["desktop"])
            // Started by the bus, or by Exec after the bus said it has no service for the app.
            let started = serviceFile ? output : URL(fileURLWithPath: output.path + "-exec")
            let notStarted = serviceFile ? URL(fileURLWithPath: output.path + "-exec") : output
            if serviceFile {
                #expect(desktop.waitFor("the session bus started org.example.Lists") != nil, "\(desktop.output.suffix(2_000))")
            } else {
                #expect(desktop.waitFor("has no service for org.example.Lists") != nil, "\(desktop.output.suffix(2_000))")
                #expect(desktop.output.contains("launched by its Exec line instead"), "\(desktop.output.suffix(2_000))")
            }
            #expect(eventually(timeout: 10) { (try? String(contentsOf: started, encoding: .utf8))?.contains("deliver") == true })
            let lines = (try? String(contentsOf: started, encoding: .utf8)) ?? ""
            #expect(lines.hasPrefix("welcome"), "the script app was welcomed as itself: \(lines)")
            #expect(lines.contains("will com.razeware.shopsnap."), "\(lines)")
            #expect(!FileManager.default.fileExists(atPath: notStarted.path), "the app was started twice")
        }
    }
}
