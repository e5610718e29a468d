import BatonRegistry
import BatonTestSupport
import Foundation
import Testing

/// Recipes, the example app in Python (issue 28 item 5): what holds without the agent's D-Bus interface. Its desktop
/// file is a Baton app to the registry, and the app itself, run as a person runs it under an X server of the test's
/// own, shows the recipe asked for, titled by its name, at the place asked for; a screenshot of the display is left in
/// `.build/test-output/Recipes/`.
@Suite("Recipes, the example app in Python (issue 28 item 5)", .serialized)
struct RecipesAppTests {
    static let app = RecipesFixtures.app
    static let output = RecipesFixtures.output

    @Test("its desktop file is a Baton app with no warning: org.baton.Recipes of team BATONEXMPL, running recipes.py; the D-Bus service file starts that script")
    func desktopFileLoads() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-recipes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let desktop = try RecipesFixtures.fill("org.baton.Recipes.desktop.in", into: folder, as: "org.baton.Recipes.desktop")
        let record = try #require(try DesktopAppLoader.load(desktop, id: "org.baton.Recipes.desktop"))
        #expect(record.warnings.isEmpty, "\(record.warnings)")
        #expect(record.bundleIdentifier == "org.baton.Recipes" && record.kind == .desktopFile)
        #expect(record.teamIdentifier == "BATONEXMPL" && record.activityTypes == ["org.baton.recipes.viewing"])
        #expect(record.executableURL?.path == Self.app.appendingPathComponent("recipes.py").path)

        // D-Bus activation (issue 28 item 4) starts the same script, by the name the desktop file is known by.
        let service = try String(contentsOf: try RecipesFixtures.fill("org.baton.Recipes.service.in", into: folder, as: "service"), encoding: .utf8)
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
        let result = try DesktopFixtures.run(try Requirement.gtk4.executable(), ["-B", "-c", Self.mappingCheck, Self.app.path])
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
