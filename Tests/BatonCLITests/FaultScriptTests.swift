import BatonTestSupport
import Foundation
import Testing

/// scripts/faults.py (issue 25 item 9): two devices in network namespaces under packet loss, latency, partitions
/// (mid-fetch and mid-stream), a link down and up, an agent killed during a handoff, clocks 10 minutes apart and a
/// full disk. Each continuation ends continued or with its typed failure (C5, C8) within its bound, continuing works
/// again after each fault, and nothing saved is lost. Two continuations per level here, each time bound tripled (every
/// other test of the package runs at once on the same cores); docs/RELIABILITY.md has a longer run's figures.
@Suite("Faults in network namespaces (issue 25 item 9)", .serialized)
struct FaultScriptTests {
    @Test(
        "issue 25 item 9, C5, C8: loss, latency, partitions, link down, a killed agent, clock skew and a full disk end as documented",
        .requires(.networkNamespaces, .nftables, .python3, .faketime)
    )
    func faultsEndAsDocumented() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let report = root.appendingPathComponent("faults.json")
            let script = Baton.packageRoot.appendingPathComponent("scripts/faults.py")
            let run = try Baton.run(
                [script.path, "--bin", Baton.executable.deletingLastPathComponent().path, "--rounds", "2", "--slack", "3", "--json", report.path],
                executable: URL(fileURLWithPath: "/usr/bin/python3")
            )
            print("FaultScriptTests:\n\(run.stdout)")
            #expect(run.status == 0, "\(run.output)")
            let data = try Data(contentsOf: report)
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let rows = try #require(json["rows"] as? [[String: Any]])
            let failures = try #require(json["failures"] as? [String])
            #expect(failures.isEmpty, "\(failures)")
            let scenarios = Set(rows.compactMap { $0["scenario"] as? String })
            #expect(
                scenarios == ["baseline", "loss", "latency", "partition", "linkdown", "restart", "skew", "diskfull"],
                "every scenario ran: \(scenarios.sorted())"
            )
            for row in rows {
                let outcomes = row["outcomes"] as? [String: Int] ?? [:]
                #expect(outcomes["hang"] == nil, "no continuation hangs: \(row)")
                #expect(!outcomes.keys.contains { $0.hasPrefix("untyped") }, "every failure is typed: \(row)")
            }
        }
    }
}
