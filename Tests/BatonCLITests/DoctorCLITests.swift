import Foundation
import Testing

/// `baton doctor` (issue 16 part 1): what a person sees when asking why a device does not hand off, and what to do.
@Suite("baton doctor (issue 16)", .serialized)
struct DoctorCLITests {
    /// The checks `baton doctor --json` printed, by name.
    static func checks(_ result: Baton.Result) throws -> [String: [String: String]] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.output)")
        let checks = try #require(object["checks"] as? [[String: String]])
        return Dictionary(checks.map { ($0["name"] ?? "", $0) }) { first, _ in first }
    }

    @Test("a bare device fails with what to do; two paired devices with agents pass; a dead peer and a broken app warn")
    func doctor() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            // Nothing yet: no identity, no agent. A failure, and each says what to do.
            let bare = try Baton.run("doctor", "--state", world.state("laptop"), "--apps-path", world.root.path, "--timeout", "0.5")
            #expect(bare.status == 1, "\(bare.output)")
            #expect(bare.stdout.contains("FAIL  identity") && bare.stdout.contains("baton init --name NAME"), "\(bare.output)")
            #expect(bare.stdout.contains("FAIL  agent") && bare.stdout.contains("→ start it"), "\(bare.output)")

            try world.device("laptop")
            try world.device("desktop")
            try world.pair("laptop", "desktop")
            let apps = try world.apps("laptop")
            // A bundle that does not load is listed with why, as a warning.
            let broken = URL(fileURLWithPath: apps).appendingPathComponent("Broken.app")
            try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
            try Data("not a property list".utf8).write(to: broken.appendingPathComponent("Info.plist"))
            // A synced folder named here but gone is a warning naming it (C9: its documents cannot continue).
            let gone = world.root.appendingPathComponent("gone")
            try FileManager.default.createDirectory(at: gone, withIntermediateDirectories: true)
            #expect(try Baton.run("folders", "add", "docs", gone.path, "--state", world.state("desktop")).status == 0)
            try FileManager.default.removeItem(at: gone)
            try world.agent("desktop", apps: apps)
            try world.agent("laptop", peers: ["desktop"], apps: apps)
            #expect(eventually(timeout: 10) { (try? world.nearby("desktop"))?.status == 0 })

            // The desktop learns the laptop's address from its adverts; wait until doctor finds every check passing.
            var checks: [String: [String: String]] = [:]
            let healthy = eventually(timeout: 15) {
                guard let result = try? Baton.run("doctor", "--json", "--state", world.state("desktop"), "--apps-path", apps) else { return false }
                checks = (try? Self.checks(result)) ?? [:]
                return result.status == 0 && checks["peer laptop"]?["level"] == "ok"
            }
            #expect(healthy, "\(checks)")
            #expect(checks["identity"]?["level"] == "ok" && checks["account"]?["detail"]?.contains("laptop") == true, "\(checks)")
            #expect(checks["agent"]?["level"] == "ok" && checks["socket"]?["level"] == "ok", "\(checks)")
            // The agent's count and the apps check agree: the built-in browser app is the agent's own, not installed.
            #expect(checks["agent"]?["detail"]?.hasSuffix("sees 1 installed app") == true, "\(checks)")
            #expect(checks["multicast"] != nil && checks["apps"]?["detail"]?.contains("1 app installed") == true, "\(checks)")
            #expect(checks["app"]?["level"] == "warn" && checks["app"]?["detail"]?.contains("Broken.app") == true, "\(checks)")
            #expect(checks["folder docs"]?["level"] == "warn" && checks["folder docs"]?["advice"]?.contains("baton folders add docs") == true, "\(checks)")

            // The laptop's agent stops: the desktop's doctor warns about it (not a failure: the desktop still works).
            world.agents["laptop"]?.stop()
            let alone = try Baton.run("doctor", "--state", world.state("desktop"), "--apps-path", apps, "--timeout", "0.5")
            #expect(alone.status == 0, "\(alone.output)")
            #expect(alone.stdout.contains("warn  peer laptop: nothing answers at"), "\(alone.output)")
        }
    }
}
