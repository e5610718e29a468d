import Foundation
import Testing

@Suite("baton init, devices, remove; crash safety of state writes")
struct AccountCLITests {
    static func roster(_ state: String) throws -> [String] {
        let result = try Baton.run("devices", "--state", state, "--all", "--offline")
        try #require(result.status == 0, "the roster must always load: \(result.output)")
        return result.stdout.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("account key") }
    }

    @Test("init, devices and remove, with clear errors")
    func lifecycle() async throws {
        try await startingProcesses {
            let directory = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let state = directory.appendingPathComponent("state").path
            let missing = try Baton.run("devices", "--state", state)
            #expect(missing.status != 0 && missing.stderr.contains("run `baton init --name NAME` first"))
            #expect(try Baton.run("init", "--name", "laptop", "--state", state).stdout.contains("This device is \"laptop\""))
            #expect(try Baton.debug("roster-churn", "--state", state, "--count", "2").status == 0)
            let listed = try Baton.run("devices", "--state", state)
            #expect(listed.stdout.contains("laptop  this device") && listed.stdout.contains("3 active devices"))
            #expect(listed.stdout.contains("churn-1  address unknown, never seen"))
            let removed = try Baton.run("remove", "churn-1", "--state", state)
            #expect(removed.stdout.contains("Removed churn-1") && removed.stdout.contains("epoch 2"))
            #expect(try Baton.run("remove", "laptop", "--state", state).stderr.contains("is this device"))
            #expect(try Baton.run("remove", "nobody", "--state", state).stderr.contains("[unknownDevice]"))
            #expect(try Baton.run("devices", "--state", state, "--all").stdout.contains("churn-1  removed"))
        }
    }

    @Test("a crash at each step of a write leaves the old roster or the new one, never a broken one")
    func crashPoints() async throws {
        try await startingProcesses {
            let directory = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let state = directory.appendingPathComponent("state").path
            _ = try Baton.run("init", "--name", "laptop", "--state", state)
            let before = try Self.roster(state).count
            for (step, grows) in [("temp-written", false), ("renamed", true)] {
                let count = try Self.roster(state).count
                let crashed = try Baton.run(["roster-churn", "--state", state], environment: ["BATON_CRASH_AT": step], executable: Baton.debugExecutable)
                #expect(crashed.status == 86, "the process must die at \(step)")
                #expect(try Self.roster(state).count == count + (grows ? 1 : 0), "after a crash at \(step)")
            }
            #expect(try Self.roster(state).count == before + 1)
            // The next write clears what the crash left behind.
            _ = try Baton.debug("roster-churn", "--state", state)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.contains(".tmp-") }
            #expect(leftovers.isEmpty)
        }
    }

    @Test("SIGKILL at random moments during a stream of writes never breaks the roster")
    func randomKills() async throws {
        try await startingProcesses {
            let directory = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let state = directory.appendingPathComponent("state").path
            _ = try Baton.run("init", "--name", "laptop", "--state", state)
            var previous = try Self.roster(state).count
            for round in 0..<12 {
                let process = Process()
                process.executableURL = Baton.debugExecutable
                process.arguments = ["roster-churn", "--state", state, "--count", "100000"]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                // Killed during the writes, not before the first: on a loaded machine (CI runs every test at once)
                // the process can take longer than the delay to start writing at all.
                let started = Date()
                while ((try? Self.roster(state).count) ?? 0) <= previous, Date().timeIntervalSince(started) < 20 { usleep(5_000) }
                usleep(useconds_t(40_000 + (round * 7_919) % 60_000))
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                let now = try Self.roster(state).count
                #expect(now >= previous, "a write is never undone")
                previous = now
            }
            #expect(previous > 1, "the churn made progress between kills")
        }
    }
}
