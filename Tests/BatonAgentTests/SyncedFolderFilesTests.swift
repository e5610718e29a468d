@testable import BatonAgent
import BatonCore
import BatonProtocol
import Foundation
import Testing

/// C9 with real files: folders.plist in a state folder, paths resolved, and a document on the continuing device that
/// leads out of its folder through a symbolic link.
@Suite("Synced folders on disk (C9)")
struct SyncedFolderFilesTests {
    static func temporary() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("baton-folders-\(UUID().uuidString)").resolvingSymlinksInPath()
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("C9, security: an arrived document that resolves outside its folder through a link is refused; one inside is not")
    func symbolicLinkOutOfFolder() throws {
        let root = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("shared")
        let outside = root.appendingPathComponent("secret")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("inner"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: outside.appendingPathComponent("key.txt"))
        try Data("x".utf8).write(to: folder.appendingPathComponent("inner/plan.txt"))
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("escape"), withDestinationURL: outside)
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("alias.txt"), withDestinationURL: folder.appendingPathComponent("inner/plan.txt"))
        let folders = SyncedFolders([try SyncedFolder(id: "docs", path: folder.path)])

        let refused = Agent.escapingDocument([folder.appendingPathComponent("escape/key.txt").path], folders: folders)
        #expect(refused?.contains("leads outside folder \"docs\"") == true, "\(String(describing: refused))")
        #expect(Agent.escapingDocument([folder.appendingPathComponent("inner/plan.txt").path, folder.appendingPathComponent("alias.txt").path], folders: folders) == nil)
    }

    @Test("C9: a document reached through a link to a synced folder is found by its parent's real path")
    func resolvingParent() throws {
        let root = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: root) }
        let real = root.appendingPathComponent("Documents/Shared")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("Docs"), withDestinationURL: real)
        let folders = SyncedFolders([try SyncedFolder(id: "docs", path: real.path)])
        let url = URL(fileURLWithPath: root.appendingPathComponent("Docs/not-yet-saved.txt").path)
        #expect(folders.travelling(url, resolve: Agent.resolvingParent).absoluteString == "baton-folder://docs/not-yet-saved.txt")
        #expect(Agent.resolvingParent(root.appendingPathComponent("missing/x").path) == nil)
    }

    @Test("folders.plist: added, replaced, removed; 0600; a damaged file is stateCorrupt naming it")
    func store() throws {
        let root = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = AccountStore(folder: root.appendingPathComponent("state"))
        #expect(try store.syncedFolders().isEmpty, "no file: no folders")
        try store.addSyncedFolder(SyncedFolder(id: "docs", path: "/a"))
        try store.addSyncedFolder(SyncedFolder(id: "docs", path: "/b"))
        try store.addSyncedFolder(SyncedFolder(id: "photos", path: "/c"))
        #expect(try store.syncedFolders().folders.map(\.path) == ["/b", "/c"])
        #expect(try store.removeSyncedFolder(id: "photos") && !(try store.removeSyncedFolder(id: "photos")))
        let mode = try FileManager.default.attributesOfItem(atPath: store.foldersURL.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        try Data("bplist00 damaged".utf8).write(to: store.foldersURL)
        #expect {
            try store.syncedFolders()
        } throws: { error in
            (error as? BatonAgentError)?.code == .stateCorrupt && "\(error)".contains("folders.plist")
        }
    }

    @Test("issue 25 item 7, C9, security: a synced folder at / or through '..' is refused by the store, on the command line and in folders.plist")
    func rootAndDotDotRefused() throws {
        let root = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("a/b"), withIntermediateDirectories: true)
        let store = AccountStore(folder: root.appendingPathComponent("state"))
        func refusedAsInvalid(_ work: () throws -> Void) -> Bool {
            do {
                try work()
                return false
            } catch {
                return (error as? BatonAgentError)?.code == .invalidFolder
            }
        }
        // The store: the root, however spelled.
        for path in ["/", "//", "/a/..", "/tmp/../../"] {
            #expect(refusedAsInvalid { try store.addSyncedFolder(SyncedFolder(id: "all", path: path)) }, "\(path)")
        }
        #expect(try store.syncedFolders().isEmpty, "nothing was written")
        // As typed (`baton folders add`, Syncthing's paths): `..` anywhere, and a path that resolves to the root.
        let cwd = root.appendingPathComponent("a/b").path
        for typed in ["..", "../b", "\(root.path)/a/../a", "/", "/."] {
            #expect(refusedAsInvalid { _ = try FolderPath.resolve(typed, currentDirectory: cwd, home: nil) }, "\(typed)")
        }
        #expect(try FolderPath.resolve("b", currentDirectory: root.appendingPathComponent("a").path, home: nil) == cwd)
        // A hand-edited folders.plist naming the root, or a path through '..', is refused naming the folder.
        for path in ["/", "/home/../etc"] {
            let document: PropertyList = ["v": 1, "folders": ["all": .string(path)]]
            try FileManager.default.createDirectory(at: store.folder, withIntermediateDirectories: true)
            try AtomicFile.store(try BinaryPropertyListEncoder.encode(document), at: store.foldersURL)
            #expect {
                try store.syncedFolders()
            } throws: { error in
                (error as? BatonAgentError)?.code == .stateCorrupt && "\(error)".contains("\"all\"")
            }
        }
        try FileManager.default.removeItem(at: store.foldersURL)
        try store.addSyncedFolder(SyncedFolder(id: "docs", path: cwd))
        #expect(try store.syncedFolders().folders.map(\.path) == [cwd])
    }
}
