import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a device's agent listens for apps (docs/PROTOCOL.md §7, "The socket"), and the owner check a client makes
/// before connecting.
public enum AgentSocket {
    /// The default state folder: `$XDG_DATA_HOME/baton`, else `~/.local/share/baton`.
    public static func defaultStateFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let dataHome = environment["XDG_DATA_HOME"], dataHome.hasPrefix("/") {
            return URL(fileURLWithPath: dataHome).appendingPathComponent("baton")
        }
        return URL(fileURLWithPath: environment["HOME"] ?? "/tmp").appendingPathComponent(".local/share/baton")
    }

    /// The runtime folder used when `XDG_RUNTIME_DIR` is unset: a name in `/tmp` that another user may have taken
    /// first, so the agent makes it itself and checks it.
    public static var fallbackRuntimeFolder: String { "/tmp/baton-\(getuid())" }

    /// The default socket of the agent whose state is in `stateFolder`: `$XDG_RUNTIME_DIR/baton/agent.sock` for the
    /// default state folder, and a name derived from the folder for any other (several devices on one machine).
    public static func defaultPath(stateFolder: URL, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let runtime = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? fallbackRuntimeFolder
        let folder = runtime + "/baton"
        if stateFolder.standardizedFileURL == defaultStateFolder(environment: environment).standardizedFileURL {
            return folder + "/agent.sock"
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in stateFolder.standardizedFileURL.path.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return folder + "/agent-" + String(hash, radix: 16) + ".sock"
    }

    /// The socket an app connects to: `BATON_AGENT_SOCKET` (set by the agent when it launches an app), else the
    /// socket the default agent announced in `~/.local/share/baton/agent-socket`, else the default agent's.
    public static func pathForApps(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        locationForApps(environment: environment).path
    }

    /// Where an app looks for its agent, and why there: what a failed `connect` tells the person (issue 24 part 7).
    public struct Location: Sendable, Hashable {
        /// How the path was found.
        public enum Source: Sendable, Hashable {
            /// Given by the app (`connect(socketPath:)`).
            case given
            /// From the `BATON_AGENT_SOCKET` environment variable (the agent sets it when it launches an app).
            case environment
            /// Announced by the default agent in this file (`STATE/agent-socket`, the default state folder's).
            case announced(file: String)
            /// The default agent's default socket: nothing else said where.
            case defaultPath
        }

        /// The socket.
        public var path: String
        /// How it was found.
        public var source: Source

        /// A location.
        public init(path: String, source: Source) {
            self.path = path
            self.source = source
        }

        /// Where the path came from, for a person: "(from BATON_AGENT_SOCKET)".
        public var origin: String {
            switch source {
            case .given: "(the socket path the app gave)"
            case .environment: "(from BATON_AGENT_SOCKET)"
            case .announced(let file): "(announced in \(file); BATON_AGENT_SOCKET is not set)"
            case .defaultPath: "(the default agent's socket; BATON_AGENT_SOCKET is not set)"
            }
        }

        /// Why nothing answered there and what to do: for an agent started with `--state DIR` (whose socket is
        /// elsewhere, and announced in `DIR/agent-socket`), or no agent at all. Never claims that none runs.
        public var advice: String {
            "for an agent started with `baton agent --state DIR`, set BATON_AGENT_SOCKET=$(cat DIR/agent-socket); "
                + "for the default one, start it: `baton agent` (or `systemctl --user start baton-agent`)"
        }
    }

    /// Where an app finds its agent (``pathForApps(environment:)``), with how.
    public static func locationForApps(environment: [String: String] = ProcessInfo.processInfo.environment) -> Location {
        if let path = environment["BATON_AGENT_SOCKET"], !path.isEmpty {
            return Location(path: path, source: .environment)
        }
        let state = defaultStateFolder(environment: environment)
        // The default agent started with `--socket` elsewhere says where in its state folder, as any agent does.
        let announcement = state.appendingPathComponent("agent-socket").path
        if let announced = FileManager.default.contents(atPath: announcement) {
            let path = String(decoding: announced, as: UTF8.self).trimmingWhitespace()
            if !path.isEmpty { return Location(path: path, source: .announced(file: announcement)) }
        }
        return Location(path: defaultPath(stateFolder: state, environment: environment), source: .defaultPath)
    }

    /// The other agents' sockets in the folder of `path` that something listens on (agents started with `--state` put
    /// theirs beside the default one; a socket left by an agent that ended is not named), sorted; at most `limit`.
    static func socketsBeside(_ path: String, limit: Int = 4) -> [String] {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
        var live: [String] = []
        for name in names.sorted() where name.hasSuffix(".sock") && live.count < limit {
            let candidate = folder + "/" + name
            var info = stat()
            guard candidate != path, lstat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK, info.st_uid == getuid() else { continue }
            if isListening(candidate) { live.append(candidate) }
        }
        return live
    }

    /// Whether a process accepts connections on the Unix socket at `path` (a connect that succeeds, closed at once).
    static func isListening(_ path: String) -> Bool {
        #if canImport(Glibc)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return result == 0
        #else
        return false
        #endif
    }

    /// Why a connection to a Unix socket at `path` failed, for a person: the socket is missing, or nothing listens.
    static func whyUnreachable(_ path: String) -> String {
        var info = stat()
        guard lstat(path, &info) == 0 else { return "there is no socket there" }
        if info.st_mode & S_IFMT == S_IFSOCK { return "nothing listens on it (an agent that ended without removing it?)" }
        return "the file there is not a socket"
    }

    /// Refuses a socket file that another user made (ISSUE 10 item 3): checked before connecting; the peer
    /// credentials after connecting are the decisive check.
    public static func checkOwner(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK, info.st_uid == getuid() else {
            throw BatonClientError(
                .notOwned,
                "\(path) is not a socket of yours (owner \(info.st_uid)): it is not your agent; remove it and start `baton agent`"
            )
        }
    }
}
