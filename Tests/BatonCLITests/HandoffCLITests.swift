import Foundation
import Testing

/// Devices as separate processes on loopback: state folders, paired, each with its agent; and ShopSnap.
final class HandoffWorld {
    let root: URL
    var background: [Background] = []
    var agentPorts: [String: Int] = [:]
    var agents: [String: Background] = [:]
    let shopsnap: URL

    init() throws {
        root = try Baton.temporaryDirectory()
        shopsnap = Baton.executable.deletingLastPathComponent().appendingPathComponent("shopsnap")
    }

    deinit {
        for process in background.reversed() { process.stop() }
        try? FileManager.default.removeItem(at: root)
    }

    func state(_ name: String) -> String { root.appendingPathComponent(name).path }

    /// Stops `name`'s agent (SIGTERM: the broker fails whatever is still pending) and waits until every app it
    /// launched has ended too (ShopSnap exits when its agent goes away). After that nothing more can reach the log,
    /// so counting lines in it is exact: an event to wait for, not a pause.
    func stopAndDrain(_ name: String) -> Bool {
        guard let agent = agents[name] else { return false }
        let launched = agent.lines(containing: "launched ").compactMap { line -> pid_t? in
            guard let range = line.range(of: "(pid ") else { return nil }
            return pid_t(line[range.upperBound...].prefix { $0.isNumber })
        }
        agent.stop()
        return eventually(timeout: 30) { launched.allSatisfy(ProcessProbe.hasEnded) }
    }

    /// `name`'s state folder with an identity.
    func device(_ name: String) throws {
        let result = try Baton.run("init", "--name", name, "--state", state(name))
        #expect(result.status == 0, "\(result.output)")
    }

    /// `waiting` and `connecting` pair, both confirming.
    func pair(_ waiting: String, _ connecting: String) throws {
        let wait = try Background(baton: ["pair", "--host", "127.0.0.1", "--port", "0", "--yes", "--state", state(waiting)], log: root.appendingPathComponent("pair-\(connecting).log"))
        defer { wait.stop() }
        let line = try #require(wait.line { $0.contains("on port") })
        let port = try #require(line.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .punctuationCharacters)) }.first)
        let paired = try Baton.run("pair", "127.0.0.1:\(port)", "--yes", "--state", state(connecting))
        #expect(paired.status == 0, "\(paired.output)")
        #expect(wait.process.isRunning == false || wait.line { $0.contains("Paired") } != nil)
    }

    /// A folder of app bundles: ShopSnap (team RAZEWARE01), or an app of another team claiming the same types.
    func apps(_ name: String, otherTeam: Bool = false) throws -> String {
        let folder = root.appendingPathComponent("apps-\(name)")
        let bundle = folder.appendingPathComponent(otherTeam ? "Copycat.app" : "ShopSnap.app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        var info = try String(contentsOf: Baton.packageRoot.appendingPathComponent("Examples/ShopSnap.app/Info.plist"), encoding: .utf8)
        if otherTeam {
            info = info.replacingOccurrences(of: "RAZEWARE01", with: "COPYCAT999").replacingOccurrences(of: "com.razeware.ShopSnap", with: "com.copycat.Snap")
        }
        try Data(info.utf8).write(to: bundle.appendingPathComponent("Info.plist"))
        try FileManager.default.createSymbolicLink(at: bundle.appendingPathComponent("shopsnap"), withDestinationURL: shopsnap)
        return folder.path
    }

    /// A folder with a ShopSnap.app whose registered executable is `/bin/sleep`: the real shopsnap binary, or any
    /// other program, is then an impostor.
    func sleepingApps() throws -> String {
        let apps = root.appendingPathComponent("apps-sleep")
        let bundle = apps.appendingPathComponent("ShopSnap.app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Baton.packageRoot.appendingPathComponent("Examples/ShopSnap.app/Info.plist"), to: bundle.appendingPathComponent("Info.plist"))
        try FileManager.default.createSymbolicLink(at: bundle.appendingPathComponent("shopsnap"), withDestinationURL: URL(fileURLWithPath: "/bin/sleep"))
        return apps.path
    }

    /// Starts `name`'s agent on a free port (no multicast: tests stay on loopback), advertising to `peers`, with
    /// `environment` over the test's own (a session bus, or none: issue 16).
    func agent(_ name: String, peers: [String] = [], apps: String, extra: [String] = [], environment: [String: String] = [:]) throws {
        var arguments = ["agent", "--port", "0", "--host", "127.0.0.1", "--no-multicast", "--interval", "0.5", "--state", state(name), "--apps", apps]
        for peer in peers { arguments += ["--peer", "127.0.0.1:\(try #require(agentPorts[peer]))"] }
        let agent = try Background(Baton.executable, arguments + extra, environment: environment, log: root.appendingPathComponent("agent-\(name).log"))
        background.append(agent)
        let line = try #require(agent.waitFor("agent for"), "\(agent.output)")
        let port: Int = try #require(line.split(separator: ":").last.flatMap { Int(String($0.split(separator: ";").first ?? "")) })
        agentPorts[name] = port
        agents[name] = agent
        try #require(agent.waitFor("apps connect at") != nil)
    }

    /// ShopSnap on `name`, connected to its agent.
    func shopSnap(on name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Background {
        let socket = try String(contentsOfFile: state(name) + "/agent-socket", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let app = try Background(
            shopsnap,
            arguments,
            environment: environment.merging(["BATON_AGENT_SOCKET": socket]) { $1 },
            log: root.appendingPathComponent("shopsnap-\(name)-\(background.count).log")
        )
        background.append(app)
        try #require(app.waitFor("connected to") != nil, "\(app.output)")
        return app
    }

    func nearby(_ name: String) throws -> Baton.Result {
        try Baton.run("nearby", "--state", state(name))
    }
}

@Suite("Handoff between separate agent processes on loopback", .serialized)
struct HandoffCLITests {
    @Test("continue launches ShopSnap with the list (C3-C5, A8); another team's app never gets it (D3); an outsider sees nothing (C1)")
    func continueAcrossProcesses() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            for name in ["laptop", "desktop", "other", "outsider"] { try world.device(name) }
            try world.pair("laptop", "desktop")
            try world.pair("laptop", "other")
            try world.agent("laptop", apps: try world.apps("laptop"))
            try world.agent("desktop", peers: ["laptop"], apps: try world.apps("desktop"))
            try world.agent("other", peers: ["laptop"], apps: try world.apps("other", otherTeam: true))
            try world.agent("outsider", peers: ["laptop"], apps: try world.apps("outsider"))
            // The laptop advertises to the outsider too (a misconfigured --peer, say): it must not matter.
            world.agents["laptop"]?.stop()
            try world.agent("laptop", peers: ["desktop", "other", "outsider"], apps: try world.apps("laptop2"))

            let list = try world.shopSnap(on: "laptop", ["list", "Milk", "Eggs"])
            #expect(
                try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list (2 items)") },
                "\(world.agents.values.map(\.output).joined(separator: "\n"))"
            )
            let shown = try world.nearby("desktop").stdout
            #expect(shown.contains("laptop") && shown.contains("com.razeware.ShopSnap"), "\(shown)")

            let continued = try Baton.run("continue", "laptop", "--state", world.state("desktop"))
            #expect(continued.status == 0, "\(continued.output)")
            #expect(continued.stdout.contains("continued in com.razeware.ShopSnap"))
            let desktop = try #require(world.agents["desktop"])
            #expect(desktop.waitFor("shopsnap: continued list: Milk, Eggs") != nil, "the launched app restored the list: \(desktop.output)")
            #expect(desktop.lines(containing: "launched com.razeware.ShopSnap").count == 1)
            #expect(list.waitFor("was continued on another device") != nil, "A8 on the laptop")

            // D3: the other device of the account has only another team's app claiming the same type.
            let other = try #require(world.agents["other"])
            #expect(try eventually(timeout: 5) { try world.nearby("other").stdout.contains("(no app here)") })
            let refused = try Baton.run("continue", "--state", world.state("other"))
            #expect(refused.status != 0 && refused.output.contains("[noApp]"), "\(refused.output)")
            #expect(other.lines(containing: "launched").isEmpty, "the copycat app is never launched")

            // C1: the outsider received the same datagrams and can read none of them.
            #expect(try world.nearby("outsider").stdout == "Nothing nearby.\n")
            let outsider = try Baton.run("continue", "--state", world.state("outsider"))
            #expect(outsider.status != 0 && outsider.output.contains("[notFound]"))
        }
    }

    @Test("killing the originating agent mid-fetch gives exactly one didFail, with its reason, within the deadline (C5, C8)")
    func originatingAgentDies() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            for name in ["laptop", "desktop"] { try world.device(name) }
            try world.pair("laptop", "desktop")
            try world.agent("laptop", apps: try world.apps("laptop"), extra: ["--save-deadline", "5"])
            try world.agent("desktop", peers: ["laptop"], apps: try world.apps("desktop"))
            _ = try world.shopSnap(on: "laptop", ["list", "Milk"], environment: ["SHOPSNAP_SAVE_DELAY_MS": "4000"])
            #expect(try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list") })

            let continuing = try Background(Baton.executable, ["continue", "--state", world.state("desktop")], log: world.root.appendingPathComponent("continue.log"))
            world.background.append(continuing)
            let desktop = try #require(world.agents["desktop"])
            #expect(desktop.waitFor("shopsnap: will continue com.razeware.shopsnap.view") != nil, "\(desktop.output)")
            world.agents["laptop"]?.kill()
            #expect(continuing.waitForExit(timeout: 30), "the continuation ends, it does not hang")
            #expect(continuing.process.terminationStatus != 0)
            // peerGone, not timedOut: it ended when the session did, not at the 5 s save deadline (C8).
            #expect(continuing.output.contains("[peerGone]"), "\(continuing.output)")
            #expect(desktop.waitFor("shopsnap: failed to continue com.razeware.shopsnap.view") != nil)
            #expect(world.stopAndDrain("desktop"), "the desktop agent and the app it launched end")
            #expect(desktop.lines(containing: "shopsnap: failed to continue").count == 1, "exactly one didFail")
            #expect(desktop.lines(containing: "shopsnap: continued").isEmpty)
        }
    }

    @Test("a second continuation cancels the first with the cancelled error; each ends exactly once (C5, C6)")
    func secondContinuationCancelsFirst() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            for name in ["laptop", "desktop"] { try world.device(name) }
            try world.pair("laptop", "desktop")
            try world.agent("laptop", apps: try world.apps("laptop"), extra: ["--save-deadline", "5"])
            try world.agent("desktop", peers: ["laptop"], apps: try world.apps("desktop"))
            _ = try world.shopSnap(on: "laptop", ["list", "Milk", "Eggs"], environment: ["SHOPSNAP_SAVE_DELAY_MS": "800"])
            #expect(try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list") })

            let first = try Background(Baton.executable, ["continue", "--state", world.state("desktop")], log: world.root.appendingPathComponent("first.log"))
            world.background.append(first)
            let desktop = try #require(world.agents["desktop"])
            #expect(desktop.waitFor("shopsnap: will continue") != nil)
            let second = try Baton.run("continue", "--state", world.state("desktop"))
            #expect(second.status == 0, "\(second.output)")
            #expect(first.waitForExit(timeout: 5))
            #expect(first.process.terminationStatus != 0 && first.output.contains("[cancelled]"), "\(first.output)")
            #expect(desktop.waitFor("shopsnap: continued list: Milk, Eggs") != nil)
            #expect(world.stopAndDrain("desktop"), "the desktop agent and the app it launched end")
            let failures = desktop.lines(containing: "shopsnap: failed to continue")
            #expect(failures.count == 1 && failures[0].contains("[cancelled]"), "\(failures)")
            #expect(desktop.lines(containing: "shopsnap: will continue").count == 2)
            #expect(desktop.lines(containing: "shopsnap: continued list").count == 1)
        }
    }

    @Test("SIGTERM and SIGINT stop the agent through its service group: the goodbye goes out first, the socket goes (A9, issue 11 part 3)", arguments: [SIGTERM, SIGINT])
    func stopSignalSaysGoodbye(signal: Int32) async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            for name in ["laptop", "desktop"] { try world.device(name) }
            try world.pair("laptop", "desktop")
            try world.agent("laptop", apps: try world.apps("laptop"))
            try world.agent("desktop", peers: ["laptop"], apps: try world.apps("desktop"))
            _ = try world.shopSnap(on: "laptop", ["list", "Milk"])
            #expect(try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list") })
            let laptop = try #require(world.agents["laptop"])
            let desktop = try #require(world.agents["desktop"])
            let socket = try String(contentsOfFile: world.state("laptop") + "/agent-socket", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            laptop.signal(signal)
            #expect(laptop.waitForExit(timeout: 30), "it stops")
            #expect(laptop.process.terminationStatus == 0, "\(laptop.output)")
            #expect(laptop.output.contains("stopped"), "\(laptop.output)")
            #expect(!FileManager.default.fileExists(atPath: socket), "the app socket is removed")
            #expect(desktop.waitFor("withdrew its activity (goodbye") != nil, "the goodbye went out before the sockets closed: \(desktop.output)")
        }
    }

    @Test("`baton agent` becomes the lean baton-agent, same process (issue 11 part 8)")
    func agentIsLean() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            try world.agent("laptop", apps: try world.apps("laptop"))
            let agent = try #require(world.agents["laptop"])
            let pid = agent.process.processIdentifier
            let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
            #expect(executable.hasSuffix("/baton-agent"), "\(executable)")
            // Read to the end: /proc files have no size, and a reader that trusts stat stops early.
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(pid)/maps"))
            let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
            try handle.close()
            #expect(maps.contains("[stack]") && maps.contains("libFoundationEssentials.so"), "the whole map was read")
            // Its own modules import FoundationEssentials only; the full Foundation comes with GRDB, the search index's
            // SQLite library (issue 15; ARCHITECTURE, "A lean agent"), and the idle guard (scripts/idle.py) bounds memory.
        }
    }

    @Test("invalidate removes the activity from the other device's nearby list by its goodbye, not by expiry (A9)")
    func invalidateIsSeenAtOnce() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            for name in ["laptop", "desktop"] { try world.device(name) }
            try world.pair("laptop", "desktop")
            try world.agent("laptop", apps: try world.apps("laptop"))
            try world.agent("desktop", peers: ["laptop"], apps: try world.apps("desktop"))
            let list = try world.shopSnap(on: "laptop", ["list", "Milk"])
            let watch = try Background(Baton.executable, ["nearby", "--watch", "--json", "--state", world.state("desktop")], log: world.root.appendingPathComponent("watch.log"))
            world.background.append(watch)
            #expect(watch.waitFor("Shopping list") != nil, "\(watch.output)")
            let desktop = try #require(world.agents["desktop"])
            list.send("done")
            // The desktop hears the goodbye advert (its log says so) and the watcher is told the list is empty. How fast
            // is `baton bench handoff`'s business; here, that it is the goodbye and not the 5 s expiry that removes it.
            #expect(desktop.waitFor("withdrew its activity (goodbye") != nil, "\(desktop.output)")
            #expect(eventually { watch.output.split(separator: "\n").last == "[]" }, "\(watch.output)")
            #expect(desktop.lines(containing: "expired").isEmpty, "\(desktop.output)")
            #expect(try world.nearby("desktop").stdout == "Nothing nearby.\n")
        }
    }

    @Test("an app may only speak for its own bundle: a process that is not the registered executable is refused (part 6)")
    func impostorIsRefused() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            // ShopSnap.app's registered executable is /bin/sleep here, so the real shopsnap binary is an impostor.
            try world.agent("laptop", apps: try world.sleepingApps())
            let socket = try String(contentsOfFile: world.state("laptop") + "/agent-socket", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let impostor = try Background(world.shopsnap, ["list", "Stolen"], environment: ["BATON_AGENT_SOCKET": socket], log: world.root.appendingPathComponent("impostor.log"))
            world.background.append(impostor)
            #expect(impostor.waitForExit(timeout: 5))
            #expect(impostor.output.contains("[notPermitted]") && impostor.output.contains("/bin/sleep"), "\(impostor.output)")
            let unknown = try Background(
                world.shopsnap, [], environment: ["BATON_AGENT_SOCKET": socket, "BATON_BUNDLE_IDENTIFIER": "com.example.Unregistered"],
                log: world.root.appendingPathComponent("unknown.log")
            )
            world.background.append(unknown)
            #expect(unknown.waitForExit(timeout: 5))
            #expect(unknown.output.contains("[unknownApp]"), "\(unknown.output)")
        }
    }
}
