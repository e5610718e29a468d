import BatonTestSupport
import Foundation
import Testing

/// `scripts/install.sh` into temporary PREFIX and XDG folders (issue 16 part 1): what it installs runs, the unit
/// passes `systemd-analyze verify`, and `--uninstall` removes exactly what it wrote, never the account.
@Suite("Install for the current user (issue 16)", .serialized)
struct InstallTests {
    /// HOME and the XDG folders inside `root`, for install.sh and the installed baton.
    static func environment(_ root: URL) -> [String: String] {
        [
            "HOME": root.appendingPathComponent("home").path,
            "XDG_DATA_HOME": root.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
        ]
    }

    /// Runs scripts/install.sh with `arguments`.
    static func script(_ arguments: [String], environment: [String: String]) throws -> Baton.Result {
        try Baton.run(
            [Baton.packageRoot.appendingPathComponent("scripts/install.sh").path] + arguments,
            environment: environment, executable: URL(fileURLWithPath: "/bin/bash")
        )
    }

    /// The binaries this build made, what install.sh installs.
    static var binaries: String { Baton.executable.deletingLastPathComponent().path }

    @Test("install into a temporary prefix: baton runs, finds ShopSnap, Notes and Recipes; uninstall keeps the account")
    func installAndUninstall() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let environment = Self.environment(root)
            let prefix = root.appendingPathComponent("prefix").path
            let binaries = Self.binaries
            func script(_ arguments: [String]) throws -> Baton.Result {
                try Self.script(arguments, environment: environment)
            }
            let installed = try script(["--prefix", prefix, "--binaries", binaries, "--no-enable", "--name", "installed"])
            #expect(installed.status == 0, "\(installed.output)")
            #expect(installed.stdout.contains("Not enabled (--no-enable)"))
            let baton = URL(fileURLWithPath: prefix + "/bin/baton")
            let unit = environment["XDG_CONFIG_HOME"]! + "/systemd/user/baton-agent.service"
            #expect(FileManager.default.isExecutableFile(atPath: prefix + "/bin/baton-agent"))
            let text = try String(contentsOfFile: unit, encoding: .utf8)
            #expect(text.contains("ExecStart=\(prefix)/bin/baton agent") && !text.contains("@BIN_DIR@") && !text.contains("@DATA_HOME@"), "\(text)")

            // The installed baton sees the installed ShopSnap; the machine had no account, so it has one now, named as asked.
            let apps = try Baton.run(["apps", "list"], environment: environment, executable: baton)
            #expect(apps.stdout.contains("com.razeware.ShopSnap") && apps.stdout.contains(environment["XDG_DATA_HOME"]! + "/baton/apps"), "\(apps.output)")
            #expect(apps.stdout.contains("org.baton.Notes"), "the document-based example too: \(apps.output)")
            // Recipes, the example in Python (issue 28 item 5), registered by the desktop file install.sh wrote.
            let recipes = environment["XDG_DATA_HOME"]! + "/applications/org.baton.Recipes.desktop"
            #expect(apps.stdout.contains("org.baton.Recipes") && apps.stdout.contains("desktop-file"), "\(apps.output)")
            #expect(FileManager.default.fileExists(atPath: environment["XDG_DATA_HOME"]! + "/dbus-1/services/org.baton.Recipes.service"))
            let devices = try Baton.run(["devices", "--offline"], environment: environment, executable: baton)
            #expect(devices.stdout.contains("installed"), "\(devices.output)")

            let removed = try script(["--prefix", prefix, "--uninstall"])
            #expect(removed.status == 0, "\(removed.output)")
            #expect(!FileManager.default.fileExists(atPath: baton.path) && !FileManager.default.fileExists(atPath: unit))
            #expect(!FileManager.default.fileExists(atPath: environment["XDG_DATA_HOME"]! + "/baton/apps"))
            #expect(!FileManager.default.fileExists(atPath: recipes) && !FileManager.default.fileExists(atPath: environment["XDG_DATA_HOME"]! + "/dbus-1"))
            #expect(FileManager.default.fileExists(atPath: environment["XDG_DATA_HOME"]! + "/baton/identity.plist"), "the account is kept")
            // A second uninstall has nothing to do, and says so.
            #expect(try script(["--uninstall"]).stdout.contains("Nothing to remove"))
        }
    }

    @Test("the user unit install.sh writes passes systemd's own check (systemd-analyze verify)", .requires(.systemdAnalyze))
    func unitVerifies() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let environment = Self.environment(root)
            let prefix = root.appendingPathComponent("prefix").path
            let installed = try Self.script(["--prefix", prefix, "--binaries", Self.binaries, "--no-enable", "--name", "verified"], environment: environment)
            try #require(installed.status == 0, "\(installed.output)")
            let unit = root.appendingPathComponent("config/systemd/user/baton-agent.service").path
            let verify = try Baton.run(["verify", unit], environment: environment, executable: try Requirement.systemdAnalyze.executable())
            #expect(verify.status == 0, "\(verify.output)")
            #expect(try Self.script(["--prefix", prefix, "--uninstall"], environment: environment).status == 0)
        }
    }
}
