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
    /// default agent's.
    public static func pathForApps(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        environment["BATON_AGENT_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            ?? defaultPath(stateFolder: defaultStateFolder(environment: environment), environment: environment)
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
