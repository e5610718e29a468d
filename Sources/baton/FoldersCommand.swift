import ArgumentParser
import BatonAgent
import BatonAgentCommand
import BatonFolders
import BatonProtocol
import Foundation

/// `baton folders`: the folders this device keeps in step with the others (SEMANTICS C9, issue 16 part 3). A
/// `file:` URL in an activity that lies inside one travels as (folder, path inside it) and arrives as the same
/// document in that folder on the continuing device.
struct FoldersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "folders",
        abstract: "Name the synced folders whose documents continue on the other devices (C9).",
        discussion: """
            Give each synced folder the same NAME on every device, with that device's own path to it:
              laptop:   baton folders add docs ~/Documents/Shared
              desktop:  baton folders add docs /data/shared
            An app on the laptop offering file:///home/me/Documents/Shared/plan.txt is continued on the desktop \
            with file:///data/shared/plan.txt, once that file has synced there (the agent waits up to its \
            --sync-wait). URLs outside every folder pass unchanged. Syncthing users: `baton folders syncthing` adds \
            Syncthing's folders under their folder ids. The running agent sees changes at once.
            """,
        subcommands: [Add.self, Remove.self, List.self, Syncthing.self]
    )

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a synced folder (or give a NAME a new path).",
            discussion: "NAME: 1-64 letters, digits, '.', '_' or '-', the same on every device. PATH: an existing folder; links are resolved."
        )

        @OptionGroup var state: StateOptions

        @Argument(help: "The folder's name, the same on every device.")
        var name: String

        @Argument(help: "Where the folder is on this device.")
        var path: String

        func run() throws {
            let folder = try makeFolder(id: name, path: path)
            try reportingAgentErrors { try state.store.addSyncedFolder(folder) }
            print("\(folder.id)  \(folder.path)")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a synced folder (its files are not touched).")

        @OptionGroup var state: StateOptions

        @Argument(help: "The folder's name.")
        var name: String

        func run() throws {
            guard try reportingAgentErrors({ try state.store.removeSyncedFolder(id: name) }) else {
                throw CommandLineError("no synced folder named \"\(name)\" (see `baton folders list`)")
            }
            print("removed \(name)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the synced folders: name and path.")

        @OptionGroup var state: StateOptions

        @Flag(help: "Print JSON: [{\"id\": NAME, \"path\": PATH, \"exists\": BOOL}].")
        var json = false

        func run() throws {
            let folders = try reportingAgentErrors { try state.store.syncedFolders() }.folders
            if json {
                let entries: [[String: Any]] = folders.map { folder in
                    ["id": folder.id, "path": folder.path, "exists": FileManager.default.fileExists(atPath: folder.path)]
                }
                let data = try JSONSerialization.data(withJSONObject: entries, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            if folders.isEmpty { print("No synced folders. Add one with `baton folders add NAME PATH`.") }
            for folder in folders {
                let missing = FileManager.default.fileExists(atPath: folder.path) ? "" : "  (missing)"
                print("\(folder.id)  \(folder.path)\(missing)")
            }
        }
    }

    struct Syncthing: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add Syncthing's folders, under their Syncthing folder ids.",
            discussion: """
                Reads Syncthing's config.xml ($XDG_STATE_HOME/syncthing, else ~/.local/state/syncthing, else \
                ~/.config/syncthing) and adds every folder, or those whose ids are given. Syncthing's folder ids are \
                the same on every device sharing a folder, so running this on each device is all it takes.
                """
        )

        @OptionGroup var state: StateOptions

        @Option(help: ArgumentHelp("Syncthing's config.xml (default: found as above).", valueName: "file"))
        var config: String?

        @Argument(help: "Only these folder ids (default: all).")
        var ids: [String] = []

        func run() throws {
            let environment = ProcessInfo.processInfo.environment
            guard let file = config ?? Self.defaultConfig(environment: environment) else {
                throw CommandLineError(
                    "no Syncthing configuration found in \(Self.candidates(environment: environment).joined(separator: " or ")); give it with --config FILE"
                )
            }
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CommandLineError("\(file): cannot be read")
            }
            let parsed: SyncthingConfig
            do {
                parsed = try SyncthingConfig.decode(data)
            } catch let error as SyncthingConfigError {
                throw CommandLineError("\(file): \(error)")
            }
            let known = Set(parsed.folders.map(\.id))
            if let unknown = ids.first(where: { !known.contains($0) }) {
                throw CommandLineError("\(file) has no folder with id \"\(unknown)\"; it has: \(parsed.folders.map(\.id).joined(separator: ", "))")
            }
            let chosen = parsed.folders.filter { ids.isEmpty || ids.contains($0.id) }
            if chosen.isEmpty { print("\(file) lists no folders.") }
            var failures = 0
            for folder in chosen {
                do {
                    let added = try makeFolder(id: folder.id, path: folder.path)
                    try reportingAgentErrors { try state.store.addSyncedFolder(added) }
                    print("\(added.id)  \(added.path)\(folder.label.isEmpty ? "" : "  (\(folder.label))")")
                } catch {
                    failures += 1
                    print("not added: \(folder.id): \(error)")
                }
            }
            if failures > 0 { throw ExitCode(1) }
        }

        static func candidates(environment: [String: String]) -> [String] {
            let home = environment["HOME"] ?? NSHomeDirectory()
            let stateHome = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.local/state"
            let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
            return [stateHome + "/syncthing/config.xml", configHome + "/syncthing/config.xml"]
        }

        static func defaultConfig(environment: [String: String]) -> String? {
            candidates(environment: environment).first { FileManager.default.fileExists(atPath: $0) }
        }
    }
}

/// A folder from a name and a path as typed (relative to the current folder, `~` expanded, links resolved).
func makeFolder(id: String, path: String) throws -> SyncedFolder {
    do {
        try SyncedFolder.validate(id: id)
        let resolved = try FolderPath.resolve(
            path,
            currentDirectory: FileManager.default.currentDirectoryPath,
            home: ProcessInfo.processInfo.environment["HOME"]
        )
        return try SyncedFolder(id: id, path: resolved)
    } catch let error as BatonProtocolError {
        throw CommandLineError(error.message)
    } catch let error as BatonAgentError {
        throw CommandLineError(error.message)
    }
}
