import BatonRegistry
import BatonTestSupport
import Foundation
import Testing

/// Recipes, the example app in Python (issue 28 item 5): what holds without the agent's D-Bus interface. Its desktop
/// file is a Baton app to the registry, and the app itself, run as a person runs it under an X server of the test's
/// own, shows the recipe asked for, titled by its name, at the place asked for; a screenshot of the display is left in
/// `.build/test-output/RecipesAppTests/`.
@Suite("Recipes, the example app in Python (issue 28 item 5)", .serialized)
struct RecipesAppTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let app = packageRoot.appendingPathComponent("Examples/Recipes")
    /// Where the screenshots are kept after the test, for a person to look at.
    static let output = packageRoot.appendingPathComponent(".build/test-output/RecipesAppTests")

    /// `template` with `@APP_DIR@` made the app's folder in the clone, as scripts/install.sh makes it the installed one.
    static func fill(_ template: String, into folder: URL, as name: String) throws -> URL {
        let text = try String(contentsOf: app.appendingPathComponent(template), encoding: .utf8)
        let file = folder.appendingPathComponent(name)
        try Data(text.replacingOccurrences(of: "@APP_DIR@", with: app.path).utf8).write(to: file)
        return file
    }

    @Test("its desktop file is a Baton app with no warning: org.baton.Recipes of team BATONEXMPL, running recipes.py; the D-Bus service file starts that script")
    func desktopFileLoads() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-recipes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let desktop = try Self.fill("org.baton.Recipes.desktop.in", into: folder, as: "org.baton.Recipes.desktop")
        let record = try #require(try DesktopAppLoader.load(desktop, id: "org.baton.Recipes.desktop"))
        #expect(record.warnings.isEmpty, "\(record.warnings)")
        #expect(record.bundleIdentifier == "org.baton.Recipes" && record.kind == .desktopFile)
        #expect(record.teamIdentifier == "BATONEXMPL" && record.activityTypes == ["org.baton.recipes.viewing"])
        #expect(record.executableURL?.path == Self.app.appendingPathComponent("recipes.py").path)

        // D-Bus activation (issue 28 item 4) starts the same script, by the name the desktop file is known by.
        let service = try String(contentsOf: try Self.fill("org.baton.Recipes.service.in", into: folder, as: "service"), encoding: .utf8)
        #expect(service.contains("[D-BUS Service]\nName=org.baton.Recipes\n"), "\(service)")
        #expect(service.contains("Exec=\(Self.app.path)/recipes.py --gapplication-service"), "\(service)")
    }

    /// PROTOCOL §10's example, as the Python helper writes it, and every row of the table read back as what was written.
    static let mappingCheck = """
        import datetime, sys, uuid
        sys.path.insert(0, sys.argv[1])
        import baton_dbus as b
        opened = datetime.datetime(2025, 11, 26, 18, tzinfo=datetime.timezone.utc)
        example = {'recipe': 'Tarte Tatin', 'step': 3, 'scroll': 0.5, 'opened': opened, 'tags': {'apple'}}
        print(b.to_variant(example).print_(True))
        rows = {'s': 'x', 'x': -5, 't': 2**64 - 1, 'd': 0.5, 'b': True, 'ay': b'\\x89PNG', 'av': ['a', 2], 'dict': {'k': [{'y': 1.5}]},
                'date': opened, 'url': b.URL('https://example.com/r/42'), 'uuid': uuid.UUID('e621e1f8-c36c-495a-93fc-0c247a3e6e5f'),
                'set': {'apple'}, 'null': None}
        back = b.from_variant(b.to_variant(rows))
        print('same' if back == rows and all(type(back[k]) is type(v) for k, v in rows.items()) else f'differs: {back!r}')
        """

    @Test("baton_dbus writes PROTOCOL §10's example as the protocol prints it, and reads every row of the table back as it was (dates, URLs, UUIDs, sets, null as tagged structures)", .requires(.gtk4))
    func helperMapsAsPROTOCOLSays() throws {
        let result = try DesktopFixtures.run(try Requirement.gtk4.executable(), ["-c", Self.mappingCheck, Self.app.path])
        try #require(result.status == 0, "\(result.output)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "{'opened': <('date', <785872800.0>)>, 'recipe': <'Tarte Tatin'>, 'scroll': <0.5>, 'step': <int64 3>, 'tags': <('set', <[<'apple'>]>)>}", "\(result.output)")
        #expect(lines.last == "same", "\(result.output)")
    }

    @Test(
        "under Xvfb it shows its window titled by the first recipe, and a recipe asked for at the place asked for (X's window list, its own state line, a screenshot)",
        .requires(.gtk4, .xvfb, .dbusDaemon, .xwininfo, .imagemagick), .timeLimit(.minutes(1))
    )
    func showsItsWindow() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-recipes-x-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let display = try XvfbDisplay(log: root.appendingPathComponent("xvfb.log"))
        defer { display.stop() }
        // A bus of its own with no agent on it: the app runs unregistered, as it does before the agent starts.
        let bus = try PrivateSessionBus(in: root.appendingPathComponent("bus"))
        defer { bus.stop() }
        try FileManager.default.createDirectory(at: Self.output, withIntermediateDirectories: true)

        let first = try await RecipesProcess.start(arguments: [], display: display.name, bus: bus.address, in: root.appendingPathComponent("first"))
        let shown = try await first.waitFor("shown")
        #expect(shown["recipe"] as? String == "tarte-tatin" && shown["window_title"] as? String == "Tarte Tatin", "\(shown)")
        #expect(try display.windowTitles().contains("Tarte Tatin"))
        try display.screenshot(to: Self.output.appendingPathComponent("first-recipe.png"))
        first.stop()

        let asked = try await RecipesProcess.start(arguments: ["--recipe", "pho-ga", "--scroll", "0.5"], display: display.name, bus: bus.address, in: root.appendingPathComponent("asked"))
        defer { asked.stop() }
        let pho = try await asked.waitFor("shown")
        #expect(pho["recipe"] as? String == "pho-ga" && pho["window_title"] as? String == "Phở Gà", "\(pho)")
        let scroll = try #require(pho["scroll"] as? Double, "\(pho)")
        #expect(abs(scroll - 0.5) < 0.02, "scrolled to \(scroll), asked 0.5")
        #expect(try display.windowTitles().contains("Phở Gà"))
        try display.screenshot(to: Self.output.appendingPathComponent("pho-ga-half-way.png"))
    }
}

/// Recipes running as a person runs it, on `display` and the session bus at `bus`, its state lines in a file.
final class RecipesProcess {
    let process: Process
    let states: URL

    private init(process: Process, states: URL) {
        self.process = process
        self.states = states
    }

    static func start(arguments: [String], display: String, bus: String, in folder: URL) async throws -> RecipesProcess {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let states = folder.appendingPathComponent("states.jsonl")
        let process = Process()
        process.executableURL = RecipesAppTests.app.appendingPathComponent("recipes.py")
        // --quit-after: whatever happens to the test, the app ends.
        process.arguments = arguments + ["--state-file", states.path, "--quit-after", "50"]
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

    static func created(_ file: URL) throws -> URL {
        FileManager.default.createFile(atPath: file.path, contents: nil)
        return file
    }

    /// The first state line whose event is `event`, within `seconds` and while it runs.
    func waitFor(_ event: String, seconds: Double = 20) async throws -> [String: Any] {
        try await RecipesStates(file: states).waitFor(event, seconds: seconds) { [process] in process.isRunning }
    }

    /// Ends it (SIGKILL: the test runner's threads block SIGTERM, and children inherit the mask), reaped.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// The state lines a Recipes writes (`--state-file`, `RECIPES_STATE_FILE`), a JSON object each.
struct RecipesStates {
    let file: URL

    /// The first line whose event is `event`, within `seconds` (and while `running`); fails the test with the app's
    /// lines and errors (`stderr` beside the file) when none comes.
    func waitFor(_ event: String, seconds: Double = 20, running: () -> Bool = { true }) async throws -> [String: Any] {
        let end = Date().addingTimeInterval(seconds)
        repeat {
            let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["event"] as? String == event {
                    return object
                }
            }
            try await Task.sleep(for: .milliseconds(50))
        } while Date() < end && running()
        let errors = (try? String(contentsOf: file.deletingLastPathComponent().appendingPathComponent("stderr"), encoding: .utf8)) ?? ""
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        Issue.record("Recipes said no \(event) within \(seconds) s; its states: \(text); its errors: \(errors.suffix(2000))")
        throw CancellationError()
    }
}

/// Xvfb on a display number it chooses itself (`-displayfd`), with the X tools that look at it.
final class XvfbDisplay {
    let server: Process
    let name: String

    init(log: URL) throws {
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
    func windowTitles() throws -> String {
        let result = try DesktopFixtures.run(try Requirement.xwininfo.executable(), ["-display", name, "-root", "-tree"])
        try #require(result.status == 0, "xwininfo: \(result.output)")
        return result.output
    }

    /// The whole display as a PNG at `file` (ImageMagick's `import`), a second after the app said what it shows, so
    /// GTK has drawn it (its scrollbar fades in).
    func screenshot(to file: URL) throws {
        Thread.sleep(forTimeInterval: 1)
        let result = try DesktopFixtures.run(try Requirement.imagemagick.executable(), ["-display", name, "-window", "root", file.path])
        try #require(result.status == 0, "import: \(result.output)")
        let bytes = try Data(contentsOf: file)
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) && bytes.count > 10_000, "\(file.path): \(bytes.count) bytes, not a picture of a window")
    }

    func stop() {
        if server.isRunning { kill(server.processIdentifier, SIGKILL) }
        server.waitUntilExit()
    }
}
