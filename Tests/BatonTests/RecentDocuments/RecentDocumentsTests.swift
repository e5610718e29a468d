@testable import BatonAgent
import BatonEmbedded
import BatonRegistry
import BatonTestSupport
import Foundation
import Testing

/// Recent documents end to end (issue 27 item 2; B5, B6, C9): two agents on loopback, each with the synced folder
/// "sync" at a path of its own and an XDG data folder of its own, and a test application ("Baton Test Editor", a
/// desktop file whose Exec is a script recording its arguments) on the desktop.
@Suite("RecentDocuments: a document opened on one device is offered and opened on the other (issue 27 item 2)", .serialized)
struct RecentDocumentsTests {
    /// Two devices, their folders, and where the desktop's editor records what it was asked to open.
    struct World {
        let devices: LocalDevices
        let root: URL
        var laptopDataLater = false
        func data(_ device: String) -> URL {
            root.appendingPathComponent(device).appendingPathComponent(device == "laptop" && laptopDataLater ? "later/share" : "data")
        }
        func folder(_ device: String) -> URL { root.appendingPathComponent(device).appendingPathComponent("Sync-\(device)") }
        var recorded: URL { root.appendingPathComponent("desktop").appendingPathComponent("opened.txt") }

        /// With `editorOnDesktop` false the desktop has no "baton-test-editor" but a "baton-test-viewer" (recording as
        /// the editor would) that its mimeapps.list makes the default for text/plain.
        /// With `laptopDataLater`, the laptop's `$XDG_DATA_HOME` is `later/share`, which does not exist when its agent starts.
        static func start(editorOnDesktop: Bool = true, laptopDataLater: Bool = false) async throws -> World {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-recent-\(UUID().uuidString)")
            for device in ["laptop", "desktop"] {
                let base = root.appendingPathComponent(device)
                try FileManager.default.createDirectory(at: base.appendingPathComponent("Sync-\(device)"), withIntermediateDirectories: true)
                // The same application on both; it records its arguments.
                let (applications, script, record) = (base.appendingPathComponent("data/applications"), base.appendingPathComponent("editor.sh"), base.appendingPathComponent("opened.txt"))
                if device == "laptop" || editorOnDesktop {
                    try DesktopFixtures.installRecordingApplication(id: "baton-test-editor", name: "Baton Test Editor", arguments: "%f", in: applications, script: script, record: record)
                } else {
                    try DesktopFixtures.installRecordingApplication(id: "baton-test-viewer", name: "Baton Test Viewer", arguments: "--view %U", in: applications, script: script, record: record)
                    try Data("[Default Applications]\ntext/plain=missing.desktop;baton-test-viewer.desktop;\n".utf8).write(to: base.appendingPathComponent("mimeapps.list"))
                }
            }
            let devices = try await LocalDevices.start(names: ["laptop", "desktop"], apps: AppRegistry(apps: [])) { configuration in
                let base = root.appendingPathComponent(configuration.store.folder.lastPathComponent)
                var settings = RecentDocumentsSettings()
                settings.isEnabled = true
                let isLaptop = configuration.store.folder.lastPathComponent == "laptop"
                settings.dataHome = base.appendingPathComponent(isLaptop && laptopDataLater ? "later/share" : "data").path
                settings.home = base.path
                settings.applicationFolders = [base.appendingPathComponent("data/applications").path]
                settings.mimeAppsFiles = [base.appendingPathComponent("mimeapps.list").path]
                configuration.recentDocuments = settings
            }
            for (agent, device) in zip(devices.agents, ["laptop", "desktop"]) {
                try agent.configuration.store.addSyncedFolder(
                    SyncedFolder(id: "sync", path: root.appendingPathComponent(device).appendingPathComponent("Sync-\(device)").path)
                )
            }
            return World(devices: devices, root: root, laptopDataLater: laptopDataLater)
        }

        /// Waits up to `seconds` for the desktop to list an offer from the laptop; its title.
        func offeredTitle(within seconds: Double) async -> String? {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if let item = await devices.agents[1].nearbyItems(describe: true).first(where: { $0.title != nil }) { return item.title }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }

        /// Waits up to `seconds` for the desktop to list nothing from the laptop.
        func nothingOffered(within seconds: Double) async -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if await devices.agents[1].nearbyItems().isEmpty { return true }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return false
        }

        func stop() async {
            await devices.shutdown()
            try? FileManager.default.removeItem(at: root)
        }
    }

    /// An xbel such as GLib writes, with one bookmark.
    static func xbel(href: String, app: String = "baton-test-editor", exec: String = "'baton-test-editor %u'", modified: String = "2099-01-01T00:00:00Z") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <xbel version="1.0" xmlns:bookmark="http://www.freedesktop.org/standards/desktop-bookmarks" xmlns:mime="http://www.freedesktop.org/standards/shared-mime-info">
          <bookmark href="\(href)" added="\(modified)" modified="\(modified)" visited="\(modified)">
            <info><metadata owner="http://freedesktop.org"><mime:mime-type type="text/plain"/>
              <bookmark:applications><bookmark:application name="\(app)" exec="\(exec)" modified="\(modified)" count="1"/></bookmark:applications>
            </metadata></info>
          </bookmark>
        </xbel>
        """
    }

    /// Writes `text` as GLib does: a new file renamed over the old one.
    static func replace(_ file: URL, with text: Data) throws {
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".recently-used.xbel.tmp")
        try text.write(to: temporary)
        guard rename(temporary.path, file.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    @Test(
        "B5, B6, C9: a document GTK records on the laptop is offered on the desktop and opened there by its application at the desktop's path",
        .requires(.gtk, .xvfbRun), .timeLimit(.minutes(1))
    )
    func gtkDocumentContinued() async throws {
        let world = try await World.start()
        defer { Task { await world.stop() } }
        let name = "Tom & Jerry's report été.txt"
        for device in ["laptop", "desktop"] {
            try Data("hello\n".utf8).write(to: world.folder(device).appendingPathComponent(name))
        }
        let added = try DesktopFixtures.addRecentDocument(
            world.folder("laptop").appendingPathComponent(name),
            application: "baton-test-editor",
            environment: ["XDG_DATA_HOME": world.data("laptop").path, "HOME": world.root.appendingPathComponent("laptop").path]
        )
        #expect(added.status == 0, "GTK's RecentManager wrote recently-used.xbel: \(added.output)")
        // From GTK's write (the file's time) on: what the person would notice after opening the document.
        let xbel = world.data("laptop").appendingPathComponent("recently-used.xbel").path
        let written = (try? FileManager.default.attributesOfItem(atPath: xbel)[.modificationDate] as? Date) ?? Date()

        let title = await world.offeredTitle(within: 10)
        let visible = Date().timeIntervalSince(written)
        #expect(title == "\(name) — Baton Test Editor", "the desktop lists the document with its application's name")
        print("recent documents: xbel written on the laptop -> listed on the desktop in \(Int(visible * 1000)) ms")

        let continued = Date()
        let outcome = await world.devices.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil, "\(outcome)")
        #expect(outcome.app == RecentDocumentsApp.bundleIdentifier)
        let opened = await DesktopFixtures.recordedArguments(world.recorded)
        print("recent documents: continue on the desktop -> editor started with the document in \(Int(Date().timeIntervalSince(continued) * 1000)) ms")
        #expect(opened == world.folder("desktop").appendingPathComponent(name).path + "\n", "the editor was given the desktop's own path, as one argument")
    }

    @Test("issue 27 item 2: a data folder made after the agent started (a new account's ~/.local/share) is noticed: its first document is offered", .timeLimit(.minutes(1)))
    func dataFolderMadeLater() async throws {
        let world = try await World.start(laptopDataLater: true)
        defer { Task { await world.stop() } }
        try Data("x".utf8).write(to: world.folder("laptop").appendingPathComponent("late.txt"))
        #expect(await world.nothingOffered(within: 1))
        // Made as a program makes it: the folders first, then the file renamed into place.
        try FileManager.default.createDirectory(at: world.data("laptop"), withIntermediateDirectories: true)
        let href = URL(fileURLWithPath: world.folder("laptop").appendingPathComponent("late.txt").path).absoluteString
        try Self.replace(world.data("laptop").appendingPathComponent("recently-used.xbel"), with: Data(Self.xbel(href: href).utf8))
        #expect(await world.offeredTitle(within: 10) == "late.txt — Baton Test Editor")
    }

    @Test("B6: where the application that used it is not installed, the default application for its type opens it", .timeLimit(.minutes(1)))
    func defaultApplicationOpens() async throws {
        let world = try await World.start(editorOnDesktop: false)
        defer { Task { await world.stop() } }
        for device in ["laptop", "desktop"] {
            try Data("x".utf8).write(to: world.folder(device).appendingPathComponent("plan.txt"))
        }
        let href = URL(fileURLWithPath: world.folder("laptop").appendingPathComponent("plan.txt").path).absoluteString
        try Self.replace(world.data("laptop").appendingPathComponent("recently-used.xbel"), with: Data(Self.xbel(href: href).utf8))
        #expect(await world.offeredTitle(within: 10) == "plan.txt — Baton Test Editor", "titled with the laptop's application")
        let outcome = await world.devices.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil, "\(outcome)")
        let opened = await DesktopFixtures.recordedArguments(world.recorded)
        let url = URL(fileURLWithPath: world.folder("desktop").appendingPathComponent("plan.txt").path).absoluteString
        #expect(opened == "--view\n\(url)\n", "the viewer got the desktop's file as a URL (%U)")
    }

    @Test("issue 27 item 4: a hostile xbel (entities, huge, outside every folder, Exec with shell syntax) offers nothing, and the agent goes on", .timeLimit(.minutes(1)))
    func hostileOffersNothing() async throws {
        let world = try await World.start()
        defer { Task { await world.stop() } }
        let file = world.data("laptop").appendingPathComponent("recently-used.xbel")
        let inside = URL(fileURLWithPath: world.folder("laptop").appendingPathComponent("notes.txt").path).absoluteString
        try Data("x".utf8).write(to: world.folder("laptop").appendingPathComponent("notes.txt"))
        let entity = "<?xml version=\"1.0\"?><!DOCTYPE xbel [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]>"
            + Self.xbel(href: inside).replacingOccurrences(of: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>", with: "").replacingOccurrences(of: "notes.txt", with: "notes.txt&b;")
        let huge = Self.xbel(href: inside).replacingOccurrences(of: "</xbel>", with: String(repeating: "<!-- padding -->\n", count: 600_000) + "</xbel>")
        let hostile: [(String, String)] = [
            ("entities", entity),
            ("huge", huge),
            ("outside every folder", Self.xbel(href: URL(fileURLWithPath: world.root.appendingPathComponent("laptop/secret.txt").path).absoluteString)),
            ("Exec with shell syntax", Self.xbel(href: inside, exec: "'baton-test-editor %u; touch /tmp/pwned'")),
            ("dot-dot", Self.xbel(href: URL(fileURLWithPath: world.folder("laptop").path).absoluteString + "/../secret.txt")),
        ]
        let good = Data(Self.xbel(href: inside).utf8)
        for (what, text) in hostile {
            // The good document offered, then a file with only the hostile entry: refused, the offer is withdrawn
            // (the desktop's list empties); taken, it would replace the offer instead, and the list never empties.
            try Self.replace(file, with: good)
            #expect(await world.offeredTitle(within: 10) == "notes.txt — Baton Test Editor")
            try Self.replace(file, with: Data(text.utf8))
            #expect(await world.nothingOffered(within: 10), "\(what): nothing offered")
        }
        #expect(!FileManager.default.fileExists(atPath: "/tmp/pwned"))
        try Self.replace(file, with: good)
        let title = await world.offeredTitle(within: 10)
        #expect(title == "notes.txt — Baton Test Editor", "the agent still runs and offers the next good document")
    }
}
