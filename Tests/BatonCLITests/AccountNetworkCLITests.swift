import BatonCore
import BatonProtocol
import BatonTestSupport
import Foundation
import Testing

func eventually(timeout: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let end = Date().addingTimeInterval(timeout)
    while Date() < end {
        if try condition() { return true }
        usleep(100_000)
    }
    return try condition()
}

@Suite("Three devices on loopback: pair, invite, converge, remove", .serialized)
struct AccountNetworkCLITests {
    @Test(
        "A pairs with B, B invites C, all converge; A removes C; C is refused everywhere and cannot read the new key's seals",
        .requires(.openssl)
    )
    func threeDevices() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            var background: [Background] = []
            defer {
                background.forEach { $0.stop() }
                try? FileManager.default.removeItem(at: root)
            }
            let states = ["a", "b", "c"].map { root.appendingPathComponent($0).path }
            for (name, state) in zip(["laptop", "desktop", "server"], states) {
                #expect(try Baton.run("init", "--name", name, "--state", state).status == 0)
            }

            // A waits to pair; B connects. Both must show the same code.
            let waiting = try Background(baton: ["pair", "--host", "127.0.0.1", "--port", "0", "--yes", "--state", states[0]], log: root.appendingPathComponent("pair-a.log"))
            background.append(waiting)
            let portLine = try #require(waiting.line { $0.contains("on port") })
            let pairPort = try #require(portLine.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .punctuationCharacters)) }.first)
            let paired = try Baton.run("pair", "127.0.0.1:\(pairPort)", "--yes", "--state", states[1])
            #expect(paired.status == 0, "\(paired.output)")
            let codeB = paired.stdout.split(separator: "\n").first { $0.hasPrefix("Pairing code:") }
            let codeA = waiting.line { $0.hasPrefix("Pairing code:") }
            #expect(codeA != nil && codeA == codeB.map(String.init))

            // B invites C (the headless machine joins with the token).
            let inviting = try Background(
                baton: ["invite", "--port", "0", "--address", "127.0.0.1", "--state", states[1]], log: root.appendingPathComponent("invite-b.log")
            )
            background.append(inviting)
            let token = try #require(inviting.line { $0.hasPrefix("baton1-") })
            let joined = try Baton.run("join", token, "--state", states[2])
            #expect(joined.stdout.contains("The account has 3 devices"), "\(joined.output)")
            let reused = try Baton.run("join", token, "--state", states[0])
            #expect(reused.status != 0, "a token works once (and the inviter stopped waiting)")

            // Agents; one sync each way tells them where the others listen, then they keep each other in step.
            var ports: [Int] = []
            for (index, state) in states.enumerated() {
                let agent = try Background(baton: ["agent", "--port", "0", "--interval", "0.3", "--no-multicast", "--state", state], log: root.appendingPathComponent("agent-\(index).log"))
                background.append(agent)
                let line = try #require(agent.line { $0.contains("agent for") })
                ports.append(try #require(line.split(separator: ":").last.flatMap { Int($0.split(separator: ";").first ?? "") }))
            }
            #expect(try Baton.run("sync", "--peer", "127.0.0.1:\(ports[1])", "--state", states[0]).status == 0)
            #expect(try Baton.run("sync", "--peer", "127.0.0.1:\(ports[1])", "--state", states[2]).status == 0)
            func roster(_ index: Int) throws -> Roster {
                try Roster(decoding: try Data(contentsOf: URL(fileURLWithPath: states[index]).appendingPathComponent("roster.plist")))
            }
            #expect(try eventually { try roster(0) == roster(1) && roster(1) == roster(2) }, "all three converge")
            #expect(try roster(0).activeMembers.count == 3)

            let devices = try Baton.run("devices", "--state", states[0])
            #expect(devices.stdout.contains("desktop  reachable at 127.0.0.1:\(ports[1]), last seen"), "\(devices.output)")

            // A removes C. The removal and the new key reach B; C has neither.
            #expect(try Baton.run("remove", "server", "--state", states[0]).status == 0)
            #expect(try eventually { try roster(1).revocations.count == 1 && roster(1) == roster(0) }, "B learns of the removal")
            let newKey = try roster(0).accountKey
            #expect(newKey.epoch == 2)
            for port in ports.prefix(2) {
                let refused = try Baton.run("sync", "--peer", "127.0.0.1:\(port)", "--state", states[2])
                #expect(refused.status != 0 && refused.stdout.contains("[peerRefused]"), "\(refused.output)")
            }
            #expect(try roster(2).accountKey.epoch == 1, "C never received the rotated key")
            let sealed = try Baton.debug("seal", "activity advert", "--state", states[0]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try Baton.debug("open", sealed, "--state", states[1]).stdout == "activity advert\n")
            let unreadable = try Baton.debug("open", sealed, "--state", states[2])
            #expect(unreadable.status != 0 && unreadable.stderr.contains("cannot open"))

            // A stranger with its own certificate gets nothing but a TLS failure from A's agent.
            let stranger = root.appendingPathComponent("stranger")
            try FileManager.default.createDirectory(at: stranger, withIntermediateDirectories: true)
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/bin/sh")
            openssl.currentDirectoryURL = stranger
            openssl.arguments = [
                "-c",
                """
                openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout k.pem -out c.pem -days 1 -subj /CN=stranger 2>/dev/null
                printf 'hello\\n' | timeout 10 openssl s_client -connect 127.0.0.1:\(ports[0]) -cert c.pem -key k.pem -tls1_3 -quiet > out.txt 2>&1
                echo "exit $?" >> out.txt
                """,
            ]
            try openssl.run()
            openssl.waitUntilExit()
            let transcript = try String(contentsOf: stranger.appendingPathComponent("out.txt"), encoding: .utf8)
            #expect(transcript.lowercased().contains("alert") || transcript.contains("exit 1"), "\(transcript)")
            #expect(!transcript.contains("bplist"), "no application data reaches a stranger")
            let afterStranger = try Baton.run("sync", "--peer", "127.0.0.1:\(ports[0])", "--state", states[1])
            #expect(afterStranger.status == 0, "A's agent still serves members, and B no longer dials C: \(afterStranger.output)")

            // No key material in any log.
            let logs = background.map(\.output).joined(separator: "\n") + paired.output + joined.output
            for state in states {
                let identity = try BinaryPropertyListDecoder.decode(try Data(contentsOf: URL(fileURLWithPath: state).appendingPathComponent("identity.plist")))
                let key = try #require(identity["key"]?.dataValue)
                #expect(!logs.contains(key.base64EncodedString()) && !logs.contains(hex(key)))
                #expect(!logs.contains(String(key.base64EncodedString().prefix(24))))
            }
            for secret in [newKey.key, try roster(2).accountKey.key] {
                #expect(!logs.contains(hex(secret)) && !logs.contains(Data(secret).base64EncodedString()))
            }
            #expect(!logs.contains("PRIVATE KEY"))
        }
    }

    @Test("a second agent on a port in use, or on an address not on this machine, stops at once saying which")
    func portInUse() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            var background: [Background] = []
            defer {
                background.forEach { $0.stop() }
                try? FileManager.default.removeItem(at: root)
            }
            let states = ["a", "b"].map { root.appendingPathComponent($0).path }
            for state in states { #expect(try Baton.run("init", "--state", state).status == 0) }
            let first = try Background(baton: ["agent", "--port", "0", "--no-multicast", "--state", states[0]], log: root.appendingPathComponent("a.log"))
            background.append(first)
            let line = try #require(first.line { $0.contains("agent for") })
            // The default address is :: (IPv4 and IPv6), shown in brackets; 0.0.0.0 only on a machine without IPv6.
            let host = line.contains(" on [::]:") ? "[::]" : "0.0.0.0"
            #expect(line.contains(" on \(host):"), "\(line)")
            let port = try #require(line.split(separator: ":").last.flatMap { Int($0.split(separator: ";").first ?? "") })

            let second = try Baton.run("agent", "--port", "\(port)", "--no-multicast", "--state", states[1])
            #expect(second.status == 1, "\(second.output)")
            #expect(second.stderr.contains("cannot listen on \(host):\(port): it is in use (is another agent running?) [addressInUse]"), "\(second.output)")
            let elsewhere = try Baton.run("agent", "--host", "192.0.2.1", "--port", "0", "--no-multicast", "--state", states[1])
            #expect(elsewhere.status == 1, "\(elsewhere.output)")
            #expect(elsewhere.stderr.contains("cannot listen on 192.0.2.1:0") && elsewhere.stderr.contains("[addressUnavailable]"), "\(elsewhere.output)")
        }
    }
}

func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
}
