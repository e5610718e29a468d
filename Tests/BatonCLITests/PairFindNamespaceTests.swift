import BatonTestSupport
import Foundation
import Testing

/// `baton pair --find` (issue 24): devices of one LAN find a waiting `baton pair` by its beacon on the adverts'
/// multicast groups, with no address typed in. Hosts in network namespaces (`scripts/netns.sh`); needs root,
/// skipped by the `.requires(.networkNamespaces)` trait, saying so, elsewhere.
@Suite("Pairing without an address: baton pair --find on a namespace LAN (issue 24)", .serialized, .requires(.networkNamespaces))
struct PairFindNamespaceTests {
    /// `init --name NAME` into a fresh state folder under `root`.
    static func device(_ name: String, in root: URL) throws -> String {
        let state = root.appendingPathComponent("state-\(name)").path
        let made = try Baton.run("init", "--name", name, "--state", state)
        guard made.status == 0 else { throw CommandFailure("init \(name): \(made.output)") }
        return state
    }

    static func code(_ text: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix("Pairing code:") }.map(String.init)
    }

    @Test("h1 and h3 wait and announce; h2 lists both beside its own agent, is told to choose, chooses h1 by number, and both rosters hold both")
    func findAndPair() async throws {
        try await startingProcesses {
            let started = Date()
            let world = try NamespaceWorld()
            defer { world.remove() }
            let lan = try NamespaceLAN(prefix: NamespaceLAN.prefix("pf"), hosts: 3)
            defer { lan.down() }
            let desktop = try Self.device("desktop", in: world.root)
            let laptop = try Self.device("laptop", in: world.root)
            let tablet = try Self.device("tablet", in: world.root)
            // Agents of another account hold h2's and h3's discovery port (47810): the finder binds beside h2's, and
            // h2's agent must go on hearing h3's adverts while it does.
            let account = try world.account(["server", "phone"])
            let agent = try world.agent(lan, 2, state: account[0])
            _ = try world.agent(lan, 3, state: account[1])

            func wait(_ host: Int, _ state: String) throws -> Background {
                let waiting = try lan.start(
                    host, [Baton.executable.path, "pair", "--yes", "--timeout", "60", "--state", state],
                    log: world.root.appendingPathComponent("pair-h\(host).log")
                )
                guard waiting.waitFor("Announcing") != nil else { throw CommandFailure("h\(host) did not announce: \(waiting.output)") }
                return waiting
            }
            let waiting = try wait(1, desktop)
            #expect(waiting.output.contains("on the other device run: baton pair --find"), "\(waiting.output)")
            #expect(waiting.output.contains("Announcing \"desktop\" on eth0"), "\(waiting.output)")
            let other = try wait(3, tablet)

            // Two wait: --yes alone does not pick one.
            let ambiguous = try lan.run(2, [Baton.executable.path, "pair", "--find", "--yes", "--state", laptop])
            #expect(ambiguous.status != 0 && ambiguous.output.contains("2 devices wait to pair; say which with --choose N"), "\(ambiguous.output)")
            let listed = ambiguous.stdout.split(separator: "\n").map(String.init).filter { $0.first?.isNumber == true }
            #expect(listed.count == 2, "\(ambiguous.output)")
            #expect(listed.first?.hasPrefix("1) desktop (10.77.0.1:47811") == true, "by name; the IPv4 source address first: \(listed)")
            #expect(listed.last?.hasPrefix("2) tablet (10.77.0.3:47811") == true, "\(listed)")
            #expect(listed.allSatisfy { $0.contains("[fe80::77:ff:fe00:") && $0.contains("%eth0]:47811") }, "and its link-local one: \(listed)")
            let number = try #require(listed.first { $0.contains("desktop") }?.split(separator: ")").first.map(String.init))

            // This time it listens for 6 s, and meanwhile h3's phone offers a list: h2's agent, bound to the same
            // port, must see it before the finder is done.
            let findStart = Date()
            let finder = try lan.start(
                2, [Baton.executable.path, "pair", "--find", "--find-seconds", "6", "--choose", number, "--yes", "--state", laptop],
                log: world.root.appendingPathComponent("find-h2.log")
            )
            #expect(finder.waitFor("Looking for devices") != nil, "\(finder.output)")
            let list = try world.shopsnapList(lan, 3, state: account[1], ["Milk"])
            let seen = try NamespaceWorld.time(timeout: 5) { try world.sees(lan, 2, state: account[0], device: "phone") }
            #expect(seen != nil, "h2's agent hears adverts while the finder holds the port too: \(agent.output)")
            #expect(!finder.output.contains("Found"), "seen while the finder still listened: \(finder.output)")
            lan.stop(list)

            #expect(finder.waitForExit(timeout: 20), "\(finder.output)")
            let elapsed = Date().timeIntervalSince(findStart)
            let found = finder.output
            #expect(finder.process.terminationStatus == 0, "\(found)")
            #expect(found.contains("Found 2 devices waiting to pair:"), "\(found)")
            #expect(found.contains("Connecting to 10.77.0.1:47811 to pair..."), "the beacon's source address, not anything inside it: \(found)")
            #expect(found.contains("Paired with desktop"), "\(found)")
            #expect(waiting.waitFor("Paired with laptop") != nil, "\(waiting.output)")
            #expect(Self.code(found) != nil && Self.code(found) == Self.code(waiting.output), "both show one code")
            #expect(waiting.waitForExit(timeout: 5), "the waiting side stops (and stops announcing) once paired")

            for state in [desktop, laptop] {
                let devices = try Baton.run("devices", "--state", state)
                #expect(devices.stdout.contains("2 active devices"), "\(devices.output)")
                #expect(devices.stdout.contains("desktop") && devices.stdout.contains("laptop"), "\(devices.output)")
            }
            #expect(agent.process.isRunning, "h2's agent kept running: \(agent.output)")
            lan.stop(other)
            print(
                "PairFindNamespaceTests[find]: h2's agent saw h3's advert \(String(format: "%.2f", seen ?? -1)) s after it was offered, the finder listening; "
                    + "find, pair and confirm \(String(format: "%.2f", elapsed)) s; test \(String(format: "%.1f", Date().timeIntervalSince(started))) s"
            )
        }
    }

    @Test("an IPv6-only LAN: the beacon comes by link-local multicast and the pairing session goes to fe80::...%eth0")
    func linkLocalOnly() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let lan = try NamespaceLAN(prefix: NamespaceLAN.prefix("p6"), hosts: 2, ipv6Only: true)
            defer { lan.down() }
            let desktop = try Self.device("desktop", in: root)
            let laptop = try Self.device("laptop", in: root)
            let waiting = try lan.start(
                1, [Baton.executable.path, "pair", "--yes", "--timeout", "30", "--state", desktop], log: root.appendingPathComponent("pair-h1.log")
            )
            #expect(waiting.waitFor("Announcing") != nil, "\(waiting.output)")
            let found = try lan.run(2, [Baton.executable.path, "pair", "--find", "--yes", "--state", laptop])
            #expect(found.status == 0, "\(found.output)")
            #expect(found.stdout.contains("1) desktop ([fe80::77:ff:fe00:1%eth0]:47811)"), "\(found.output)")
            #expect(found.stdout.contains("Paired with desktop"), "\(found.output)")
            #expect(waiting.waitFor("Paired with laptop") != nil, "\(waiting.output)")
        }
    }

    @Test("nothing waiting: --find says what to check; a loopback --host is not announced; two state folders on one host find each other; an interface that comes up is announced on; no multicast interface: it says so")
    func nothingFound() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let lan = try NamespaceLAN(prefix: NamespaceLAN.prefix("p0"), hosts: 2)
            defer { lan.down() }
            let laptop = try Self.device("laptop", in: root)
            let started = Date()
            let none = try lan.run(2, [Baton.executable.path, "pair", "--find", "--find-seconds", "1.5", "--yes", "--state", laptop])
            let took = Date().timeIntervalSince(started)
            #expect(none.status != 0, "\(none.output)")
            #expect(none.output.contains("no device waiting to pair was heard in 1.5 s"), "\(none.output)")
            #expect(none.output.contains("same network") && none.output.contains("UDP port 47810") && none.output.contains("baton pair HOST:PORT"), "\(none.output)")
            #expect(none.output.contains("[noDeviceFound]"), "\(none.output)")
            #expect(took < 6, "it listens for the time asked (took \(took) s)")

            // A waiting side that names a loopback address is not announced: nobody else could dial it.
            let local = try lan.start(
                1, [Baton.executable.path, "pair", "--host", "127.0.0.1", "--port", "0", "--yes", "--timeout", "10", "--state", laptop],
                log: root.appendingPathComponent("pair-lo.log")
            )
            #expect(local.waitFor("Waiting for a device") != nil, "\(local.output)")
            #expect(!local.output.contains("Announcing") && !local.output.contains("--find"), "\(local.output)")
            lan.stop(local)

            // Two state folders on one host: the beacon comes back to the host's own finder (multicast loop).
            let desktop = try Self.device("desktop", in: root)
            let waiting = try lan.start(
                1, [Baton.executable.path, "pair", "--yes", "--timeout", "20", "--state", desktop], log: root.appendingPathComponent("pair-h1.log")
            )
            #expect(waiting.waitFor("Announcing") != nil, "\(waiting.output)")
            let same = try lan.run(1, [Baton.executable.path, "pair", "--find", "--find-seconds", "1.5", "--yes", "--state", laptop])
            #expect(same.status == 0 && same.stdout.contains("1) desktop (10.77.0.1:47811") && same.stdout.contains("Paired with desktop"), "\(same.output)")

            // A network that comes up while it waits (Wi-Fi joined) is announced on from the next second.
            #expect(try lan.run(1, ["ip", "link", "set", "eth0", "down"]).status == 0)
            let tablet = try Self.device("tablet", in: root)
            let late = try lan.start(
                1, [Baton.executable.path, "pair", "--yes", "--timeout", "20", "--state", tablet], log: root.appendingPathComponent("pair-late.log")
            )
            #expect(late.waitFor("Not announcing yet") != nil, "\(late.output)")
            #expect(try lan.run(1, ["ip", "link", "set", "eth0", "up"]).status == 0)
            let phone = try Self.device("phone", in: root)
            let afterUp = try lan.run(2, [Baton.executable.path, "pair", "--find", "--yes", "--state", phone])
            #expect(afterUp.status == 0 && afterUp.stdout.contains("1) tablet (10.77.0.1:47811") && afterUp.stdout.contains("Paired with tablet"), "\(afterUp.output)")

            #expect(try lan.run(2, ["ip", "link", "set", "eth0", "down"]).status == 0)
            let cut = try lan.run(2, [Baton.executable.path, "pair", "--find", "--find-seconds", "1", "--state", laptop])
            #expect(cut.status != 0 && cut.output.contains("[multicastUnavailable]") && cut.output.contains("baton pair HOST:PORT"), "\(cut.output)")
        }
    }
}
