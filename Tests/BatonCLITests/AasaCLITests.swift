import BatonTestSupport
import Foundation
import Testing

/// Issue 14 part 2: `baton aasa fetch` and `baton aasa status` as a person runs them, against nginx on loopback
/// serving the real files of ../shared/realworld/aasa (scripts/aasa-test-server.sh), with `--resolve` and a test CA.
@Suite("baton aasa fetch and status (issue 14, E4)")
struct AasaCLITests {
    static let script = Baton.packageRoot.appendingPathComponent("scripts/aasa-test-server.sh").path
    static let bash = URL(fileURLWithPath: "/bin/bash")

    static func json(_ result: Baton.Result) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
    }

    @Test(
        "fetch prints what a file approves and caches it; refusals exit 1 with their code; status lists every domain; --cacert, BATON_CACERT",
        .requires(.nginx, .openssl, .python3)
    )
    func fetchAndStatus() async throws {
        try await startingProcesses {
            let folder = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: folder) }
            let server = folder.appendingPathComponent("server")
            try FileManager.default.createDirectory(at: server, withIntermediateDirectories: true)
            let started = try Baton.run([Self.script, "start", server.path, Baton.realWorld.appendingPathComponent("aasa").path], executable: Self.bash)
            if started.status == 77 {
                try Requirement.unusable([.nginx, .openssl, .python3], started.stderr.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            defer { _ = try? Baton.run([Self.script, "stop", server.path], executable: Self.bash) }
            let port = try #require(Int(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(started.output)")
            let ca = server.appendingPathComponent("ca.pem").path
            let state = folder.appendingPathComponent("state").path
            func fetch(_ domain: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> Baton.Result {
                try Baton.run(["aasa", "fetch", domain, "--resolve", "\(domain):\(port):127.0.0.1", "--state", state, "--timeout", "2"] + extra, environment: environment)
            }

            let clock = ContinuousClock()
            let before = clock.now
            let wiki = try fetch("wiki.example", ["--cacert", ca, "--json"])
            print("baton aasa fetch wiki.example against nginx, process included: \(clock.now - before)")
            #expect(wiki.status == 0, "\(wiki.output)")
            let approves = Self.json(wiki)["approves"] as? [String: [String]] ?? [:]
            #expect(approves["activitycontinuation"]?.contains("AKK7J2GV64.org.wikimedia.wikipedia") == true, "\(wiki.stdout)")
            #expect(approves["applinks"]?.contains("AKK7J2GV64.org.wikimedia.wikipedia") == true)

            let root = try fetch("root.example", ["--cacert", ca])
            #expect(root.status == 0 && root.stdout.contains("https://root.example/apple-app-site-association"), "\(root.output)")
            #expect(root.stdout.contains("activitycontinuation: AKK7J2GV64.org.wikimedia.wikipedia.developer"))

            let redirect = try fetch("redirect.example", ["--cacert", ca])
            #expect(redirect.status == 1 && redirect.stderr.contains("redirected:") && redirect.stderr.contains("Apple's rule"), "\(redirect.output)")
            let big = try fetch("big.example", ["--cacert", ca, "--json"])
            #expect(big.status == 1 && (Self.json(big)["error"] as? [String: String])?["code"] == "tooLarge", "\(big.output)")
            let badSignature = try fetch("badsig.example", ["--cacert", ca])
            #expect(badSignature.status == 1 && badSignature.stderr.contains("badSignature:"), "\(badSignature.output)")
            let untrusted = try fetch("signed.example")
            #expect(untrusted.status == 1 && untrusted.stderr.contains("untrusted:") && untrusted.stderr.contains("--cacert"), "\(untrusted.output)")
            let viaEnvironment = try fetch("signed.example", environment: ["BATON_CACERT": ca])
            #expect(viaEnvironment.status == 0 && viaEnvironment.stdout.contains("signed file"), "\(viaEnvironment.output)")

            let status = try Baton.run("aasa", "status", "--state", state, "--json")
            #expect(status.status == 0, "\(status.output)")
            let domains = Self.json(status)["domains"] as? [[String: Any]] ?? []
            let byName = Dictionary(uniqueKeysWithValues: domains.compactMap { entry in (entry["domain"] as? String).map { ($0, entry) } })
            #expect(Set(byName.keys) == ["wiki.example", "root.example", "redirect.example", "big.example", "badsig.example", "signed.example"])
            #expect(byName["wiki.example"]?["valid"] as? Bool == true)
            #expect(byName["wiki.example"]?["expiresAt"] as? String != nil && byName["wiki.example"]?["fetchedAt"] as? String != nil)
            #expect((byName["redirect.example"]?["lastError"] as? [String: String])?["code"] == "redirected")
            #expect(byName["signed.example"]?["signed"] as? Bool == true && byName["signed.example"]?["failures"] as? Int == 0)
            let text = try Baton.run("aasa", "status", "--state", state)
            #expect(text.stdout.contains("wiki.example: valid until"), "\(text.output)")
            #expect(text.stdout.contains("big.example: never fetched; last error tooLarge"), "\(text.output)")
        }
    }

    @Test("--help of aasa fetch, aasa status and agent explains --resolve and --cacert")
    func help() async throws {
        try await startingProcesses {
            let fetch = try Baton.run("aasa", "fetch", "--help")
            #expect(fetch.stdout.contains("--resolve") && fetch.stdout.contains("--cacert") && fetch.stdout.contains("redirect"))
            #expect(try Baton.run("aasa", "status", "--help").stdout.contains("expires"))
            let agent = try Baton.run("agent", "--help")
            #expect(agent.stdout.contains("--resolve") && agent.stdout.contains("BATON_CACERT"), "\(agent.stdout)")
        }
    }
}
