import BatonTestSupport
import Foundation
import Testing

/// Adverts survive failed sends (issue 25 item 1): a datagram a local firewall rejects (`sendmsg` → EPERM), or a link
/// that goes down for 3 s (ENETUNREACH, ENODEV), used to close the agent's UDP sockets for good, silently. Now the
/// sockets stay, the failure is logged once, and adverts reach the other device again within one advert interval.
/// Two hosts in network namespaces (`scripts/netns.sh`); the firewall rule lives in h1's namespace, never the
/// machine's own ruleset. Needs root and nftables, skipped by the `.requires` trait, saying so, elsewhere.
@Suite(
    "Adverts recover from failed sends: a firewall's EPERM, a link down for 3 s (issue 25)",
    .serialized,
    .requires(.networkNamespaces, .nftables)
)
struct AdvertRecoveryNamespaceTests {
    /// The advert interval the agents run with (the default, 1 s), and what a poll of another namespace may add.
    static let interval = 1.0
    static let margin = 1.0

    /// Two hosts of one account, agents on both, h1 offering a ShopSnap list that h2 lists: what each test starts from.
    struct Setup {
        let world: NamespaceWorld
        let lan: NamespaceLAN
        let states: [String]
        let agent: Background
        let list: Background
    }

    static func setUp(_ tag: String) throws -> Setup {
        let world = try NamespaceWorld()
        let lan: NamespaceLAN
        do { lan = try NamespaceLAN(prefix: NamespaceLAN.prefix(tag), hosts: 2) } catch {
            world.remove()
            throw error
        }
        let states = try world.account(["laptop", "desktop"])
        let agent = try world.agent(lan, 1, state: states[0])
        _ = try world.agent(lan, 2, state: states[1])
        let list = try world.shopsnapList(lan, 1, state: states[0], ["Milk"])
        guard try NamespaceWorld.time(timeout: 8, { try world.sees(lan, 2, state: states[1], device: "laptop") }) != nil
        else {
            throw CommandFailure("h2 never saw laptop's list: \(agent.output)")
        }
        return Setup(world: world, lan: lan, states: states, agent: agent, list: list)
    }

    /// The advert sockets the agent in `host` holds (`ss -uanp`, port 47810): the local address of each.
    static func sockets(_ lan: NamespaceLAN, _ host: Int) throws -> [String] {
        try lan.run(host, ["ss", "-uanpH"]).stdout.split(separator: "\n")
            .filter { $0.contains("((\"baton") }
            .compactMap {
                $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first.map(String.init)
            }
            .filter { $0.hasSuffix(":47810") }
            .sorted()
    }

    /// Seconds until h2's kernel delivers a UDP datagram it had not delivered when asked (an advert from h1: h2
    /// offers nothing, so nothing else arrives by UDP), polled every 20 ms, at most `timeout`; nil if none came.
    static func nextDatagram(_ lan: NamespaceLAN, timeout: Double) throws -> Double? {
        let before = try lan.udpDatagramsReceived(2) ?? 0
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            if try (lan.udpDatagramsReceived(2) ?? 0) > before { return Date().timeIntervalSince(start) }
            usleep(20_000)
        }
        return nil
    }

    /// What every test checks after the trouble: h2 gets adverts again within an interval, still lists laptop's
    /// list after the nearby time-to-live (5 s) has passed (so adverts go on), and h1's sockets are the ones it had.
    static func expectRecovered(_ setup: Setup, sockets before: [String], what: String) throws -> Double? {
        let resumed = try nextDatagram(setup.lan, timeout: 10)
        #expect(
            (resumed ?? .infinity) <= interval + margin,
            "\(what): adverts reach h2 again within an interval: \(String(describing: resumed)) s"
        )
        Thread.sleep(forTimeInterval: 6)
        #expect(
            try setup.world.sees(setup.lan, 2, state: setup.states[1], device: "laptop"),
            "\(what): h2 still lists laptop's list: \(setup.agent.output)"
        )
        #expect(try sockets(setup.lan, 1) == before, "\(what): h1's agent holds the same UDP sockets")
        return resumed
    }

    /// What h1's agent is doing, for a failure's message: the CPU it used over 2 s, its threads' states and where each
    /// waits in the kernel, and the offering app's output.
    static func whatTheAgentDoes(_ setup: Setup) throws -> String {
        let pid = setup.agent.process.processIdentifier
        func ticks() -> Int {
            // utime and stime, the 14th and 15th fields, counted after the name in parentheses.
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
            return fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : -1
        }
        let before = ticks()
        Thread.sleep(forTimeInterval: 2)
        let used = ticks() - before
        let threads = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []).sorted().map { task in
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8)) ?? ""
            let state = stat.split(separator: ")").last?.split(separator: " ").first.map(String.init) ?? "?"
            let wchan = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/wchan", encoding: .utf8)) ?? "?"
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            return "\(task) \(name) \(state) \(wchan)"
        }
        return "; agent \(pid) used \(used) clock ticks of CPU over 2 s; its threads: " + threads.joined(separator: ", ")
            + "; the list app: \(setup.list.output)"
    }

    @Test("a firewall rule rejects adverts for a moment (EPERM): the sockets stay, one warning, adverts resume")
    func firewallRejectsAnAdvert() async throws {
        try await startingProcesses {
            let setup = try Self.setUp("ar")
            defer {
                setup.lan.down()
                setup.world.remove()
            }
            let before = try Self.sockets(setup.lan, 1)
            #expect(before.count == 3, "unicast, IPv4 group, IPv6 group: \(before)")

            // In h1's namespace only: drop outgoing UDP to the discovery port (a drop on output is EPERM to sendmsg),
            // until it has dropped something, then remove the table.
            let add = try setup.lan.run(
                1,
                [
                    "nft",
                    "add table inet batontest; add chain inet batontest out { type filter hook output priority 0; };"
                        + " add rule inet batontest out udp dport 47810 counter drop",
                ]
            )
            try #require(add.status == 0, "\(add.output)")
            let dropped = try eventually(timeout: 5) {
                try setup.lan.run(1, ["nft", "list", "table", "inet", "batontest"]).stdout.contains(
                    /counter packets [1-9]/
                )
            }
            // Once, in CI, the rule dropped nothing in 5 s and h2 stopped listing the laptop: the agent had sent no
            // advert at all. What it was doing then is what would tell why.
            let stalled = dropped ? "" : try Self.whatTheAgentDoes(setup)
            _ = try setup.lan.run(1, ["nft", "delete", "table", "inet", "batontest"])
            #expect(dropped, "the rule dropped an advert\(stalled)")
            let resumed = try Self.expectRecovered(setup, sockets: before, what: "after EPERM")

            let output = setup.agent.output
            let failed = output.split(separator: "\n").filter { $0.contains("adverts: cannot send") }
            #expect(failed.count == 1, "one warning for the failed sends: \(output)")
            #expect(failed.first?.contains("Operation not permitted") == true, "it says why: \(failed)")
            #expect(
                output.split(separator: "\n").filter { $0.contains("adverts: sending again") }.count == 1,
                "and one line when it works again: \(output)"
            )
            #expect(!output.contains("socket closed"), "no socket closed: \(output)")
            print(
                "AdvertRecoveryNamespaceTests[EPERM]: adverts reached h2 again \(String(format: "%.2f", resumed ?? -1)) s after the rule went; logged: \(failed)"
            )
        }
    }

    @Test("h1's link is down for 3 s: the sockets stay, one warning, adverts reach h2 within an interval of link-up")
    func linkDownAndUp() async throws {
        try await startingProcesses {
            let setup = try Self.setUp("al")
            defer {
                setup.lan.down()
                setup.world.remove()
            }
            let before = try Self.sockets(setup.lan, 1)
            #expect(before.count == 3, "unicast, IPv4 group, IPv6 group: \(before)")

            #expect(try setup.lan.run(1, ["ip", "link", "set", "dev", "eth0", "down"]).status == 0)
            Thread.sleep(forTimeInterval: 3)
            // Down took the routes with it; bring them back with the link, as the network manager would (netns.sh's).
            let up = try setup.lan.run(
                1,
                [
                    "sh", "-c",
                    "ip link set dev eth0 up && ip route replace 224.0.0.0/4 dev eth0 && ip route replace default dev eth0",
                ]
            )
            #expect(up.status == 0, "\(up.output)")
            let resumed = try Self.expectRecovered(setup, sockets: before, what: "after link down/up")
            // The link took its IPv6 link-local address, so the agent left the group there; back, it joined again
            // (the IPv4 membership the kernel keeps across down and up).
            let igmp6 = try setup.lan.run(1, ["cat", "/proc/net/igmp6"]).stdout
            #expect(
                igmp6.split(separator: "\n").contains {
                    $0.contains("eth0") && $0.contains("ff020000000000000000007700110001")
                },
                "ff02::77:11:1 joined on eth0: \(igmp6)"
            )
            let igmp = try setup.lan.run(1, ["cat", "/proc/net/igmp"]).stdout
            #expect(igmp.contains("010B4DEF"), "239.77.11.1 joined on eth0: \(igmp)")

            let output = setup.agent.output
            let failed = output.split(separator: "\n").filter { $0.contains("adverts: cannot send") }
            #expect(failed.count == 1, "one warning for the failed sends: \(output)")
            #expect(
                output.split(separator: "\n").filter { $0.contains("adverts: sending again") }.count == 1,
                "and one line when it works again: \(output)"
            )
            #expect(!output.contains("socket closed"), "no socket closed: \(output)")
            #expect(!output.contains("cannot join"), "rejoined without complaint: \(output)")
            #expect(output.contains("network interfaces changed"), "the interface change was seen: \(output)")
            print(
                "AdvertRecoveryNamespaceTests[link]: adverts reached h2 again \(String(format: "%.2f", resumed ?? -1)) s after link-up; logged: \(failed)"
            )
        }
    }
}
