import BatonRegistry
import BatonTestSupport
import Foundation
import Testing

@testable import BatonAgent

/// Issue 28 item 3: an app registered by its desktop file whose program is a Python script is recognised in the
/// processes that run it (the interpreter, with the script as the program it runs), and no other Python program of
/// the same user passes as it. Real processes, read from /proc as the agent's hello does.
@Suite("Issue 28 item 3: the identity of script apps and Flatpak apps", .serialized)
struct ScriptIdentityTests {
    /// A folder with `recipes.py` (`#!/usr/bin/python3`), `recipes-env.py` (`#!/usr/bin/env python3`), `other.py`
    /// and a desktop file for each of the first two.
    final class Scripts {
        let folder: URL
        var children: [pid_t] = []

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-script-identity-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let body = "import time\ntime.sleep(30)\n"
            try write("recipes.py", "#!/usr/bin/python3\n" + body)
            try write("recipes-env.py", "#!/usr/bin/env python3\n" + body)
            try write("other.py", "#!/usr/bin/python3\n" + body)
            try write("org.example.Recipes.desktop", desktopEntry(tryExec: "recipes.py"))
            try write("org.example.RecipesEnv.desktop", desktopEntry(tryExec: "recipes-env.py"))
        }

        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

        func desktopEntry(tryExec script: String) -> String {
            """
            [Desktop Entry]
            Type=Application
            Name=Recipes
            TryExec=\(path(script))
            Exec=python3 \(path(script)) %U
            X-Baton-TeamIdentifier=TEAMR
            X-Baton-ActivityTypes=org.example.recipes.view;

            """
        }

        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: folder.appendingPathComponent(name))
            chmod(path(name), 0o755)
        }

        /// The program the registry records for the desktop file `id`, as the agent sees it (PATH `/usr/bin:/bin`).
        func program(_ id: String) throws -> AppProgram {
            let record = try #require(try DesktopAppLoader.load(folder.appendingPathComponent("\(id).desktop"), id: "\(id).desktop", programSearchPath: ["/usr/bin", "/bin"]))
            let executable = try #require(record.executableURL)
            return AppProgram.of(executable, searchPath: ["/usr/bin", "/bin"])
        }

        /// Starts `program` with `arguments`; returns the process as /proc shows it once it runs `executable`.
        func run(_ program: String, _ arguments: [String], until executable: String) throws -> ProcessImage {
            let pid = try Launcher.spawn(program, arguments: arguments, environment: ["PATH": "/usr/bin:/bin"])
            children.append(pid)
            for _ in 0..<500 {
                // posix_spawn returns once the kernel has switched the child to the new program, a moment before its
                // command line is in place (an app saying hello has long been past that).
                if let image = ProcessImage.of(pid), image.executable == executable, !image.arguments.isEmpty { return image }
                usleep(10_000)
            }
            Issue.record("process \(pid) never ran \(executable): \(String(describing: ProcessImage.of(pid)))")
            throw CancellationError()
        }

        deinit {
            for pid in children {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
            try? FileManager.default.removeItem(at: folder)
        }
    }

    static var python: String { resolvedPath(URL(fileURLWithPath: "/usr/bin/python3")) }

    @Test("a #! script's program is its interpreter and itself; /usr/bin/env finds the interpreter on PATH", .requires(.python3))
    func programOfScripts() throws {
        let scripts = try Scripts()
        #expect(try scripts.program("org.example.Recipes") == .script(interpreter: Self.python, script: resolvedPath(URL(fileURLWithPath: scripts.path("recipes.py")))))
        #expect(try scripts.program("org.example.RecipesEnv") == .script(interpreter: Self.python, script: resolvedPath(URL(fileURLWithPath: scripts.path("recipes-env.py")))))
        // A compiled program is its executable, as before.
        #expect(AppProgram.of(URL(fileURLWithPath: "/bin/sleep"), searchPath: ["/usr/bin"]) == .executable(resolvedPath(URL(fileURLWithPath: "/bin/sleep"))))
    }

    @Test("python3 running the registered script is the app, run by python3 or directly by its #! line", .requires(.python3))
    func theScriptPasses() throws {
        let scripts = try Scripts()
        let recipes = try scripts.program("org.example.Recipes")
        let byInterpreter = try scripts.run("/usr/bin/python3", ["-u", scripts.path("recipes.py")], until: Self.python)
        #expect(byInterpreter.refusal(as: "org.example.Recipes", program: recipes, flatpakID: nil) == nil)
        let direct = try scripts.run(scripts.path("recipes.py"), [], until: Self.python)
        #expect(direct.refusal(as: "org.example.Recipes", program: recipes, flatpakID: nil) == nil)
        // `#!/usr/bin/env python3`, run directly: env finds python3 on the PATH and execs it on the script.
        let viaEnv = try scripts.run(scripts.path("recipes-env.py"), [], until: Self.python)
        #expect(viaEnv.refusal(as: "org.example.RecipesEnv", program: try scripts.program("org.example.RecipesEnv"), flatpakID: nil) == nil)
    }

    @Test("another python3 program of the same user claiming the app's id is refused, naming what it runs", .requires(.python3))
    func anotherPythonProgramIsRefused() throws {
        let scripts = try Scripts()
        let recipes = try scripts.program("org.example.Recipes")
        let other = try scripts.run("/usr/bin/python3", [scripts.path("other.py")], until: Self.python)
        let refusal = other.refusal(as: "org.example.Recipes", program: recipes, flatpakID: nil)
        #expect(refusal?.contains("other.py") == true, "\(refusal ?? "accepted")")
        // Code given on the command line, the script's path after it as its first argument: the code is the program.
        let inline = try scripts.run("/usr/bin/python3", ["-c", "import time; time.sleep(30)", scripts.path("recipes.py")], until: Self.python)
        #expect(inline.refusal(as: "org.example.Recipes", program: recipes, flatpakID: nil) != nil)
        // The other desktop app's script is not this one's either.
        let sibling = try scripts.run(scripts.path("recipes-env.py"), [], until: Self.python)
        #expect(sibling.refusal(as: "org.example.Recipes", program: recipes, flatpakID: nil) != nil)
        // A program that is not the interpreter at all.
        let sleeper = try scripts.run("/bin/sleep", ["30"], until: resolvedPath(URL(fileURLWithPath: "/bin/sleep")))
        let notPython = sleeper.refusal(as: "org.example.Recipes", program: recipes, flatpakID: nil)
        #expect(notPython?.contains("interpreter") == true, "\(notPython ?? "accepted")")
    }

    @Test("a process reads as itself only while its start time holds: an ended one reads as nothing", .requires(.python3))
    func endedProcessReadsAsNothing() throws {
        let scripts = try Scripts()
        let image = try scripts.run("/usr/bin/python3", [scripts.path("recipes.py")], until: Self.python)
        kill(image.pid, SIGKILL)
        var status: Int32 = 0
        waitpid(image.pid, &status, 0)
        scripts.children.removeAll()
        #expect(ProcessImage.of(image.pid) == nil)
    }

    @Test("a Flatpak app (X-Flatpak) is its app id from .flatpak-info, whatever it runs; another id, a sandbox claiming a non-Flatpak app or an unreadable file is refused")
    func flatpakIdentity() throws {
        let proc = FileManager.default.temporaryDirectory.appendingPathComponent("baton-fake-proc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: proc) }
        func sandbox(_ pid: Int32, _ info: String?) throws {
            let root = proc.appendingPathComponent("\(pid)/root")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            if let info { try Data(info.utf8).write(to: root.appendingPathComponent(".flatpak-info")) }
        }
        try sandbox(10, "[Application]\nname=org.example.Recipes\nruntime=runtime/org.gnome.Platform/x86_64/47\n\n[Instance]\ninstance-id=1\n")
        try sandbox(11, nil)
        try sandbox(12, "[Instance]\ninstance-id=2\n")
        try sandbox(13, String(repeating: "#", count: ProcessImage.maximumFlatpakInfoBytes + 10))
        #expect(ProcessImage.flatpak(of: 10, proc: proc.path) == .app("org.example.Recipes"))
        #expect(ProcessImage.flatpak(of: 11, proc: proc.path) == .none)
        #expect(ProcessImage.flatpak(of: 12, proc: proc.path) != .none && ProcessImage.flatpak(of: 12, proc: proc.path) != .app(""))
        if case .unreadable(let why) = ProcessImage.flatpak(of: 13, proc: proc.path) {
            #expect(why.contains("larger"))
        } else {
            Issue.record("a .flatpak-info over the bound was taken")
        }

        // The app id decides, for an app whose desktop file Flatpak exported (X-Flatpak); the executable (inside the
        // sandbox) is not checked.
        let exported = """
            [Desktop Entry]
            Type=Application
            Name=Recipes
            Exec=/usr/bin/flatpak run --branch=stable --arch=x86_64 --command=recipes org.example.Recipes
            X-Flatpak=org.example.Recipes
            X-Baton-TeamIdentifier=TEAMR
            X-Baton-ActivityTypes=org.example.recipes.view;

            """
        try Data(exported.utf8).write(to: proc.appendingPathComponent("org.example.Recipes.desktop"))
        let record = try #require(try DesktopAppLoader.load(proc.appendingPathComponent("org.example.Recipes.desktop"), id: "org.example.Recipes.desktop"))
        #expect(record.flatpakID == "org.example.Recipes")
        let program = AppProgram.executable("/usr/bin/flatpak")
        var image = ProcessImage(pid: 10, startTime: 1, executable: "/app/bin/recipes", arguments: [], workingFolder: nil, flatpak: ProcessImage.flatpak(of: 10, proc: proc.path))
        #expect(image.refusal(as: "org.example.Recipes", program: program, flatpakID: record.flatpakID) == nil)
        // Another Flatpak app claiming it, or a sandbox (a namespace of the same user's own making, say) claiming an app
        // that is no Flatpak app, is refused.
        #expect(image.refusal(as: "org.example.Notes", program: program, flatpakID: "org.example.Notes")?.contains("Flatpak app org.example.Recipes") == true)
        #expect(image.refusal(as: "org.example.Recipes", program: program, flatpakID: nil)?.contains("no Flatpak app") == true)
        image.flatpak = ProcessImage.flatpak(of: 12, proc: proc.path)
        #expect(image.refusal(as: "org.example.Recipes", program: program, flatpakID: record.flatpakID) != nil)
        // This test's own process is no Flatpak app.
        #expect(ProcessImage.of(getpid())?.flatpak == ProcessImage.Flatpak.none)
    }
}
