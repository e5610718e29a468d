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

/// The folders the agent's socket lives in, made and checked so that no other user can stand in for the agent
/// (ISSUE 10 item 3).
///
/// Without `XDG_RUNTIME_DIR` the socket goes under `/tmp/baton-UID`, a name anyone can take first. So every folder
/// from the runtime folder down is created here with mode 0700 when missing, and refused when it is a symbolic
/// link, belongs to another user, or others may write to it: whoever can write to a folder on the path can replace
/// the socket in it.
enum RuntimeFolder {
    /// Makes `folder` (and the runtime folder above it, when `base` is given and missing) with mode 0700, and checks
    /// every folder from `base` (or `folder` alone) down.
    /// - Throws: ``BatonAgentError`` `notOwned` naming the folder and what to do, `stateUnwritable` when it cannot
    ///   be made.
    static func prepare(_ folder: String, below base: String?) throws {
        var chain: [String] = []
        var path = FilePaths.standardized(folder)
        let stop = base.map { FilePaths.standardized($0) }
        while true {
            chain.insert(path, at: 0)
            if path == stop || stop == nil || path == "/" || !path.hasPrefix(stop ?? "/") { break }
            path = FilePaths.parent(path)
        }
        for path in chain {
            if mkdir(path, 0o700) != 0, errno != EEXIST {
                throw BatonAgentError(.stateUnwritable, "cannot make the socket folder \(path): \(String(cString: strerror(errno)))")
            }
            try check(path)
        }
    }

    /// Refuses a folder that is a link, not a folder, another user's, or writable by others.
    static func check(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw BatonAgentError(.stateUnwritable, "cannot inspect the socket folder \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw BatonAgentError(.notOwned, "\(path) should be a folder of yours but is a link or a file; remove it, or set XDG_RUNTIME_DIR")
        }
        guard info.st_uid == getuid() else {
            throw BatonAgentError(
                .notOwned,
                "\(path) belongs to user \(info.st_uid), not to you (\(getuid())): another user may be posing as your agent; remove it, or set XDG_RUNTIME_DIR"
            )
        }
        guard info.st_mode & 0o022 == 0 else {
            throw BatonAgentError(
                .notOwned,
                "\(path) can be written by others (mode \(String(info.st_mode & 0o777, radix: 8))), so they could replace the agent's socket; run `chmod 700 \(path)`"
            )
        }
    }
}
