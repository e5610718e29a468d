import BatonTestSupport
import Foundation
import Testing

/// A throwaway LAN of Linux network namespaces built by `scripts/netns.sh` (read its header): hosts PREFIX-h1...hN
/// with 10.77.0.K/24 on eth0, joined by a bridge that floods multicast unless it was built with --block-multicast.
final class NamespaceLAN {
    static let script = Baton.packageRoot.appendingPathComponent("scripts/netns.sh")

    let prefix: String
    private var processes: [Background] = []

    /// A prefix for one test: `tag` plus this process id, so two test runs on one machine do not collide (1-6 chars).
    static func prefix(_ tag: String) -> String {
        tag + String(getpid() % 46_656, radix: 36)
    }

    /// Builds the LAN (tearing down an old one of the same prefix first); `ipv6Only` leaves IPv4 out, so hosts have
    /// only their link-local addresses fe80::77:ff:fe00:K on eth0.
    init(prefix: String, hosts: Int, blockMulticast: Bool = false, ipv6Only: Bool = false) throws {
        self.prefix = prefix
        let flags = (blockMulticast ? ["--block-multicast"] : []) + (ipv6Only ? ["--ipv6-only"] : [])
        let up = try Self.command(Self.script, ["up", prefix, "\(hosts)"] + flags)
        guard up.status == 0 else {
            down()
            throw CommandFailure("netns.sh up \(prefix) \(hosts) failed (\(up.status)): \(up.output)")
        }
    }

    /// Stops every process started here (politely, then not), then deletes the namespaces and whatever still runs there.
    func down() {
        processes.forEach { $0.signal(SIGTERM) }
        processes.forEach { $0.stop() }
        processes = []
        _ = try? Self.command(Self.script, ["down", prefix])
    }

    /// Runs `command` in host `host` to its end (at most 15 s), and returns what it printed.
    func run(_ host: Int, _ command: [String], environment: [String: String] = [:]) throws -> Baton.Result {
        try Self.command(Self.script, ["exec", prefix, "\(host)", "timeout", "15"] + command, environment: environment)
    }

    /// Starts `command` in host `host` in the background, its output collected in `log`.
    func start(_ host: Int, _ command: [String], environment: [String: String] = [:], log: URL) throws -> Background {
        let process = try Background(Self.script, ["exec", prefix, "\(host)"] + command, environment: environment, log: log)
        processes.append(process)
        return process
    }

    /// Stops one background process early (it stays on the list; stopping twice is harmless).
    func stop(_ process: Background) {
        process.stop()
    }

    /// The kernel's count of UDP datagrams delivered to sockets in host `host` (Udp InDatagrams of /proc/net/snmp).
    func udpDatagramsReceived(_ host: Int) throws -> Int? {
        try udpCounter(host, "InDatagrams")
    }

    /// One of host `host`'s UDP counters in /proc/net/snmp (`InDatagrams`, `OutDatagrams`, `SndbufErrors`, ...).
    func udpCounter(_ host: Int, _ name: Substring) throws -> Int? {
        let snmp = try run(host, ["cat", "/proc/net/snmp"]).stdout.split(separator: "\n").filter { $0.hasPrefix("Udp: ") }
        guard snmp.count >= 2 else { return nil }
        let names = snmp[0].split(separator: " ")
        let values = snmp[1].split(separator: " ")
        guard let column = names.firstIndex(of: name), column < values.count else { return nil }
        return Int(values[column])
    }

    /// Runs an executable to its end and returns its output.
    static func command(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> Baton.Result {
        try Baton.run(arguments, environment: environment, executable: executable)
    }
}

struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}


/// Devices, agents and the ShopSnap example on a namespace LAN: what every test here sets up.
final class NamespaceWorld {
    static let shopsnap = Baton.executable.deletingLastPathComponent().appendingPathComponent("shopsnap")
    static let bundle = "com.razeware.ShopSnap"

    let root: URL
    let apps: URL

    init() throws {
        root = try Baton.temporaryDirectory()
        apps = root.appendingPathComponent("apps")
        // The real example bundle, its executable a link to the built `shopsnap` (the agent checks the connecting
        // process's /proc/PID/exe against it, and launches it to continue).
        let bundle = apps.appendingPathComponent("ShopSnap.app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        let example = Baton.packageRoot.appendingPathComponent("Examples/ShopSnap.app")
        for file in ["Info.plist", "ShopSnap.entitlements"] {
            try FileManager.default.copyItem(at: example.appendingPathComponent(file), to: bundle.appendingPathComponent(file))
        }
        try FileManager.default.createSymbolicLink(at: bundle.appendingPathComponent("shopsnap"), withDestinationURL: Self.shopsnap)
    }

    func remove() {
        try? FileManager.default.removeItem(at: root)
    }

    func state(_ name: String) -> String { root.appendingPathComponent("state-\(name)").path }

    /// The runtime folder of host `host` (XDG_RUNTIME_DIR: the agent's Unix socket goes there).
    func runtime(_ host: Int) throws -> [String: String] {
        let folder = root.appendingPathComponent("run-h\(host)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return ["XDG_RUNTIME_DIR": folder.path]
    }

    /// Initialises one device per name and makes them one account holding one roster, all in the root namespace
    /// over loopback: the first device pairs with each other in turn, then its agent (on 127.0.0.1, no multicast)
    /// syncs the earlier ones so everyone knows everyone. Finally forgets every peer address, so the agents in the
    /// namespaces know nobody's address. Returns the state folders.
    func account(_ names: [String]) throws -> [String] {
        let states = names.map(state)
        for (name, state) in zip(names, states) {
            let made = try Baton.run("init", "--name", name, "--state", state)
            guard made.status == 0 else { throw CommandFailure("init \(name): \(made.output)") }
        }
        var background: [Background] = []
        defer { background.forEach { $0.stop() } }
        for (index, state) in states.enumerated().dropFirst() {
            let waiting = try Background(
                baton: ["pair", "--host", "127.0.0.1", "--port", "0", "--yes", "--timeout", "20", "--state", states[0]],
                log: root.appendingPathComponent("pair-\(index).log")
            )
            background.append(waiting)
            guard let line = waiting.line(where: { $0.contains("on port") }),
                let port = line.split(separator: " ").compactMap({ Int($0.trimmingCharacters(in: .punctuationCharacters)) }).first
            else { throw CommandFailure("pair did not wait: \(waiting.output)") }
            let paired = try Baton.run("pair", "127.0.0.1:\(port)", "--yes", "--state", state)
            guard paired.status == 0 else { throw CommandFailure("pair \(names[index]): \(paired.output)") }
            waiting.stop()
        }
        if states.count > 2 {
            let agent = try Background(
                baton: [
                    "agent", "--state", states[0], "--host", "127.0.0.1", "--port", "0", "--no-multicast", "--interval", "60",
                    "--socket", root.appendingPathComponent("setup.sock").path,
                ],
                log: root.appendingPathComponent("setup-agent.log")
            )
            background.append(agent)
            guard agent.line(where: { $0.contains("agent for") }) != nil,
                let text = FileManager.default.contents(atPath: states[0] + "/agent-port"),
                let port = Int(String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            else { throw CommandFailure("the setup agent did not start: \(agent.output)") }
            for state in states.dropFirst().dropLast() {
                let synced = try Baton.run("sync", "--peer", "127.0.0.1:\(port)", "--state", state)
                guard synced.status == 0 else { throw CommandFailure("sync: \(synced.output)") }
            }
            agent.stop()
        }
        for state in states {
            let devices = try Baton.run("devices", "--state", state)
            guard devices.stdout.contains("\(names.count) active devices") else { throw CommandFailure("\(state): \(devices.output)") }
            for file in ["peers.plist", "agent-port", "agent-socket"] {
                try? FileManager.default.removeItem(atPath: state + "/" + file)
            }
        }
        return states
    }

    /// Starts the agent of `state` in host `host` on its default address (`::`, IPv4 and IPv6) port 47810 with the
    /// test's apps, and waits until apps can connect (it says so, and names the socket in STATE/agent-socket).
    /// `environment` adds to the host's runtime folder (a session bus, XDG folders of the host's own).
    func agent(_ lan: NamespaceLAN, _ host: Int, state: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> Background {
        try? FileManager.default.removeItem(atPath: state + "/agent-socket")
        let agent = try lan.start(
            host,
            [Baton.executable.path, "agent", "--state", state, "--port", "47810", "--apps", apps.path] + extra,
            environment: try runtime(host).merging(environment) { $1 },
            log: root.appendingPathComponent("agent-h\(host)-\(UUID().uuidString.prefix(4)).log")
        )
        guard agent.line(where: { $0.contains("apps connect at") }) != nil else {
            throw CommandFailure("the agent in h\(host) did not start: \(agent.output)")
        }
        return agent
    }

    /// `shopsnap list ITEMS...` in host `host`, connected to the agent of `state`; waits until it offers the list.
    func shopsnapList(_ lan: NamespaceLAN, _ host: Int, state: String, _ items: [String]) throws -> Background {
        try shopsnap(lan, host, state: state, ["list"] + items, ready: "offering the list")
    }

    /// `shopsnap ARGUMENTS...` in host `host`, connected to the agent of `state`; waits until it says `ready`.
    func shopsnap(_ lan: NamespaceLAN, _ host: Int, state: String, _ arguments: [String], ready: String) throws -> Background {
        guard let text = FileManager.default.contents(atPath: state + "/agent-socket") else { throw CommandFailure("no agent-socket in \(state)") }
        let socket = String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let app = try lan.start(
            host,
            ["env", "BATON_AGENT_SOCKET=\(socket)", Self.shopsnap.path] + arguments,
            environment: try runtime(host),
            log: root.appendingPathComponent("shopsnap-h\(host)-\(UUID().uuidString.prefix(4)).log")
        )
        guard app.line(where: { $0.contains(ready) }) != nil else {
            throw CommandFailure("shopsnap in h\(host) did not say \"\(ready)\": \(app.output)")
        }
        return app
    }

    /// `baton nearby --json` for `state`, asked in host `host`: the items, or nil when the command failed.
    func nearby(_ lan: NamespaceLAN, _ host: Int, state: String) throws -> [[String: Any]]? {
        let result = try lan.run(host, [Baton.executable.path, "nearby", "--json", "--state", state], environment: try runtime(host))
        guard result.status == 0, let data = result.stdout.split(separator: "\n").last.map({ Data($0.utf8) }) else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
    }

    /// Whether `state`'s nearby list, asked in host `host`, is empty (false also when it could not be asked).
    func seesNothing(_ lan: NamespaceLAN, _ host: Int, state: String) throws -> Bool {
        try nearby(lan, host, state: state)?.isEmpty == true
    }

    /// Whether `state`'s nearby list, seen from host `host`, has `device`'s activity for ShopSnap.
    func sees(_ lan: NamespaceLAN, _ host: Int, state: String, device: String) throws -> Bool {
        try nearby(lan, host, state: state)?.contains { $0["deviceName"] as? String == device && $0["app"] as? String == Self.bundle } ?? false
    }

    /// `baton continue [DEVICE]` for `state` in host `host`, then expects both ends of a handoff of ShopSnap's list
    /// of Milk and Eggs: the agent there launched ShopSnap with the list, and the originating `list` heard it went.
    func expectHandoff(_ lan: NamespaceLAN, _ host: Int, state: String, device: String? = nil, agent: Background, list: Background) throws {
        let continued = try lan.run(host, [Baton.executable.path, "continue"] + (device.map { [$0] } ?? []) + ["--state", state], environment: runtime(host))
        #expect(continued.status == 0, "\(continued.output)")
        #expect(continued.stdout.contains("continued in \(Self.bundle)"), "\(continued.output)")
        // The agent launched ShopSnap, whose output is the agent's.
        #expect(agent.line(timeout: 5) { $0.contains("shopsnap: continued list: Milk, Eggs") } != nil, "\(agent.output)")
        #expect(list.line(timeout: 5) { $0.contains("was continued on another device") } != nil, "\(list.output)")
    }

    /// Polls until `condition` holds (at most `timeout`), returning the seconds it took, or nil.
    static func time(timeout: Double, _ condition: () throws -> Bool) rethrows -> Double? {
        let start = Date()
        return try eventually(timeout: timeout, condition) ? Date().timeIntervalSince(start) : nil
    }
}

/// Several hosts on one LAN, each in its own network namespace with its own agent (`scripts/netns.sh`). Needs root
/// (and iproute2, procps); skipped, saying so, where the machine cannot build namespaces.
@Suite("Multi-host LANs in network namespaces", .serialized, .requires(.networkNamespaces))
struct NamespaceTests {
    @Test("discovery crosses interfaces (C1, C2): three hosts on a bridge find each other by multicast alone")
    func multicastDiscovery() async throws {
        try await startingProcesses {
            try #require(FileManager.default.isExecutableFile(atPath: NamespaceWorld.shopsnap.path), "build the example first: swift build")
            let started = Date()
            let world = try NamespaceWorld()
            defer { world.remove() }
            let lan = try NamespaceLAN(prefix: NamespaceLAN.prefix("nm"), hosts: 3)
            defer { lan.down() }

            // One account, no addresses known to anyone, no --peer: only multicast can bring them together.
            let states = try world.account(["laptop", "desktop", "server"])
            let agents = try (1...3).map { try world.agent(lan, $0, state: states[$0 - 1]) }
            for agent in agents { #expect(agent.output.contains("multicast on port 47810"), "\(agent.output)") }
            let list = try world.shopsnapList(lan, 1, state: states[0], ["Milk", "Eggs"])

            let seen = try NamespaceWorld.time(timeout: 8) {
                try world.sees(lan, 2, state: states[1], device: "laptop") && world.sees(lan, 3, state: states[2], device: "laptop")
            }
            #expect(seen != nil, "h2 and h3 see laptop's list by multicast; agents:\n\(agents.map(\.output).joined(separator: "\n"))")
            guard seen != nil else { return }
            let item = try #require(world.nearby(lan, 2, state: states[1])?.first)
            #expect(item["title"] as? String == "Shopping list (2 items)", "h2 asked h1 (over TLS) for the title: \(item)")

            try world.expectHandoff(lan, 2, state: states[1], agent: agents[1], list: list)
            print("NamespaceTests[multicast]: h2 and h3 saw h1's list after \(String(format: "%.2f", seen ?? 0)) s; test \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
    }

    @Test("an IPv6-only LAN (C1, C2): link-local multicast alone, then a scoped link-local --peer, find and hand off")
    func ipv6LinkLocalDiscovery() async throws {
        try await startingProcesses {
            try #require(FileManager.default.isExecutableFile(atPath: NamespaceWorld.shopsnap.path), "build the example first: swift build")
            let started = Date()
            let world = try NamespaceWorld()
            defer { world.remove() }
            // No IPv4 at all: no address, no route. Only the IPv6 link-local group can carry adverts, and only a
            // scoped link-local address (fe80::77:ff:fe00:1%eth0) can carry the session back to the advertiser.
            let lan = try NamespaceLAN(prefix: NamespaceLAN.prefix("n6"), hosts: 2, ipv6Only: true)
            defer { lan.down() }
            let addresses = try lan.run(1, ["ip", "-o", "addr", "show", "dev", "eth0"]).stdout
            #expect(!addresses.contains("inet "), "h1 has no IPv4 address: \(addresses)")

            let states = try world.account(["laptop", "desktop"])
            let agents = try (1...2).map { try world.agent(lan, $0, state: states[$0 - 1]) }
            for agent in agents { #expect(agent.output.contains("multicast on port 47810"), "\(agent.output)") }
            let list = try world.shopsnapList(lan, 1, state: states[0], ["Milk", "Eggs"])

            let seen = try NamespaceWorld.time(timeout: 8) { try world.sees(lan, 2, state: states[1], device: "laptop") }
            #expect(seen != nil, "h2 sees laptop's list over IPv6 link-local; agents:\n\(agents.map(\.output).joined(separator: "\n"))")
            guard seen != nil else { return }
            let item = try #require(world.nearby(lan, 2, state: states[1])?.first)
            #expect(item["title"] as? String == "Shopping list (2 items)", "h2 asked h1 (TLS to fe80::...%eth0) for the title: \(item)")

            try world.expectHandoff(lan, 2, state: states[1], agent: agents[1], list: list)
            for process in [list] + agents { lan.stop(process) }

            // Unicast only, to a scoped link-local --peer: adverts and the session both go to fe80::...%eth0.
            let unicast = [
                try world.agent(lan, 2, state: states[1], ["--no-multicast", "--peer", "[fe80::77:ff:fe00:1%eth0]:47810"]),
                try world.agent(lan, 1, state: states[0], ["--no-multicast", "--peer", "[fe80::77:ff:fe00:2%eth0]:47810"]),
            ]
            let second = try world.shopsnapList(lan, 1, state: states[0], ["Milk", "Eggs"])
            let seenByUnicast = try NamespaceWorld.time(timeout: 8) { try world.sees(lan, 2, state: states[1], device: "laptop") }
            #expect(seenByUnicast != nil, "h2 sees laptop's list by link-local unicast; agents:\n\(unicast.map(\.output).joined(separator: "\n"))")
            guard seenByUnicast != nil else { return }
            try world.expectHandoff(lan, 2, state: states[1], agent: unicast[0], list: second)
            print("NamespaceTests[ipv6]: h2 saw h1's list after \(String(format: "%.2f", seen ?? 0)) s; test \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
    }

    @Test("with multicast blocked, nothing is found without --peer, and --peer still works")
    func blockedMulticastWithPeers() async throws {
        try await startingProcesses {
            try #require(FileManager.default.isExecutableFile(atPath: NamespaceWorld.shopsnap.path), "build the example first: swift build")
            let started = Date()
            let world = try NamespaceWorld()
            defer { world.remove() }
            let lan = try NamespaceLAN(prefix: NamespaceLAN.prefix("nb"), hosts: 3, blockMulticast: true)
            defer { lan.down() }
            let states = try world.account(["laptop", "desktop", "server"])

            // Without --peer the bridge drops every advert: nobody sees anything, and no UDP reaches h2 or h3 at all.
            var agents = try (1...3).map { try world.agent(lan, $0, state: states[$0 - 1]) }
            var list = try world.shopsnapList(lan, 1, state: states[0], ["Milk", "Eggs"])
            let leaked = try eventually(timeout: 2.5) {
                try !world.seesNothing(lan, 2, state: states[1]) || !world.seesNothing(lan, 3, state: states[2])
            }
            let h2 = try lan.run(2, [Baton.executable.path, "nearby", "--state", states[1]], environment: world.runtime(2)).output
            #expect(!leaked, "h2 and h3 saw something, or could not ask; h2: \(h2)")
            #expect(try lan.udpDatagramsReceived(2) == 0, "multicast blocked: no datagram reached h2")
            #expect(try lan.udpDatagramsReceived(3) == 0, "multicast blocked: no datagram reached h3")
            for process in [list] + agents { lan.stop(process) }

            // With --peer: unicast adverts and sessions. The receivers start first, so h1's first advert finds them.
            agents = [
                try world.agent(lan, 2, state: states[1], ["--peer", "10.77.0.1:47810"]),
                try world.agent(lan, 3, state: states[2], ["--peer", "10.77.0.1:47810"]),
                try world.agent(lan, 1, state: states[0], ["--peer", "10.77.0.2:47810", "--peer", "10.77.0.3:47810"]),
            ]
            list = try world.shopsnapList(lan, 1, state: states[0], ["Milk", "Eggs"])
            let seen = try NamespaceWorld.time(timeout: 8) {
                try world.sees(lan, 2, state: states[1], device: "laptop") && world.sees(lan, 3, state: states[2], device: "laptop")
            }
            #expect(seen != nil, "h2 and h3 see laptop's list by unicast; agents:\n\(agents.map(\.output).joined(separator: "\n"))")
            guard seen != nil else { return }

            try world.expectHandoff(lan, 3, state: states[2], device: "laptop", agent: agents[1], list: list)
            print("NamespaceTests[blocked]: with --peer h2 and h3 saw h1's list after \(String(format: "%.2f", seen ?? 0)) s; test \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
    }

    @Test("a device outside the account on the same LAN gets the adverts but cannot open them (C1)")
    func strangerSeesNothing() async throws {
        try await startingProcesses {
            try #require(FileManager.default.isExecutableFile(atPath: NamespaceWorld.shopsnap.path), "build the example first: swift build")
            let started = Date()
            let world = try NamespaceWorld()
            defer { world.remove() }
            let lan = try NamespaceLAN(prefix: NamespaceLAN.prefix("ns"), hosts: 3)
            defer { lan.down() }

            let states = try world.account(["laptop", "desktop"])
            let stranger = world.state("stranger")
            let made = try Baton.run("init", "--name", "stranger", "--state", stranger)
            #expect(made.status == 0, "\(made.output)")
            let agents = [
                try world.agent(lan, 1, state: states[0]), try world.agent(lan, 2, state: states[1]), try world.agent(lan, 3, state: stranger),
            ]
            _ = try world.shopsnapList(lan, 1, state: states[0], ["Milk", "Eggs"])

            let seen = try NamespaceWorld.time(timeout: 8) { try world.sees(lan, 2, state: states[1], device: "laptop") }
            #expect(seen != nil, "the member h2 sees laptop's list; agents:\n\(agents.map(\.output).joined(separator: "\n"))")
            let leaked = try eventually(timeout: 2.5) { try !world.seesNothing(lan, 3, state: stranger) }
            let h3 = try lan.run(3, [Baton.executable.path, "nearby", "--state", stranger], environment: world.runtime(3)).output
            #expect(!leaked, "the stranger sees nothing: \(h3)")
            // The adverts did reach the stranger's sockets (the same flood h2 gets); its agent could not open them.
            #expect(try (lan.udpDatagramsReceived(3) ?? 0) > 0, "adverts reached h3")
            let refused = try lan.run(3, [Baton.executable.path, "continue", "--state", stranger], environment: world.runtime(3))
            #expect(refused.status != 0, "nothing to continue for the stranger: \(refused.output)")
            print("NamespaceTests[stranger]: h2 saw h1's list after \(String(format: "%.2f", seen ?? 0)) s; test \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
    }

    @Test("a continuation stream between two hosts (F1-F3): ShopSnap's photo goes from h1 to the app launched on h2, whole")
    func photoOverStream() async throws {
        try await startingProcesses {
            try #require(FileManager.default.isExecutableFile(atPath: NamespaceWorld.shopsnap.path), "build the example first: swift build")
            let started = Date()
            let world = try NamespaceWorld()
            defer { world.remove() }
            let lan = try NamespaceLAN(prefix: NamespaceLAN.prefix("nf"), hosts: 2)
            defer { lan.down() }
            let states = try world.account(["laptop", "desktop"])
            let agents = try (1...2).map { try world.agent(lan, $0, state: states[$0 - 1]) }
            // 6 MiB: many windows' worth, so credit goes back and forth between the hosts many times.
            let photo = Data((0..<(6 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 11) })
            let file = world.root.appendingPathComponent("cheese.jpg")
            try photo.write(to: file)
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in photo { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            let edit = try world.shopsnap(lan, 1, state: states[0], ["edit", "Cheese", "--photo", file.path], ready: "editing: Cheese")
            let seen = try NamespaceWorld.time(timeout: 8) { try world.sees(lan, 2, state: states[1], device: "laptop") }
            #expect(seen != nil, "h2 sees laptop's edit; agents:\n\(agents.map(\.output).joined(separator: "\n"))")
            guard seen != nil else { return }
            let continued = try lan.run(2, [Baton.executable.path, "continue", "--state", states[1]], environment: world.runtime(2))
            #expect(continued.status == 0, "\(continued.output)")
            // The agent on h2 launched ShopSnap (its output is the agent's), which asked h1's ShopSnap for the photo.
            let received = agents[1].line(timeout: 15) { $0.contains("received the photo of “Cheese”") }
            #expect(received?.contains("\(photo.count) bytes") == true, "\(agents[1].output)")
            #expect(received?.contains("checksum \(String(hash, radix: 16))") == true, "\(agents[1].output)")
            #expect(edit.line(timeout: 5) { $0.contains("sent the photo of “Cheese”") } != nil, "\(edit.output)")
            print("NamespaceTests[stream]: \(received ?? "no photo"); test \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        }
    }
}
