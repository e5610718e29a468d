import Foundation
import Testing

/// A session bus of the test's own: `dbus-daemon` with a configuration in the test's folder, service activation only
/// from the service folder a test gives.
/// Its socket is a path (never an abstract name), so whatever is given its address reaches it, from any namespace.
public final class PrivateSessionBus {
    public let folder: URL
    public let address: String
    private let daemon: Process

    /// The bus at `folder/bus`, started. `launcher` runs the daemon where the test wants it: the argument vector put
    /// before `dbus-daemon ...` (`scripts/netns.sh exec PREFIX K` starts it inside host K's network namespace); it must
    /// exec the daemon, so that killing the process started here kills the daemon. Empty: started here.
    /// `serviceFolder`: where the bus finds the D-Bus service files it starts services from (issue 28 item 4).
    /// `anyUser`: processes of every user may connect, not only this one's (issue 28 item 1: another user refused by
    /// the agent itself). `environment`: added to the daemon's own, which the services it starts inherit (an X display).
    public init(in folder: URL, launcher: [String] = [], serviceFolder: URL? = nil, anyUser: Bool = false, environment: [String: String] = [:]) throws {
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let configuration = try Self.configuration(in: folder, serviceFolder: serviceFolder, anyUser: anyUser)
        let executable = try Requirement.dbusDaemon.executable()
        let arguments = ["--config-file=\(configuration.path)", "--nofork"]
        daemon = Process()
        daemon.runs(executable, arguments, launcher: launcher)
        if !environment.isEmpty { daemon.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        address = "unix:path=\(folder.path)/bus"
        let socket = folder.appendingPathComponent("bus").path
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: socket) { usleep(10_000) }
        try #require(FileManager.default.fileExists(atPath: socket), "dbus-daemon did not listen at \(socket)")
    }

    /// Writes `folder/bus.conf`: a session bus listening at `folder/bus` (EXTERNAL authentication, everything allowed,
    /// service activation from `serviceFolder` alone, if given); returns it, for `dbus-daemon --config-file`.
    public static func configuration(in folder: URL, serviceFolder: URL? = nil, anyUser: Bool = false) throws -> URL {
        let configuration = folder.appendingPathComponent("bus.conf")
        try Data(
            """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(folder.path)/bus</listen>
              <auth>EXTERNAL</auth>\(serviceFolder.map { "\n  <servicedir>\($0.path)</servicedir>" } ?? "")
              <policy context="default">\(anyUser ? "<allow user=\"*\"/>" : "")<allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/></policy>
            </busconfig>
            """.utf8
        ).write(to: configuration)
        return configuration
    }

    /// Kills it (the test runner's threads block SIGTERM, and children inherit the mask: only SIGKILL is prompt).
    public func stop() {
        if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
        daemon.waitUntilExit()
    }

    deinit { stop() }
}

extension Process {
    /// Makes it run `executable` with `arguments`, put after `launcher` when there is one (`scripts/netns.sh exec
    /// PREFIX K`: inside host K's network namespace; it must exec the program, so that killing this process kills it).
    public func runs(_ executable: URL, _ arguments: [String], launcher: [String]) {
        if let first = launcher.first {
            executableURL = URL(fileURLWithPath: first)
            self.arguments = Array(launcher.dropFirst()) + [executable.path] + arguments
        } else {
            executableURL = executable
            self.arguments = arguments
        }
    }
}
