import BatonTestSupport
import Foundation
import Testing

/// On-device search through a real agent process and ShopSnap (issue 15; SEMANTICS G1, G2): saved as the app offers
/// it, found by `baton search`, continued in the app launched for it; and what a desktop does to the index (kill -9,
/// a damaged file).
@Suite("baton search: find and continue, kill -9, a damaged index (G1, G2)", .serialized)
struct SearchCLITests {
    /// `baton search WORDS --json` on `name`'s device: the results.
    static func search(_ world: HandoffWorld, _ name: String, _ words: String..., apps: String, limit: Int = 20) throws -> [[String: Any]] {
        let result = try Baton.run(["search"] + words + ["--json", "--limit", "\(limit)", "--state", world.state(name), "--apps-path", apps])
        guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw CommandFailed(result.output)
        }
        return object["results"] as? [[String: Any]] ?? []
    }

    struct CommandFailed: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test("G1, G2: a list ShopSnap offered is found by its words (accents ignored), saved again when it changes, and continued in ShopSnap launched for it")
    func findAndContinue() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            let apps = try world.apps("laptop")
            try world.agent("laptop", apps: apps)
            let agent = try #require(world.agents["laptop"])
            let list = try world.shopSnap(on: "laptop", ["list", "Milk", "Crème fraîche"])

            // A keyword, typed without its accents, finds it once the agent has saved it (G1).
            var found: [[String: Any]] = []
            #expect(try eventually(timeout: 10) { found = try Self.search(world, "laptop", "creme", apps: apps); return found.count == 1 }, "\(agent.output)")
            let result = try #require(found.first)
            #expect(result["app"] as? String == "com.razeware.ShopSnap")
            #expect(result["appName"] as? String == "ShopSnap")
            #expect(result["title"] as? String == "Shopping list (2 items)")
            #expect(result["persistentIdentifier"] as? String == "shopping-list")
            let id = try #require(result["id"] as? Int)

            // The plain output marks the words that matched, and says how to continue.
            let plain = try Baton.run("search", "shopp", "--state", world.state("laptop"), "--apps-path", apps)
            #expect(plain.status == 0 && plain.stdout.contains("[Shopping] list (2 items)") && plain.stdout.contains("ShopSnap (com.razeware.ShopSnap)"), "\(plain.output)")
            #expect(plain.stdout.contains("baton search --continue"))

            // needsSave: the list changes and is saved again, replacing its entry (same persistent identifier, same id).
            list.send("add Butter")
            #expect(try eventually(timeout: 10) { try Self.search(world, "laptop", "butter", apps: apps).first?["title"] as? String == "Shopping list (3 items)" })
            #expect(try Self.search(world, "laptop", "milk", apps: apps).map { $0["id"] as? Int } == [id])

            // G2: ShopSnap quits; the result is continued in ShopSnap, launched for it, with the list as it was saved.
            list.stop()
            let continued = try Baton.run("search", "--continue", "\(id)", "--state", world.state("laptop"))
            #expect(continued.status == 0 && continued.stdout.contains("continued in com.razeware.ShopSnap"), "\(continued.output)")
            #expect(continued.stdout.contains("G2: saved for search by com.razeware.ShopSnap"))
            #expect(agent.waitFor("shopsnap: continued list: Milk, Crème fraîche, Butter") != nil, "\(agent.output)")
            #expect(agent.lines(containing: "launched com.razeware.ShopSnap").count == 1)

            // A result that does not exist is a typed failure, and nothing is launched.
            let missing = try Baton.run("search", "--continue", "99999", "--state", world.state("laptop"))
            #expect(missing.status != 0 && missing.output.contains("[notFound]"), "\(missing.output)")
            #expect(agent.lines(containing: "launched com.razeware.ShopSnap").count == 1)

            // Nothing matches: said plainly; no words at all: a usage error.
            let nothing = try Baton.run("search", "zucchini", "--state", world.state("laptop"))
            #expect(nothing.status == 0 && nothing.stdout.contains("No saved activity matches"))
            #expect(try Baton.run("search", "--state", world.state("laptop")).status != 0)
        }
    }

    @Test("G1: kill -9 of the agent during a stream of index writes loses at most the write in flight; the file stays an intact index", .requires(.python3))
    func killDuringWrites() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            let apps = try world.apps("laptop")
            try world.agent("laptop", apps: apps, extra: ["--log-level", "debug"])
            let agent = try #require(world.agents["laptop"])
            _ = try world.shopSnap(on: "laptop", ["lists", "2000"])
            // Killed mid-stream: after some saves, while ShopSnap is still sending.
            #expect(eventually(timeout: 30) { agent.lines(containing: "search: saved").count >= 40 }, "\(agent.output)")
            agent.kill()
            let logged = agent.lines(containing: "search: saved").count
            #expect(logged < 2_000, "the agent was killed before the stream ended")

            // What SQLite itself says of the file (Python's sqlite3, another reader): intact.
            let path = world.state("laptop") + "/search.sqlite"
            let check = Process()
            check.executableURL = try Requirement.python3.executable()
            check.arguments = ["-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])", path]
            let output = Pipe()
            check.standardOutput = output
            try check.run()
            check.waitUntilExit()
            #expect(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "ok\n")

            // Every save the agent had finished is there; at most the one in flight (committed, not yet logged) more.
            let entries = try Self.search(world, "laptop", "basket", apps: apps, limit: 1_000)
            #expect(entries.count >= min(logged, 1_000) && entries.count <= logged + 1, "\(entries.count) entries, \(logged) saves logged")

            // A new agent opens the same index and goes on saving into it.
            world.agents["laptop"] = nil
            try world.agent("laptop", apps: apps)
            _ = try world.shopSnap(on: "laptop", ["list", "Quinoa"])
            #expect(try eventually(timeout: 10) { try Self.search(world, "laptop", "quinoa", apps: apps).count == 1 })
        }
    }

    @Test("a damaged index: baton search says what to do, --rebuild starts an empty one, and the agent sets it aside by itself; the account is untouched")
    func damagedIndex() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            let apps = try world.apps("laptop")
            let path = world.state("laptop") + "/search.sqlite"
            let roster = try Data(contentsOf: URL(fileURLWithPath: world.state("laptop") + "/roster.plist"))
            try Data(repeating: 0x5A, count: 8_192).write(to: URL(fileURLWithPath: path))

            let damaged = try Baton.run("search", "milk", "--state", world.state("laptop"))
            #expect(damaged.status != 0 && damaged.output.contains("[damaged]") && damaged.output.contains("baton search --rebuild"), "\(damaged.output)")
            #expect(damaged.output.contains("account and paired devices are not touched"))

            let rebuilt = try Baton.run("search", "--rebuild", "--state", world.state("laptop"))
            #expect(rebuilt.status == 0, "\(rebuilt.output)")
            #expect(FileManager.default.fileExists(atPath: path + ".damaged"))
            let empty = try Baton.run("search", "milk", "--state", world.state("laptop"))
            #expect(empty.status == 0 && empty.stdout.contains("No saved activity matches"), "\(empty.output)")

            // Damaged again, with an agent running: it sets the file aside at start and indexes into a new one.
            try Data(repeating: 0x5A, count: 8_192).write(to: URL(fileURLWithPath: path))
            try world.agent("laptop", apps: apps)
            let agent = try #require(world.agents["laptop"])
            _ = try world.shopSnap(on: "laptop", ["list", "Milk"])
            #expect(try eventually(timeout: 10) { try Self.search(world, "laptop", "milk", apps: apps).count == 1 }, "\(agent.output)")
            #expect(agent.lines(containing: "Setting it aside").count == 1, "\(agent.output)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: world.state("laptop") + "/roster.plist")) == roster, "the account is not touched")
        }
    }
}
