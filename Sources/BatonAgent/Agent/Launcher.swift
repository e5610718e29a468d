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

/// Starts programs (apps to continue into, the browser) with `posix_spawn` and reaps them, without a run loop
/// (ISSUE 10 item 2: `Foundation.Process` creates a CFRunLoop, which traps when no descriptor is left).
///
/// Running out of descriptors, memory or processes is a ``BatonAgentError`` `launchFailed` saying which, that the
/// continuation reports (C8). The child keeps the agent's standard input, output and error; every other
/// descriptor is closed in it, so an app never holds the agent's sockets.
enum Launcher {
    /// Starts `path` with `arguments` (after the program name) and `environment`; returns its process id.
    static func spawn(_ path: String, arguments: [String] = [], environment: [String: String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        guard posix_spawn_file_actions_init(&actions) == 0 else {
            throw BatonAgentError(.launchFailed, "cannot start \(path): \(describe(errno))")
        }
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Descriptors 3 and up stay with the agent (NIO opens its own close-on-exec; this covers everything else).
        if let closeFrom = closeFrom { _ = closeFrom(&actions, 3) }

        let argv = ([path] + arguments).map { strdup($0) }
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") }
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        guard !argv.contains(nil), !envp.contains(nil) else {
            throw BatonAgentError(.launchFailed, "cannot start \(path): \(describe(ENOMEM))")
        }
        var pid: pid_t = 0
        let result = (argv + [nil]).withUnsafeBufferPointer { argvBuffer in
            (envp + [nil]).withUnsafeBufferPointer { envpBuffer -> Int32 in
                guard let arguments = argvBuffer.baseAddress, let variables = envpBuffer.baseAddress else { return EINVAL }
                return posix_spawn(&pid, path, &actions, nil, arguments, variables)
            }
        }
        guard result == 0 else {
            throw BatonAgentError(.launchFailed, "cannot start \(path): \(describe(result))")
        }
        return pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// export; nil where the C library lacks it.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Whether child `pid` still runs; reaps it (no zombie is left) when it has ended.
    static func isRunning(_ pid: pid_t) -> Bool {
        ending(pid) == nil
    }

    /// How `pid` ended, as a person reads it ("exited with status 1", "was killed by signal 9"), reaping it; nil while
    /// it runs. A pid that is not (or no longer) a child of this process "ended".
    static func ending(_ pid: pid_t) -> String? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == 0 { return nil }
        guard result == pid else { return "ended" }
        let signal = status & 0x7f
        if signal == 0 { return "exited with status \((status >> 8) & 0xff)" }
        return "was killed by signal \(signal)"
    }

    /// The cause at the descriptor limit, as a continuation's `launchFailed` names it (issue 25 item 7).
    static let tooManyOpenFiles = "too many open files: the agent has no file descriptors left (raise `ulimit -n`, or look for a leak)"

    /// Whether this process is at its descriptor limit (or the system at its): opening `/dev/null` fails with
    /// EMFILE or ENFILE. Asked when a check that reads `/proc` fails, so the failure is not taken for an impostor.
    static func descriptorsExhausted() -> Bool {
        let probe = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard probe < 0 else {
            close(probe)
            return false
        }
        return errno == EMFILE || errno == ENFILE
    }

    /// What an errno from starting a process means to a person.
    static func describe(_ code: Int32) -> String {
        switch code {
        case EMFILE, ENFILE: tooManyOpenFiles
        case EAGAIN: "the user may not start more processes now (the process limit is reached)"
        case ENOMEM: "out of memory"
        case ENOENT: "the executable does not exist"
        case EACCES, EPERM: "the executable may not be run (check its permissions)"
        case ENOEXEC: "the file is not an executable this system can run"
        default: String(cString: strerror(code))
        }
    }
}
