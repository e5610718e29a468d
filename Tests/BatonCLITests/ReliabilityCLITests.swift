import BatonTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a process holds, as /proc shows it.
enum ProcessProbe {
    /// Open descriptors of `pid`.
    static func descriptors(_ pid: Int32) -> [String] {
        let folder = "/proc/\(pid)/fd"
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).compactMap { name in
            try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + name)
        }
    }

    /// Resident memory of `pid` in KiB.
    static func residentKiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Whether `pid` has ended: gone, or a zombie nobody has reaped yet (a container's first process may never).
    static func hasEnded(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        let state = stat.split(separator: ")").last?.split(separator: " ").first
        return state == "Z" || state == "X"
    }
}

/// A Unix stream socket connected to `path`, or nil.
func connectUnix(_ path: String) -> Int32? {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard connected == 0 else {
        close(fd)
        return nil
    }
    return fd
}

/// Whether the other end closed `fd` within `timeout` seconds (a read returns 0 or an error).
func peerCloses(_ fd: Int32, within timeout: Double) -> Bool {
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let end = Date().addingTimeInterval(timeout)
    while Date() < end {
        guard poll(&descriptor, 1, 100) >= 0 else { return true }
        if descriptor.revents != 0 {
            var byte: UInt8 = 0
            let count = read(fd, &byte, 1)
            if count <= 0 { return true }
        }
    }
    return false
}

@Suite("The agent runs for weeks (issue 10)", .serialized)
struct ReliabilityCLITests {
    /// Two paired agents syncing every 0.2 s.
    static func pairedWorld() throws -> HandoffWorld {
        let world = try HandoffWorld()
        for name in ["laptop", "desktop"] { try world.device(name) }
        try world.pair("laptop", "desktop")
        try world.agent("laptop", apps: try world.apps("laptop"), extra: ["--interval", "0.2"])
        try world.agent("desktop", peers: ["laptop"], apps: try world.apps("desktop"), extra: ["--interval", "0.2", "--launch-timeout", "2"])
        return world
    }

    @Test("item 1: two agents syncing every 0.2 s keep one connection between them and a flat descriptor count")
    func oneLinkPerPair() async throws {
        try await startingProcesses {
            let world = try Self.pairedWorld()
            let laptop = try #require(world.agents["laptop"]).process.processIdentifier
            let desktop = try #require(world.agents["desktop"]).process.processIdentifier
            #expect(try #require(world.agents["desktop"]).waitFor("synced") != nil)
            // Both sides have synced with each other (each dials the other) before the first sample.
            Thread.sleep(forTimeInterval: 1.5)
            let before = (ProcessProbe.descriptors(laptop).count, ProcessProbe.descriptors(desktop).count)
            // 25 sync rounds each way: the leak grew by two descriptors per round.
            Thread.sleep(forTimeInterval: 5)
            let after = (ProcessProbe.descriptors(laptop).count, ProcessProbe.descriptors(desktop).count)
            #expect(after.0 <= before.0 + 1 && after.1 <= before.1 + 1, "descriptors \(before) -> \(after)")
            let sockets = ProcessProbe.descriptors(desktop).filter { $0.hasPrefix("socket:") }.count
            #expect(sockets <= 8, "the desktop holds \(sockets) sockets: TCP listener, UDP, the app socket, one link")
        }
    }

    @Test("item 2: an agent with no descriptors left reports the launch as a typed failure and keeps running (C8)")
    func launchWithoutDescriptors() async throws {
        try await startingProcesses {
            let world = try Self.pairedWorld()
            let desktop = try #require(world.agents["desktop"])
            _ = try world.shopSnap(on: "laptop", ["list", "Milk"])
            #expect(try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list") })
            // Room for exactly one more descriptor: the command line's own connection. The app launched to continue
            // cannot be accepted.
            let pid = desktop.process.processIdentifier
            // Counted once it is steady: a descriptor open for a moment (a roster sync's session) would leave room for two.
            var open = ProcessProbe.descriptors(pid).count
            for _ in 0..<20 {
                Thread.sleep(forTimeInterval: 0.3)
                let now = ProcessProbe.descriptors(pid).count
                if now == open { break }
                open = now
            }
            let limited = try Baton.run(["--pid", "\(pid)", "--nofile=\(open + 1):\(open + 1)"], executable: URL(fileURLWithPath: "/usr/bin/prlimit"))
            try #require(limited.status == 0, "\(limited.output)")
            let continued = try Baton.run("continue", "--state", world.state("desktop"))
            #expect(continued.status != 0)
            #expect(continued.output.contains("[launchFailed]") || continued.output.contains("[peerGone]"), "\(continued.output)")
            #expect(desktop.process.isRunning, "the agent is still running: \(desktop.output.suffix(2_000))")
            _ = try Baton.run(["--pid", "\(pid)", "--nofile=1024:1024"], executable: URL(fileURLWithPath: "/usr/bin/prlimit"))
            #expect(try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list") }, "it serves again")
        }
    }

    @Test("item 4: a process that connects and then execs the app's binary, saying hello from a child, is refused", .requires(.python3))
    func forkExecImpostorIsRefused() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            try world.agent("laptop", apps: try world.sleepingApps())
            let socket = try String(contentsOfFile: world.state("laptop") + "/agent-socket", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let script = Baton.packageRoot.appendingPathComponent("Tests/BatonCLITests/Fixtures/impostor.py").path
            let attempt = try Baton.run([script, socket, "com.razeware.ShopSnap", "/bin/sleep"], executable: try Requirement.python3.executable())
            #expect(attempt.stdout.contains("refused notPermitted"), "\(attempt.output)")
            #expect(attempt.stdout.contains("when it connected"), "\(attempt.output)")
        }
    }

    @Test("item 4: a live app is not replaced by a second connection claiming its bundle")
    func liveAppIsNotReplaced() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            try world.agent("laptop", apps: try world.apps("laptop"))
            let first = try world.shopSnap(on: "laptop", ["list", "Milk"])
            let socket = try String(contentsOfFile: world.state("laptop") + "/agent-socket", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let second = try Background(world.shopsnap, ["list", "Stolen"], environment: ["BATON_AGENT_SOCKET": socket], log: world.root.appendingPathComponent("second.log"))
            world.background.append(second)
            #expect(second.waitForExit(timeout: 5))
            #expect(second.output.contains("[alreadyConnected]"), "\(second.output)")
            #expect(first.process.isRunning && !first.output.contains("refused"), "\(first.output)")
        }
    }

    @Test("item 6: clients that never say hello are capped, bounded to a small frame, and dropped after the deadline")
    func unauthenticatedClientsAreBounded() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            try world.agent("laptop", apps: try world.apps("laptop"))
            let agent = try #require(world.agents["laptop"]).process.processIdentifier
            let socket = try String(contentsOfFile: world.state("laptop") + "/agent-socket", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let rssBefore = ProcessProbe.residentKiB(agent)

            // A half frame announcing 4 MiB - 190 bytes: refused at its header, nothing buffered.
            let half = try #require(connectUnix(socket))
            var header = UInt32(4 << 20 - 190).bigEndian
            _ = withUnsafeBytes(of: &header) { write(half, $0.baseAddress, 4) }
            let filler = [UInt8](repeating: 0x41, count: 64 << 10)
            _ = filler.withUnsafeBytes { write(half, $0.baseAddress, $0.count) }
            #expect(peerCloses(half, within: 2), "a frame above the hello limit closes the connection at once")
            close(half)

            // 40 silent clients: at most 32 wait; the rest are closed at once; all are gone after the 5 s deadline.
            var silent: [Int32] = []
            for _ in 0..<40 { if let fd = connectUnix(socket) { silent.append(fd) } }
            let closedAtOnce = silent.filter { peerCloses($0, within: 0.5) }.count
            #expect(closedAtOnce >= 8, "\(closedAtOnce) of 40 closed at once")
            let closedLater = silent.filter { peerCloses($0, within: 6) }.count
            #expect(closedLater == silent.count, "every silent client is dropped after the hello deadline")
            for fd in silent { close(fd) }

            // A real client still gets in, and the agent holds no more memory than before (within 8 MiB).
            #expect(try world.nearby("laptop").status == 0)
            let rssAfter = ProcessProbe.residentKiB(agent)
            #expect(rssAfter - rssBefore < 8_192, "RSS \(rssBefore) KiB -> \(rssAfter) KiB")
        }
    }

    @Test("item 8: a damaged peers.plist is set aside and rebuilt; syncs go on, and no local path reaches the peer")
    func damagedPeerCacheIsRebuilt() async throws {
        try await startingProcesses {
            let world = try Self.pairedWorld()
            let desktop = try #require(world.agents["desktop"])
            let laptop = try #require(world.agents["laptop"])
            #expect(desktop.waitFor("synced") != nil)
            let peers = world.state("laptop") + "/peers.plist"
            try Data("bplist00 damaged beyond reading".utf8).write(to: URL(fileURLWithPath: peers))
            #expect(laptop.waitFor("was damaged: set aside", timeout: 5) != nil, "\(laptop.output)")
            #expect(eventually(timeout: 5) { FileManager.default.fileExists(atPath: peers + ".damaged") })
            Thread.sleep(forTimeInterval: 1)
            #expect(laptop.lines(containing: "was damaged").count == 1, "logged once")
            #expect(!desktop.output.contains(world.state("laptop")), "no path of the laptop's reaches the desktop: \(desktop.output)")
            #expect(!desktop.output.contains("stateCorrupt"), "\(desktop.output)")
        }
    }

    @Test("item 7: after bursts of member TLS connections the agent gives its memory back (scripts/idle-connections.py)", .requires(.python3))
    func memoryIsGivenBack() async throws {
        try await startingProcesses {
            let script = Baton.packageRoot.appendingPathComponent("scripts/idle-connections.py").path
            let folder = Baton.executable.deletingLastPathComponent().path
            let run = try Baton.run(
                [script, "--bin", folder, "--count", "400", "--rounds", "3", "--hold", "1", "--settle", "7", "--slack", "8"],
                executable: try Requirement.python3.executable()
            )
            #expect(run.status == 0, "\(run.output)")
            #expect(run.stdout.contains(": flat"), "\(run.output)")
        }
    }
}
