import Baton
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What `connect` says when no agent answers (issue 24 part 7): where it looked and why there (BATON_AGENT_SOCKET,
/// an `agent-socket` announcement, the default), how to reach an agent started with `--state`, and the agents that do
/// answer beside it; never that no agent runs, and on one line.
///
/// On real Unix sockets on purpose (issue 26 item 3): the error is about socket files (missing, or nobody listening),
/// which the in-memory app transport has none of.
@Suite("connect's error: where it looked, from which source, and how to reach an agent run with --state (issue 24)")
struct ConnectErrorTests {
    /// A home and a runtime folder of their own.
    static func folders() throws -> (home: String, runtime: String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-connect-\(UUID().uuidString.prefix(8))")
        let runtime = root.appendingPathComponent("run/baton")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("home"), withIntermediateDirectories: true)
        return (root.appendingPathComponent("home").path, root.appendingPathComponent("run").path)
    }

    /// A Unix socket at `path` that something listens on (another agent), open until `close`.
    static func listening(at path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(descriptor, 4) == 0, "cannot listen at \(path)")
        return descriptor
    }

    /// The error `body` throws, as a person reads it.
    static func failure(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Void) async -> (code: BatonClientError.Code?, text: String) {
        do {
            try await body()
            return (nil, "connected")
        } catch let error as BatonClientError {
            return (error.code, "\(error)")
        } catch {
            return (nil, "\(error)")
        }
    }

    @Test("nothing at the default socket while an agent run with --state listens beside it: both named, and how to reach it")
    func defaultSocketMissing() async throws {
        let (home, runtime) = try Self.folders()
        let environment = ["HOME": home, "XDG_RUNTIME_DIR": runtime]
        let other = runtime + "/baton/agent-0123456789abcdef.sock"
        let listener = try Self.listening(at: other)
        defer { close(listener) }
        let location = AgentSocket.locationForApps(environment: environment)
        #expect(location.path == runtime + "/baton/agent.sock" && location.source == .defaultPath)

        let (code, text) = await Self.failure { _ = try await AgentClient.connect(to: location, bundleIdentifier: "com.example.Counter", timeout: 1) }
        #expect(code == .peerUnreachable, "\(text)")
        #expect(text.contains("no agent answers at \(runtime)/baton/agent.sock (the default agent's socket; BATON_AGENT_SOCKET is not set)"), "\(text)")
        #expect(text.contains("there is no socket there"), "\(text)")
        #expect(text.contains("`baton agent --state DIR`, set BATON_AGENT_SOCKET=$(cat DIR/agent-socket)"), "\(text)")
        #expect(text.contains("other agents' sockets there: \(other)"), "\(text)")
        #expect(!text.contains("start one with"), "it does not claim that no agent runs: \(text)")
        #expect(!text.contains("\n"), "one line: \(text)")
    }

    @Test("BATON_AGENT_SOCKET naming a socket nobody listens on: said so, with where the path came from")
    func environmentSocketDead() async throws {
        let (home, runtime) = try Self.folders()
        let dead = runtime + "/baton/agent-dead.sock"
        close(try Self.listening(at: dead))
        let location = AgentSocket.locationForApps(environment: ["HOME": home, "XDG_RUNTIME_DIR": runtime, "BATON_AGENT_SOCKET": dead])
        #expect(location.path == dead && location.source == .environment)
        let (code, text) = await Self.failure { _ = try await AgentClient.connect(to: location, bundleIdentifier: nil, timeout: 1) }
        #expect(code == .peerUnreachable)
        #expect(text.contains("no agent answers at \(dead) (from BATON_AGENT_SOCKET): nothing listens on it"), "\(text)")
        #expect(!text.contains("other agents' sockets"), "a socket nobody listens on is not offered: \(text)")
    }

    @Test("the default agent's announcement (STATE/agent-socket) is where an app looks without BATON_AGENT_SOCKET")
    func announcedSocket() throws {
        let (home, runtime) = try Self.folders()
        let state = home + "/.local/share/baton"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try Data("/elsewhere/agent.sock\n".utf8).write(to: URL(fileURLWithPath: state + "/agent-socket"))
        let location = AgentSocket.locationForApps(environment: ["HOME": home, "XDG_RUNTIME_DIR": runtime])
        #expect(location.path == "/elsewhere/agent.sock")
        #expect(location.source == .announced(file: state + "/agent-socket"))
    }

    @Test("BatonApplication.connect(socketPath:) says the path was the app's own")
    @MainActor
    func givenPath() async throws {
        let (_, runtime) = try Self.folders()
        let (code, text) = await Self.failure {
            try await BatonApplication().connect(bundleIdentifier: "com.example.Counter", socketPath: runtime + "/baton/mine.sock")
        }
        #expect(code == .peerUnreachable)
        #expect(text.contains("(the socket path the app gave): there is no socket there"), "\(text)")
        #expect(!text.contains("\n"), "one line: \(text)")
    }
}
