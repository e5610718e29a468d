import BatonTestSupport
import Foundation
import Testing

/// Issue 28 item 3 through a real `baton agent`: an app that is a Python script, registered by its desktop file
/// (`TryExec` the script), says hello on the app socket as the Swift library would. Run by python3, or directly by its
/// `#!` line, it is welcomed; the same code as another script of the same user is refused `notPermitted`.
@Suite("Issue 28 item 3: a Python script app says hello to a real agent", .serialized)
struct ScriptAppHelloCLITests {
    static let hello = Baton.packageRoot.appendingPathComponent("Tests/BatonCLITests/Fixtures/script-app-hello.py")

    @Test("the registered script is welcomed by python3 and run directly; another python3 script claiming its id is refused", .requires(.python3))
    func scriptApp() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("desktop")
            let apps = world.root.appendingPathComponent("apps-desktop")
            try FileManager.default.createDirectory(at: apps, withIntermediateDirectories: true)
            // The app's script and an impostor: the same code, another file.
            let script = apps.appendingPathComponent("recipes.py")
            let impostor = world.root.appendingPathComponent("other.py")
            for file in [script, impostor] {
                try FileManager.default.copyItem(at: Self.hello, to: file)
                chmod(file.path, 0o755)
            }
            try Data(
                """
                [Desktop Entry]
                Type=Application
                Name=Recipes
                TryExec=\(script.path)
                Exec=/usr/bin/python3 \(script.path)
                X-Baton-TeamIdentifier=TEAMR
                X-Baton-ActivityTypes=org.example.recipes.view;

                """.utf8
            ).write(to: apps.appendingPathComponent("org.example.Recipes.desktop"))
            try world.agent("desktop", apps: apps.path)
            let socket = try String(contentsOfFile: world.state("desktop") + "/agent-socket", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let python = URL(fileURLWithPath: "/usr/bin/python3")

            let byInterpreter = try Baton.run([script.path, socket, "org.example.Recipes"], executable: python)
            #expect(byInterpreter.stdout.hasPrefix("welcome"), "\(byInterpreter.output)")
            let direct = try Baton.run([socket, "org.example.Recipes"], executable: script)
            #expect(direct.stdout.hasPrefix("welcome"), "\(direct.output)")

            let other = try Baton.run([impostor.path, socket, "org.example.Recipes"], executable: python)
            #expect(other.stdout.hasPrefix("refused notPermitted"), "\(other.output)")
            #expect(other.stdout.contains("other.py"), "the refusal names what the process runs: \(other.output)")
            let inline = try Baton.run(["-c", "exec(open('\(script.path)').read())", socket, "org.example.Recipes"], executable: python)
            #expect(inline.stdout.hasPrefix("refused notPermitted"), "\(inline.output)")
        }
    }
}
