import Foundation
import Testing

/// Recipes, the example app in Python (issue 28 item 5), as the tests run it: its folder in the clone, its desktop and
/// service files filled in as scripts/install.sh fills them, the app under an X server of the test's own, what it
/// says it shows, and a bus that starts it by D-Bus activation. Shared by RecipesAppTests (the app alone) and
/// RecipesHandoffCLITests (two agents).
public enum RecipesFixtures {
    /// `Examples/Recipes` in the clone.
    public static let app = Requirement.packageRoot.appendingPathComponent("Examples/Recipes")
    /// Where the screenshots are kept after the tests, for a person to look at.
    public static let output = Requirement.packageRoot.appendingPathComponent(".build/test-output/Recipes")

    /// `template` with `@APP_DIR@` made the app's folder in the clone (as scripts/install.sh makes it the installed
    /// one), written as `folder/name`.
    public static func fill(_ template: String, into folder: URL, as name: String) throws -> URL {
        let text = try String(contentsOf: app.appendingPathComponent(template), encoding: .utf8)
        let file = folder.appendingPathComponent(name)
        try Data(text.replacingOccurrences(of: "@APP_DIR@", with: app.path).utf8).write(to: file)
        return file
    }
}

/// Recipes running as a person runs it, on `display` and the session bus at `bus`, its state lines in a file.
public final class RecipesProcess {
    public let process: Process
    public let states: URL

    private init(process: Process, states: URL) {
        self.process = process
        self.states = states
    }

    /// `launcher` runs it where the test wants it, as ``PrivateSessionBus``'s (`scripts/netns.sh exec PREFIX K`: inside
    /// host K's network namespace); it must exec the app, so that killing the process started here kills the app.
    public static func start(arguments: [String], display: String, bus: String, in folder: URL, launcher: [String] = []) async throws -> RecipesProcess {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let states = folder.appendingPathComponent("states.jsonl")
        let process = Process()
        // --quit-after: whatever happens to the test, the app ends.
        process.runs(
            RecipesFixtures.app.appendingPathComponent("recipes.py"), arguments + ["--state-file", states.path, "--quit-after", "50"], launcher: launcher)
        process.environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": folder.path,
            "DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": bus,
            // No accessibility bus: there is none to reach on a test's own session bus.
            "NO_AT_BRIDGE": "1", "GTK_A11Y": "none",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: try Self.created(folder.appendingPathComponent("stderr")))
        try process.run()
        return RecipesProcess(process: process, states: states)
    }

    public static func created(_ file: URL) throws -> URL {
        FileManager.default.createFile(atPath: file.path, contents: nil)
        return file
    }

    /// The first state line whose event is `event`, within `seconds` and while it runs.
    public func waitFor(_ event: String, seconds: Double = 20) async throws -> [String: Any] {
        try await RecipesStates(file: states).waitFor(event, seconds: seconds) { [process] in process.isRunning }
    }

    /// Ends it (SIGKILL: the test runner's threads block SIGTERM, and children inherit the mask), reaped.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// The state lines a Recipes writes (`--state-file`, `RECIPES_STATE_FILE`), a JSON object each.
public struct RecipesStates {
    public let file: URL

    public init(file: URL) { self.file = file }

    /// The first line whose event is `event`, within `seconds` (and while `running`); fails the test with the app's
    /// lines and errors (`stderr` beside the file) when none comes.
    public func waitFor(_ event: String, seconds: Double = 20, running: () -> Bool = { true }) async throws -> [String: Any] {
        let end = Date().addingTimeInterval(seconds)
        while true {
            let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["event"] as? String == event {
                    return object
                }
            }
            // The deadline is looked at after a look at the file, never straight after a sleep: a test kept off its
            // thread for longer than `seconds` (CI's parallel run kept both process threads busy for minutes) still
            // finds a line written meanwhile, where it once failed holding the line in its message.
            guard Date() < end, running() else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let errors = (try? String(contentsOf: file.deletingLastPathComponent().appendingPathComponent("stderr"), encoding: .utf8)) ?? ""
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        Issue.record("Recipes said no \(event) within \(seconds) s; its states: \(text); its errors: \(errors.suffix(2000))")
        throw CancellationError()
    }
}

/// Xvfb on a display number it chooses itself (`-displayfd`), with the X tools that look at it.
public final class XvfbDisplay {
    let server: Process
    /// Its name, for DISPLAY (":95").
    public let name: String

    public init(log: URL) throws {
        server = Process()
        server.executableURL = try Requirement.xvfb.executable()
        server.arguments = ["-displayfd", "1", "-screen", "0", "1024x768x24", "-nolisten", "tcp"]
        let number = Pipe()
        server.standardOutput = number
        server.standardError = try FileHandle(forWritingTo: try RecipesProcess.created(log))
        try server.run()
        // Xvfb writes the display's number once it accepts clients.
        let line = String(decoding: number.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let display = Int(line) else {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            try Requirement.xvfb.unusable("Xvfb did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        name = ":\(display)"
    }

    /// The titles of the windows on the display, as X has them (`xwininfo -root -tree`).
    public func windowTitles() throws -> String {
        let result = try DesktopFixtures.run(try Requirement.xwininfo.executable(), ["-display", name, "-root", "-tree"])
        try #require(result.status == 0, "xwininfo: \(result.output)")
        return result.output
    }

    /// The whole display as a PNG at `file` (ImageMagick's `import`), once GTK has drawn the window: the app says what
    /// it shows when the window is laid out, and on a loaded machine the first frame can come seconds later (a black
    /// screen is a PNG of a few hundred bytes), so it is taken again every half second for at most 10 s. Written
    /// beside `file` first and renamed, so two test runs at once each check their own picture and leave a whole one.
    public func screenshot(to file: URL) throws {
        let taking = file.deletingLastPathComponent().appendingPathComponent(".\(UUID().uuidString).png")
        defer { try? FileManager.default.removeItem(at: taking) }
        var bytes = Data()
        for _ in 0..<20 {
            Thread.sleep(forTimeInterval: 0.5)
            let result = try DesktopFixtures.run(try Requirement.imagemagick.executable(), ["-display", name, "-window", "root", taking.path])
            try #require(result.status == 0, "import: \(result.output)")
            bytes = try Data(contentsOf: taking)
            if bytes.count > 10_000 { break }
        }
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) && bytes.count > 10_000, "\(file.path): \(bytes.count) bytes, not a picture of a window")
        guard rename(taking.path, file.path) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path]) }
    }

    public func stop() {
        if server.isRunning { kill(server.processIdentifier, SIGKILL) }
        server.waitUntilExit()
    }
}

/// A session bus of the test's own, as ``PrivateSessionBus`` makes it, that starts the services whose files are in
/// `services` (D-Bus activation) with `environment` added to the daemon's own, which what it starts inherits.
public final class ActivatingSessionBus {
    public let address: String
    private let daemon: Process

    public init(in folder: URL, services: URL, environment: [String: String]) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let plain = try String(contentsOf: try PrivateSessionBus.configuration(in: folder), encoding: .utf8)
        let configuration = folder.appendingPathComponent("activating.conf")
        try Data(plain.replacingOccurrences(of: "</busconfig>", with: "  <servicedir>\(services.path)</servicedir>\n</busconfig>").utf8)
            .write(to: configuration)
        address = "unix:path=\(folder.path)/bus"
        daemon = Process()
        daemon.executableURL = try Requirement.dbusDaemon.executable()
        daemon.arguments = ["--config-file=\(configuration.path)", "--nofork"]
        var inherited = ProcessInfo.processInfo.environment.filter { $0.key == "PATH" }
        inherited["DBUS_SESSION_BUS_ADDRESS"] = address
        daemon.environment = inherited.merging(environment) { $1 }
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = try FileHandle(forWritingTo: try RecipesProcess.created(folder.appendingPathComponent("daemon.log")))
        try daemon.run()
        let socket = folder.appendingPathComponent("bus").path
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: socket) { usleep(10_000) }
        try #require(FileManager.default.fileExists(atPath: socket), "dbus-daemon did not listen at \(socket)")
    }

    /// Kills it; what it started ends with it (a GApplication exits when its bus closes).
    public func stop() {
        if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
        daemon.waitUntilExit()
    }
}
