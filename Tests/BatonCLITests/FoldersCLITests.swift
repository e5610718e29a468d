import BatonTestSupport
import Foundation
import Testing

/// Documents in synced folders (C9, issue 16 part 3) between two agent processes on loopback: each device names the
/// same folder with its own path, ShopSnap offers a list with receipts (file URLs), and the other device's ShopSnap
/// receives them as its own copies.
@Suite("Synced folders between separate agent processes (C9)", .serialized)
struct FoldersCLITests {
    /// Two paired devices with their agents running (the desktop waits `syncWait` for documents), and a synced
    /// folder's two copies: `laptop-docs` and `desktop-docs`, at different paths.
    static func world(syncWait: Double = 10) throws -> (HandoffWorld, laptopDocs: URL, desktopDocs: URL) {
        let world = try HandoffWorld()
        for name in ["laptop", "desktop"] { try world.device(name) }
        try world.pair("laptop", "desktop")
        let laptopDocs = world.root.appendingPathComponent("laptop-docs")
        let desktopDocs = world.root.appendingPathComponent("elsewhere/desktop-docs")
        for folder in [laptopDocs, desktopDocs] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("receipts"), withIntermediateDirectories: true)
        }
        try world.agent("laptop", apps: try world.apps("laptop"))
        try world.agent("desktop", peers: ["laptop"], apps: try world.apps("desktop"), extra: ["--sync-wait", "\(syncWait)"])
        return (world, laptopDocs, desktopDocs)
    }

    static func folders(_ arguments: String..., state: String) throws -> Baton.Result {
        try Baton.run(["folders"] + arguments + ["--state", state])
    }

    @Test("C9: a receipt in the synced folder arrives as the desktop's copy, one outside unchanged; a folder the desktop lacks fails documentNotSynced; `folders add` needs no restart")
    func receiptsArriveInTheOtherCopy() async throws {
        try await startingProcesses {
            let (world, laptopDocs, desktopDocs) = try Self.world()
            let name = "receipts/Market 1 été.txt"
            for folder in [laptopDocs, desktopDocs] {
                try Data("receipt".utf8).write(to: folder.appendingPathComponent(name))
            }
            let outside = world.root.appendingPathComponent("outside.txt").path
            let added = try Self.folders("add", "docs", laptopDocs.path, state: world.state("laptop"))
            #expect(added.status == 0 && added.stdout.contains("docs  \(laptopDocs.path)"), "\(added.output)")
            _ = try world.shopSnap(on: "laptop", ["list", "Milk", "--receipt", laptopDocs.appendingPathComponent(name).path, "--receipt", outside])
            #expect(try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list (1 item)") })
            let desktop = try #require(world.agents["desktop"])

            // The desktop has no folder "docs" yet: the app hears why, and what to do.
            let lacking = try Baton.run("continue", "--state", world.state("desktop"))
            #expect(lacking.status != 0 && lacking.output.contains("[documentNotSynced]") && lacking.output.contains("baton folders add docs"), "\(lacking.output)")
            #expect(desktop.waitFor("shopsnap: failed to continue com.razeware.shopsnap.view") != nil, "\(desktop.output)")

            // Named on the desktop too, with its own path; the running agent sees it at once.
            #expect(try Self.folders("add", "docs", desktopDocs.path, state: world.state("desktop")).status == 0)
            let continued = try Baton.run("continue", "--state", world.state("desktop"))
            #expect(continued.status == 0, "\(continued.output)")
            let expected = "shopsnap: receipts: \(desktopDocs.appendingPathComponent(name).path), \(outside)"
            #expect(desktop.waitFor(expected) != nil, "\(desktop.output)")
            #expect(desktop.lines(containing: "shopsnap: continued list: Milk").count == 1)
            #expect(desktop.lines(containing: "shopsnap: failed to continue").count == 1, "exactly one ending each (C5)")

            // A damaged folders.plist never stops the agent: it says so, and the folders read before stay in use.
            try Data("damaged".utf8).write(to: URL(fileURLWithPath: world.state("desktop")).appendingPathComponent("folders.plist"))
            let again = try Baton.run("continue", "--state", world.state("desktop"))
            #expect(again.status == 0, "\(again.output)")
            #expect(desktop.waitFor("synced folders:") != nil && desktop.process.isRunning, "\(desktop.output)")
            #expect(eventually(timeout: 10) { desktop.lines(containing: expected).count == 2 }, "\(desktop.output)")
        }
    }

    @Test("C9, C5: sync lag: a receipt that appears a second after the continue starts is waited for; one that never does fails documentNotSynced after --sync-wait")
    func syncLag() async throws {
        try await startingProcesses {
            let (world, laptopDocs, desktopDocs) = try Self.world(syncWait: 3)
            #expect(try Self.folders("add", "docs", laptopDocs.path, state: world.state("laptop")).status == 0)
            #expect(try Self.folders("add", "docs", desktopDocs.path, state: world.state("desktop")).status == 0)
            let receipt = laptopDocs.appendingPathComponent("receipts/late.txt")
            try Data("late".utf8).write(to: receipt)
            _ = try world.shopSnap(on: "laptop", ["list", "Bread", "--receipt", receipt.path])
            #expect(try eventually(timeout: 5) { try world.nearby("desktop").stdout.contains("Shopping list (1 item)") })
            let desktop = try #require(world.agents["desktop"])
            let copy = desktopDocs.appendingPathComponent("receipts/late.txt")

            // Never arrives: the continuation fails after the 3 s bound, naming the file and the folder.
            let started = Date()
            let missing = try Baton.run("continue", "--state", world.state("desktop"))
            let waited = Date().timeIntervalSince(started)
            #expect(missing.status != 0 && missing.output.contains("[documentNotSynced]"), "\(missing.output)")
            #expect(missing.output.contains(copy.path) && missing.output.contains("\"docs\""), "\(missing.output)")
            #expect(waited >= 3 && waited < 15, "waited \(waited) s")
            #expect(desktop.waitFor("shopsnap: failed to continue com.razeware.shopsnap.view") != nil)
            #expect(desktop.lines(containing: "documentNotSynced").count >= 1, "\(desktop.output)")

            // Arrives a second after the continue starts (as a sync would): continued, at the desktop's path.
            let continuing = try Background(Baton.executable, ["continue", "--state", world.state("desktop")], log: world.root.appendingPathComponent("continue.log"))
            world.background.append(continuing)
            #expect(desktop.waitFor("shopsnap: will continue", timeout: 10) != nil)
            Thread.sleep(forTimeInterval: 1)
            try Data("late".utf8).write(to: copy)
            #expect(continuing.waitForExit(timeout: 15))
            #expect(continuing.process.terminationStatus == 0, "\(continuing.output)")
            #expect(desktop.waitFor("shopsnap: receipts: \(copy.path)") != nil, "\(desktop.output)")
            #expect(world.stopAndDrain("desktop"))
            #expect(desktop.lines(containing: "shopsnap: continued list: Bread").count == 1)
            #expect(desktop.lines(containing: "shopsnap: failed to continue").count == 1, "exactly one ending each (C5)")
        }
    }

    @Test("baton folders add/remove/list: names checked, paths resolved, clear errors, re-adding replaces, a damaged file is named")
    func foldersCommands() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let state = root.appendingPathComponent("state").path
            let real = root.appendingPathComponent("real")
            try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
            let link = root.appendingPathComponent("link")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
            let file = root.appendingPathComponent("file.txt")
            try Data().write(to: file)
            let resolvedReal = real.resolvingSymlinksInPath().path

            let added = try Self.folders("add", "abcd1-xyz23", link.path, state: state)
            #expect(added.status == 0 && added.stdout == "abcd1-xyz23  \(resolvedReal)\n", "links are resolved: \(added.output)")
            for (name, path, message) in [
                ("bad name", real.path, "is not a folder id"), ("docs", root.appendingPathComponent("nope").path, "no such folder"),
                ("docs", file.path, "not a folder"), (String(repeating: "x", count: 65), real.path, "is not a folder id"),
            ] {
                let refused = try Self.folders("add", name, path, state: state)
                #expect(refused.status != 0 && refused.stderr.contains(message), "\(name) \(path): \(refused.output)")
            }
            // A relative path is taken from the current folder.
            let relative = Process()
            relative.executableURL = Baton.executable
            relative.arguments = ["folders", "add", "rel", "real", "--state", state]
            relative.currentDirectoryURL = root
            let relativeOut = Pipe()
            relative.standardOutput = relativeOut
            try relative.run()
            relative.waitUntilExit()
            #expect(String(decoding: relativeOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "rel  \(resolvedReal)\n")
            #expect(try Self.folders("remove", "rel", state: state).status == 0)
            #expect(try Self.folders("add", "abcd1-xyz23", root.path, state: state).status == 0, "re-adding replaces the path")
            #expect(try Self.folders("add", "docs", real.path, state: state).status == 0)
            let listed = try Self.folders("list", state: state)
            #expect(listed.stdout == "abcd1-xyz23  \(root.resolvingSymlinksInPath().path)\ndocs  \(resolvedReal)\n", "\(listed.output)")
            let json = try Self.folders("list", "--json", state: state)
            let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
            #expect(entries.map { $0["id"] as? String } == ["abcd1-xyz23", "docs"] && entries.allSatisfy { $0["exists"] as? Bool == true })
            let plist = URL(fileURLWithPath: state).appendingPathComponent("folders.plist")
            let mode = try FileManager.default.attributesOfItem(atPath: plist.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            #expect(try Self.folders("remove", "docs", state: state).status == 0)
            let gone = try Self.folders("remove", "docs", state: state)
            #expect(gone.status != 0 && gone.stderr.contains("no synced folder named \"docs\""))

            try Data("not a property list".utf8).write(to: plist)
            let damaged = try Self.folders("list", state: state)
            #expect(damaged.status != 0 && damaged.stderr.contains("folders.plist") && damaged.stderr.contains("damaged"), "\(damaged.output)")
        }
    }

    @Test("baton folders syncthing --config: the folders of a config written by the real `syncthing generate`, under their ids", .requires(.syncthing))
    func syncthingFolders() async throws {
        try await startingProcesses {
            let root = try Baton.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: root) }
            let home = root.appendingPathComponent("home")
            try FileManager.default.createDirectory(at: home.appendingPathComponent("Sync"), withIntermediateDirectories: true)
            let generate = Process()
            generate.executableURL = try Requirement.syncthing.executable()
            generate.arguments = ["generate", "--home", root.appendingPathComponent("st").path]
            generate.environment = ProcessInfo.processInfo.environment.merging(["HOME": home.path]) { $1 }
            generate.standardOutput = FileHandle.nullDevice
            generate.standardError = FileHandle.nullDevice
            try generate.run()
            generate.waitUntilExit()
            try #require(generate.terminationStatus == 0, "syncthing generate failed")
            let config = root.appendingPathComponent("st/config.xml").path
            let state = root.appendingPathComponent("state").path

            let added = try Baton.run(["folders", "syncthing", "--config", config, "--state", state], environment: ["HOME": home.path])
            let sync = home.appendingPathComponent("Sync").resolvingSymlinksInPath().path
            #expect(added.status == 0 && added.stdout.contains("default  \(sync)  (Default Folder)"), "\(added.output)")
            #expect(try Self.folders("list", state: state).stdout == "default  \(sync)\n")
            let unknown = try Baton.run(["folders", "syncthing", "--config", config, "--state", state, "photos"], environment: ["HOME": home.path])
            #expect(unknown.status != 0 && unknown.stderr.contains("no folder with id \"photos\""), "\(unknown.output)")
            // Found without --config where Syncthing keeps it ($XDG_STATE_HOME/syncthing).
            let xdg = root.appendingPathComponent("xdg-state/syncthing")
            try FileManager.default.createDirectory(at: xdg, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: config, toPath: xdg.appendingPathComponent("config.xml").path)
            let found = try Baton.run(
                ["folders", "syncthing", "default", "--state", state],
                environment: ["HOME": home.path, "XDG_STATE_HOME": root.appendingPathComponent("xdg-state").path]
            )
            #expect(found.status == 0 && found.stdout.contains("default  \(sync)"), "\(found.output)")
        }
    }
}
