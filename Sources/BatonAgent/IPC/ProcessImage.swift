import BatonActivitySources
import BatonClient
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

/// What one process runs, read from `/proc` at once with its start time (issue 28 item 3): its executable, its
/// command line, its working folder and, for a Flatpak app, its Flatpak app id. The start time is read before and
/// after the rest, and a process whose start time changed in between (a recycled pid) gives nothing, so everything
/// here is one process's, as ``ProcessStamp`` makes it for the executable alone.
struct ProcessImage: Sendable, Hashable {
    var pid: Int32
    var startTime: UInt64
    /// `/proc/PID/exe` (nil when replaced, unreadable or gone).
    var executable: String?
    /// `/proc/PID/cmdline`, at most ``maximumCommandLineBytes`` of it.
    var arguments: [String]
    /// `/proc/PID/cwd`, against which a relative script path on the command line is resolved.
    var workingFolder: String?
    /// Whether the process is sandboxed by Flatpak, and as which app.
    var flatpak: Flatpak

    /// What `/proc/PID/root/.flatpak-info` says.
    enum Flatpak: Sendable, Hashable {
        /// No such file: the process is not in a Flatpak sandbox.
        case none
        /// The `[Application] name=` of the file.
        case app(String)
        /// The file is there but unreadable, too large or without an app name: the process is refused, never taken
        /// for an unsandboxed one.
        case unreadable(String)
    }

    /// The most bytes of a command line read: enough for an interpreter, its options and a script's path.
    static let maximumCommandLineBytes = 16 * 1024
    /// The most bytes of `.flatpak-info` read (Flatpak writes well under 4 KiB).
    static let maximumFlatpakInfoBytes = 64 * 1024

    /// Process `pid` now; nil when it is gone (or its pid was recycled while it was read).
    static func of(_ pid: Int32) -> ProcessImage? {
        guard let before = PeerCredentials.startTime(of: pid) else { return nil }
        let image = ProcessImage(
            pid: pid,
            startTime: before,
            executable: PeerCredentials.executable(of: pid),
            arguments: commandLine(of: pid),
            workingFolder: try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd"),
            flatpak: flatpak(of: pid)
        )
        return PeerCredentials.startTime(of: pid) == before ? image : nil
    }

    /// Why this process is not app `appID` whose registered program is `program`, or nil when it is. A Flatpak app is
    /// its Flatpak app id (its executable is then not checked: it lies inside the sandbox), for an app whose desktop
    /// file Flatpak exported (`flatpakID`, its `X-Flatpak`) only: a process of the same user can make a mount
    /// namespace with a `.flatpak-info` of its own, and must not pass for an app that is no Flatpak app that way. Any
    /// other process runs the program as ``AppProgram`` says.
    func refusal(as appID: String, program: AppProgram?, flatpakID: String?) -> String? {
        switch flatpak {
        case .app(let id):
            guard flatpakID == appID else { return "process \(pid) is in a Flatpak sandbox (as \(id)), and \(appID) is no Flatpak app (its desktop file has no X-Flatpak=\(appID))" }
            return id == appID ? nil : "process \(pid) is the Flatpak app \(id), not \(appID)"
        case .unreadable(let why):
            return "process \(pid) is in a Flatpak sandbox whose app id cannot be read (\(why))"
        case .none:
            break
        }
        guard let program else { return "\(appID) has no registered executable to check process \(pid) against" }
        switch program {
        case .executable(let path):
            return executable == path ? nil : "process \(pid) runs \(executable ?? "an unknown executable"), not \(appID)'s executable \(path)"
        case .script(let interpreter, let script):
            guard executable == interpreter else {
                return "process \(pid) runs \(executable ?? "an unknown executable"), not \(appID)'s interpreter \(interpreter)"
            }
            let running = scriptArgument
            return running == script ? nil : "process \(pid) runs \(interpreter) on \(running ?? "no script"), not on \(appID)'s script \(script)"
        }
    }

    /// The program an interpreter runs, as its command line names it: the first argument after the interpreter that is
    /// not an option (`--` ends the options; `-` alone is standard input, no file), resolved to its real path (a
    /// relative one from the process's working folder). Options that take a separate value (`python3 -W ignore
    /// app.py`) make the value look like the program: such a process is refused, never wrongly accepted for it.
    var scriptArgument: String? {
        var rest = arguments.dropFirst()
        while let argument = rest.first, argument.hasPrefix("-"), argument != "-" {
            rest = rest.dropFirst()
            if argument == "--" { break }
        }
        guard let argument = rest.first, !argument.isEmpty, argument != "-" else { return nil }
        if argument.hasPrefix("/") { return resolvedPath(URL(fileURLWithPath: argument)) }
        guard let workingFolder else { return nil }
        return resolvedPath(URL(fileURLWithPath: workingFolder + "/" + argument))
    }

    /// The arguments of process `pid` (NUL-separated in `/proc/PID/cmdline`), at most ``maximumCommandLineBytes``.
    static func commandLine(of pid: Int32) -> [String] {
        // Empty for a moment while the kernel execs the process (and for a kernel thread or a zombie).
        guard let bytes = readBounded("/proc/\(pid)/cmdline", limit: maximumCommandLineBytes), !bytes.isEmpty else { return [] }
        return bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast(bytes.last == 0 ? 1 : 0)
            .map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether `pid` is a Flatpak app, and which: `PROC/PID/root/.flatpak-info`, read bounded as a key file. `proc`
    /// is `/proc` but for tests, which give a folder laid out like it.
    static func flatpak(of pid: Int32, proc: String = "/proc") -> Flatpak {
        let path = "\(proc)/\(pid)/root/.flatpak-info"
        guard let bytes = readBounded(path, limit: maximumFlatpakInfoBytes) else {
            return errno == ENOENT ? .none : .unreadable("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard bytes.count <= maximumFlatpakInfoBytes else {
            return .unreadable("\(path) is larger than \(maximumFlatpakInfoBytes) bytes")
        }
        let limits = KeyFile.Limits(maximumBytes: maximumFlatpakInfoBytes, maximumLineLength: 4096, maximumGroups: 32, maximumKeys: 512)
        guard let file = try? KeyFile(bytes, limits: limits), let name = try? file.string("name", in: "Application"), !name.isEmpty else {
            return .unreadable("\(path) names no [Application] name")
        }
        return .app(name)
    }

    /// Up to `limit` bytes of the file at `path` (one more when it is longer, so that shows), or nil with `errno` set
    /// when it cannot be opened or is not a regular file (`/proc` files read as regular files of size 0).
    static func readBounded(_ path: String, limit: Int) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            errno = EINVAL
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress.map { $0 + count }, limit + 1 - count) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { break }
            count += got
        }
        return Array(bytes[..<count])
    }
}
