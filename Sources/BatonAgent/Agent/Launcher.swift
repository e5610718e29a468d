import BatonNotifications
import BatonRegistry
import CSystemd
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

// MARK: Starting an app (issue 28 item 4)

extension Launcher {
    /// How an app was started.
    enum Started: Sendable, Hashable {
        /// The session bus started it (D-Bus activation): it runs, and owns its name on the bus.
        case activated
        /// Its command was spawned here: the child `pid`; `note` says why when D-Bus activation was asked for and not
        /// used (the log shows it).
        case spawned(pid_t, note: String?)
        /// It could not be started, and why.
        case failed(String)
    }

    /// The argument vector that starts `app`: a desktop-file app's `Exec` line (``AppRecord/launchCommand``), else its
    /// executable alone; nil when it has neither.
    static func command(for app: AppRecord) -> [String]? {
        if let command = app.launchCommand, !command.isEmpty { return command }
        guard let executable = app.executableURL, FileManager.default.isExecutableFile(atPath: executable.path) else { return nil }
        return [executable.path]
    }

    /// Starts `app`: an app whose desktop file says `DBusActivatable=true` by the session bus at `busAddress`
    /// (`StartServiceByName`), falling back to its `Exec` line when the bus has no service for it (or there is no
    /// bus); any other by its command, with `environment`, no shell. Blocks while the bus starts the app (at most
    /// `timeoutMicroseconds`): call it off the event loop for an activatable app.
    static func start(_ app: AppRecord, environment: [String: String], busAddress: String?, timeoutMicroseconds: UInt64) -> Started {
        let id = app.bundleIdentifier
        var note: String?
        if app.isDBusActivatable {
            if let busAddress {
                switch activate(id, busAddress: busAddress, timeoutMicroseconds: timeoutMicroseconds) {
                case .success: return .activated
                case .failure(.noService(let why)): note = "the session bus has no service for \(id) (\(why)); launched by its Exec line instead"
                case .failure(.failed(let why)): return .failed("the session bus could not start \(id): \(why)")
                }
            } else {
                note = "no session bus to start \(id) by D-Bus activation; launched by its Exec line instead"
            }
        }
        guard let command = command(for: app), let program = command.first else {
            return .failed("\(id) is not running and has no executable to launch")
        }
        do {
            return .spawned(try spawn(program, arguments: Array(command.dropFirst()), environment: environment), note: note)
        } catch {
            return .failed((error as? BatonAgentError)?.message ?? "\(error)")
        }
    }

    /// Why the bus did not start a service.
    enum ActivationFailure: Error, Sendable, Hashable {
        /// The bus has no service file for the name (`org.freedesktop.DBus.Error.ServiceUnknown`).
        case noService(String)
        /// Anything else: no bus, the service's program failed, no answer in time.
        case failed(String)
    }

    /// Asks the session bus at `busAddress` to start the service `name` (`org.freedesktop.DBus.StartServiceByName(name,
    /// 0)`) on a connection of its own, closed after; returns once the service owns its name (or it already ran).
    static func activate(_ name: String, busAddress: String, timeoutMicroseconds: UInt64) -> Result<Void, ActivationFailure> {
        let bus: OpaquePointer
        do {
            bus = try SessionBus.open(busAddress, purpose: "starting apps by D-Bus activation")
        } catch {
            return .failure(.failed(error.message))
        }
        defer { baton_sd_bus_flush_close_unref(bus) }
        var message: OpaquePointer?
        var result = baton_sd_bus_message_new_method_call(
            bus, &message, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "StartServiceByName"
        )
        guard result >= 0, let message else { return .failure(.failed("cannot make the call (\(String(cString: strerror(-result))))")) }
        defer { baton_sd_bus_message_unref(message) }
        result = name.withCString { baton_sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
        var flags: UInt32 = 0
        if result >= 0 { result = baton_sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), &flags) }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { baton_sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        if result >= 0 { result = baton_sd_bus_call(bus, message, timeoutMicroseconds, &error, &reply) }
        if let reply { baton_sd_bus_message_unref(reply) }
        guard result < 0 else { return .success(()) }
        let errorName = error.name.map { String(cString: $0) }
        let why = [errorName, error.message.map { String(cString: $0) }].compactMap { $0 }.joined(separator: ": ")
        let described = why.isEmpty ? String(cString: strerror(-result)) : why
        return errorName == "org.freedesktop.DBus.Error.ServiceUnknown" ? .failure(.noService(described)) : .failure(.failed(described))
    }
}
