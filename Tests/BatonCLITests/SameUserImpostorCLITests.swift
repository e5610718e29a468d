import BatonTestSupport
import Foundation
import Testing

/// Issue 25 item 8: a process of the same user may not speak for an app through a connection it shares with the app's
/// real binary (D1, D3: only the app gets its team's activities). What is still possible for such a process, and the
/// boundary that stops it, is in docs/ARCHITECTURE.md ("Who may speak for an app").
@Suite("Same-user impostor (issue 25 item 8)", .serialized)
struct SameUserImpostorCLITests {
    static let fixtures = Baton.packageRoot.appendingPathComponent("Tests/BatonCLITests/Fixtures")

    @Test(
        "issue 25 item 8: connect, hand the socket to a child, exec the real shopsnap: never welcomed as ShopSnap in 60 tries (D3)",
        .requires(.python3)
    )
    func forkExecLoopIsNeverWelcomed() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            // ShopSnap.app runs the real shopsnap binary here: the connecting process becomes exactly the app.
            try world.agent("laptop", apps: try world.apps("laptop"))
            let socket = try String(contentsOfFile: world.state("laptop") + "/agent-socket", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let tries = 60
            // Before the fix, 3 of 40 tries were welcomed here: those whose accept the agent reached after the exec.
            let attack = try Baton.run(
                [Self.fixtures.appendingPathComponent("same-user-impostor.py").path, socket, world.shopsnap.path, "com.razeware.ShopSnap", "\(tries)"],
                environment: ["BATON_AGENT_SOCKET": socket],
                executable: try Requirement.python3.executable()
            )
            let lines = attack.stdout.split(separator: "\n")
            #expect(lines.count == tries, "every try ended with the agent's answer: \(attack.output.suffix(2_000))")
            let welcomed = lines.filter { $0.hasPrefix("WELCOMED") }
            #expect(welcomed.isEmpty, "\(welcomed.count) of \(tries) welcomed: \(welcomed)")
            // Refused as not the app (or, on a machine too loaded to exec the app in time, dropped at the hello
            // deadline): never for a broken frame, never welcomed.
            let refusedAsImpostor = lines.filter {
                $0.contains("when it connected") || $0.contains("also held by process") || $0.contains("no longer holds the connection")
                    || $0.contains("has exited")
            }
            let dropped = lines.filter { $0.hasSuffix(" closed") || $0.contains(" error ") || $0.contains("hello within") || $0.hasSuffix(" no answer") }
            #expect(refusedAsImpostor.count + dropped.count == lines.count, "\(lines.filter { !refusedAsImpostor.contains($0) && !dropped.contains($0) })")
            #expect(refusedAsImpostor.count >= tries / 2, "\(refusedAsImpostor.count) of \(tries) refused as impostors: \(lines)")
        }
    }

    @Test(
        "issue 25 item 8: a process that holds a copy of the app's connection is not handed the state: the continuation fails, the app is not given it (C5, D3)",
        .requires(.python3)
    )
    func stolenConnectionGetsNoDeliver() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            for name in ["laptop", "desktop"] { try world.device(name) }
            try world.pair("laptop", "desktop")
            try world.agent("laptop", apps: try world.apps("laptop"))
            try world.agent("desktop", peers: ["laptop"], apps: try world.apps("desktop"))
            _ = try world.shopSnap(on: "laptop", ["list", "Milk", "Eggs"])
            #expect(try eventually(timeout: 10) { try world.nearby("desktop").stdout.contains("Shopping list") })
            // ShopSnap already runs on the desktop, welcomed; then another process takes copies of its sockets.
            let waiting = try world.shopSnap(on: "desktop", [])
            let thief = try Background(
                try Requirement.python3.executable(),
                [Self.fixtures.appendingPathComponent("steal-connection.py").path, "\(waiting.process.processIdentifier)"],
                log: world.root.appendingPathComponent("thief.log")
            )
            world.background.append(thief)
            let holding = try #require(thief.waitFor("holding"), "\(thief.output)")
            #expect(holding != "holding 0", "the thief holds the app's connection: \(holding)")

            let continued = try Baton.run("continue", "--state", world.state("desktop"))
            #expect(continued.status != 0, "\(continued.output)")
            #expect(continued.output.contains("[notPermitted]"), "\(continued.output)")
            let desktop = try #require(world.agents["desktop"])
            #expect(desktop.waitFor("is no longer the app that connected") != nil, "\(desktop.output.suffix(2_000))")
            #expect(!waiting.output.contains("continued list"), "\(waiting.output)")
        }
    }

    @Test("issue 25 item 8: an app's connection to its agent is close-on-exec, so a program the app starts does not inherit it")
    func appConnectionIsCloseOnExec() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            try world.agent("laptop", apps: try world.apps("laptop"))
            let app = try world.shopSnap(on: "laptop", ["list", "Milk"])
            let pid = app.process.processIdentifier
            let sockets = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").filter {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.hasPrefix("socket:") == true
            }
            // The app's own sockets are NIO's, non-blocking (O_NONBLOCK, 04000 in fdinfo's octal flags); a blocking
            // one came from the test runner as it started the app. Each of the app's must be close-on-exec (02000000).
            let flags = try sockets.compactMap { descriptor -> Int? in
                let info = try String(contentsOfFile: "/proc/\(pid)/fdinfo/\(descriptor)", encoding: .utf8)
                return info.split(separator: "\n").first { $0.hasPrefix("flags:") }.flatMap { Int($0.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) }
            }.filter { $0 & 0o4000 != 0 }
            #expect(!flags.isEmpty, "ShopSnap holds its connection to the agent")
            #expect(flags.allSatisfy { $0 & 0o2000000 != 0 }, "\(flags.map { String($0, radix: 8) })")
        }
    }
}
