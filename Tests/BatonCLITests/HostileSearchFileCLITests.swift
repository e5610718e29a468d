import BatonTestSupport
import Foundation
import Testing

/// `baton search` over a search.sqlite another program of the same user wrote (issue 25 item 6; SEMANTICS G1).
@Suite("baton search: a hostile search.sqlite (issue 25 item 6, G1)")
struct HostileSearchFileCLITests {
    /// Python (its sqlite3 module) plants a 40 MB title in a real index, keeping the schema exactly ours, then runs
    /// `baton search milk` and prints the command's peak resident size (KB) on its last line.
    static let script = """
        import resource, sqlite3, subprocess, sys
        baton, state = sys.argv[1], sys.argv[2]
        db = sqlite3.connect(state + "/search.sqlite")
        db.execute("INSERT INTO activities (bundleIdentifier, activityType, title, keywords, savedAt, payload, bytes) "
                   "VALUES ('com.example.app', 't', 'Milk and eggs', '', strftime('%s', 'now'), x'', 10)")
        trigger = db.execute("SELECT sql FROM sqlite_master WHERE name = 'activities_after_update'").fetchone()[0]
        db.execute("DROP TRIGGER activities_after_update")
        db.execute("UPDATE activities SET title = printf('%.*c', 40000000, 'x')")
        db.execute(trigger)
        db.commit()
        db.close()
        out = subprocess.run([baton, "search", "milk", "--state", state], capture_output=True)
        sys.stdout.buffer.write(out.stdout + out.stderr)
        print("\\nstatus %d maxrss %d" % (out.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
        """

    @Test("issue 25 item 6: a 40 MB title planted in search.sqlite: baton search prints its first 16,384 characters and how many more, in well under 100 MB")
    func plantedLongTitleIsCut() throws {
        let state = try Baton.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        let rebuilt = try Baton.run("search", "--rebuild", "--state", state.path)
        #expect(rebuilt.status == 0, "\(rebuilt.output)")
        let result = try Baton.run(
            ["-c", Self.script, Baton.executable.path, state.path],
            executable: try Requirement.python3.executable()
        )
        let last = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let words = last.split(separator: " ")
        let status = words.count == 4 ? Int(words[1]) : nil
        let maxrss = words.count == 4 ? Int(words[3]) : nil
        #expect(status == 0, "\(result.output.prefix(2_000))")
        #expect(result.stdout.contains("… (39,983,616 more characters)"), "\(result.output.prefix(2_000))")
        #expect(result.stdout.utf8.count < 20_000, "printed \(result.stdout.utf8.count) bytes")
        let peak = try #require(maxrss, "\(result.output.prefix(2_000))")
        #expect(peak < 100_000, "baton search peaked at \(peak) KB")
    }
}
