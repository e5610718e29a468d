import BatonTestSupport
import Foundation
import Testing

/// scripts/load.py's streams scenario (issue 25 item 10), small: 20 continuation streams at once through one agent
/// (3 devices, each continued there by an app of its own), 3 s of echoes. Checks what must hold however busy the
/// machine: every stream opens, every echo comes back the same, every stream ends cleanly, and the agent's
/// descriptors are back once they have (100 streams once left 100 pidfds behind). docs/RELIABILITY.md has the
/// full run's figures. Relayed through the hub, which is what the scenario measures; and direct (issue 30), where the
/// apps hold the streams: under a full test run 1-2 of 20 direct streams once lost their `eof` at the end.
@Suite("Load: many streams through one agent (issue 25 item 10)", .serialized)
struct LoadScriptTests {
    @Test("issue 25 item 10, F3: 20 streams at once through one agent, every echo checked, nothing left once they end", .requires(.python3))
    func streamsThroughOneAgent() async throws {
        try await Self.streams(direct: false)
    }

    @Test("issue 30, F3: 20 direct streams at once between the apps, every echo checked, each ending cleanly at both ends", .requires(.python3))
    func directStreams() async throws {
        try await Self.streams(direct: true)
    }

    static func streams(direct: Bool) async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let report = root.appendingPathComponent("load.json")
            let script = Baton.packageRoot.appendingPathComponent("scripts/load.py")
            let run = try Baton.run(
                [script.path, "--bin", Baton.executable.deletingLastPathComponent().path, "--only", "streams", "--streams", "20", "--seconds", "3",
                 "--json", report.path] + (direct ? ["--direct"] : []),
                executable: URL(fileURLWithPath: "/usr/bin/python3")
            )
            print("LoadScriptTests\(direct ? " (direct)" : ""):\n\(run.stdout)")
            let data = try #require(try? Data(contentsOf: report), "no report: \(run.output)")
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let figures = try #require(json["figures"] as? [[String: Any]])
            func figure(_ prefix: String) -> [String: Any]? {
                figures.first { ($0["name"] as? String)?.hasPrefix(prefix) == true }
            }
            for name in ["streams open at once", "echoes that came back different", "streams that failed", "streams that ended cleanly", "hub descriptors once they ended"] {
                let found = figure(name)
                #expect(found?["met"] as? Bool == true, "\(name): \(String(describing: found))\n\(run.output)")
            }
            #expect((figure("echoes checked")?["value"] as? Int ?? 0) > 0, "\(run.output)")
        }
    }
}
