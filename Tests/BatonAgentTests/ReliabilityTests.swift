@testable import BatonAgent
import BatonCore
import BatonTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Issue 10: runtime folder, launcher, peer cache", .serialized)
struct ReliabilityTests {
    static func folder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("baton-runtime-\(UUID().uuidString)").path
    }

    @Test("item 3: the runtime folder is made 0700 by the agent; a folder others may write, or a link, is refused")
    func runtimeFolder() throws {
        let base = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try RuntimeFolder.prepare(base + "/baton", below: base)
        for path in [base, base + "/baton"] {
            #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o700)
        }
        chmod(base, 0o777)
        let writable = #expect(throws: BatonAgentError.self) { try RuntimeFolder.prepare(base + "/baton", below: base) }
        #expect(writable?.code == .notOwned)
        #expect(writable?.message.contains("chmod 700") == true, "\(writable?.message ?? "")")

        let linked = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: linked) }
        try FileManager.default.createSymbolicLink(atPath: linked, withDestinationPath: "/tmp")
        let link = #expect(throws: BatonAgentError.self) { try RuntimeFolder.prepare(linked + "/baton", below: linked) }
        #expect(link?.code == .notOwned)
    }

    // Only root can make files as another user.
    @Test("item 3: a runtime folder another user made first is refused, and so is a socket another user listens on", .requires(.root, .python3))
    func anotherUsersFolder() async throws {
        let base = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        mkdir(base, 0o777)
        chown(base, 65_534, 65_534)
        let refused = #expect(throws: BatonAgentError.self) { try RuntimeFolder.prepare(base + "/baton", below: base) }
        #expect(refused?.code == .notOwned)
        #expect(refused?.message.contains("belongs to user 65534") == true, "\(refused?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: base + "/baton"), "nothing is made inside it")

        // An agent-like listener run by user 65534: clients refuse it before saying anything.
        let socketPath = base + "/agent.sock"
        let listener = Process()
        listener.executableURL = try Requirement.python3.executable()
        listener.arguments = [
            "-c",
            "import os,socket,time; os.setgid(65534); os.setuid(65534); s=socket.socket(socket.AF_UNIX); s.bind('\(socketPath)'); s.listen(); print('up', flush=True); import sys; sys.stdin.read()",
        ]
        let output = Pipe()
        let input = Pipe()
        listener.standardOutput = output
        listener.standardInput = input
        try listener.run()
        defer {
            try? input.fileHandleForWriting.close()
            listener.waitUntilExit()
        }
        _ = output.fileHandleForReading.availableData
        let client = await #expect(throws: BatonClientError.self) { _ = try await AgentClient.connect(path: socketPath, bundleIdentifier: nil, timeout: 2) }
        #expect(client?.code == .notOwned, "\(client?.message ?? "")")
    }

    @Test("item 2: starting a program that cannot run is a typed launchFailed error, not a crash")
    func launcherErrors() throws {
        let missing = #expect(throws: BatonAgentError.self) { try Launcher.spawn("/nonexistent/app", environment: [:]) }
        #expect(missing?.code == .launchFailed)
        #expect(missing?.message.contains("does not exist") == true)
        #expect(Launcher.describe(EMFILE).contains("no file descriptors left"))
        #expect(Launcher.describe(EAGAIN).contains("process limit"))

        // A real program starts, is seen running, and is reaped once it ends (no zombie).
        let pid = try Launcher.spawn("/bin/sh", arguments: ["-c", "exit 0"], environment: [:])
        var ended = false
        for _ in 0..<200 where !ended {
            ended = !Launcher.isRunning(pid)
            if !ended { usleep(10_000) }
        }
        #expect(ended)
        #expect(kill(pid, 0) != 0, "reaped: the pid is gone")
    }

    @Test("item 2: a launched program holds none of the agent's descriptors beyond standard input, output and error")
    func launcherClosesDescriptors() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let leaked = open("/dev/null", O_RDONLY)  // not close-on-exec
        defer { close(leaked) }
        let report = folder + "/fds"
        let pid = try Launcher.spawn("/bin/sh", arguments: ["-c", "ls /proc/self/fd > \(report)"], environment: [:])
        for _ in 0..<300 where Launcher.isRunning(pid) { usleep(10_000) }
        let listed = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n").compactMap { Int($0) }
        // 0-2, the redirection's descriptor and ls's own directory descriptor; never the agent's.
        #expect(!listed.contains(Int(leaked)) || leaked <= 4, "\(listed), agent descriptor \(leaked)")
    }

    @Test("item 8: a damaged peers.plist is set aside and rebuilt by the next recorded session")
    func damagedPeerCache() throws {
        let store = AccountStore(folder: URL(fileURLWithPath: Self.folder()))
        defer { try? FileManager.default.removeItem(at: store.folder) }
        let (identity, _) = try store.initialize(name: "laptop")
        try store.recordPeer(identity.id, address: "127.0.0.1:1")
        try Data("not a property list".utf8).write(to: store.peersURL)
        #expect(throws: BatonAgentError.self) { try store.peers() }
        #expect(try store.recordPeer(identity.id, address: "127.0.0.1:2") == true, "rebuilt")
        #expect(try store.peers()[identity.id]?.address == "127.0.0.1:2")
        #expect(FileManager.default.fileExists(atPath: store.folder.appendingPathComponent("peers.plist.damaged").path))
        #expect(try store.recordPeer(identity.id, address: "127.0.0.1:3") == false, "set aside once")
    }
}

@Suite("Issue 10 item 1: one link per device pair")
struct LinkChoiceTests {
    static let low = DeviceID(certificateDER: Data("a".utf8))
    static let high = DeviceID(certificateDER: Data("b".utf8))

    @Test("when both sides dial at once, both keep the same connection: the one the lower id dialled")
    func bothSidesAgree() {
        let (low, high) = Self.low < Self.high ? (Self.low, Self.high) : (Self.high, Self.low)
        // The low device's view: its own dial (new) against the high device's (in use), and the other way round.
        #expect(PeerLinks.prefersNew(dialedByMe: true, over: false, me: low, peer: high))
        #expect(!PeerLinks.prefersNew(dialedByMe: false, over: true, me: low, peer: high))
        // The high device's view: the low device's dial is the peer's.
        #expect(PeerLinks.prefersNew(dialedByMe: false, over: true, me: high, peer: low))
        #expect(!PeerLinks.prefersNew(dialedByMe: true, over: false, me: high, peer: low))
        // Two links dialled by the same side: the one in use stays, on both sides.
        for (me, peer) in [(low, high), (high, low)] {
            #expect(!PeerLinks.prefersNew(dialedByMe: true, over: true, me: me, peer: peer))
            #expect(!PeerLinks.prefersNew(dialedByMe: false, over: false, me: me, peer: peer))
        }
    }
}

/// Paths the agent handles as text (it links no `NSString`): the same answers as Foundation's path methods.
@Suite("File paths without Foundation")
struct FilePathsTests {
    @Test("standardized and parent match NSString's standardizingPath and deletingLastPathComponent")
    func matchesFoundation() {
        for path in ["/run/user/1000/./baton/../baton", "/a/b/", "/", "/a", "a/b", "a/../../b", "//tmp//baton-0/", "/.."] {
            #expect(FilePaths.standardized(path) == (path as NSString).standardizingPath, "\(path)")
        }
        for path in ["/a/b", "/a", "/run/user/1000/baton/agent.sock", "/"] {
            #expect(FilePaths.parent(path) == (path as NSString).deletingLastPathComponent, "\(path)")
        }
    }
}
