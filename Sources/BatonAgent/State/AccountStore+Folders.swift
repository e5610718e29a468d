import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The synced folders of this device (C9, issue 16 part 3): `folders.plist` in the state folder, a binary property
/// list `{v: 1, folders: {ID: PATH}}`, written atomically with mode 0600 like the account's files. No file means
/// no folders; a damaged one is an error naming it (`stateCorrupt`), never replaced silently.
extension AccountStore {
    static let foldersFile = "folders.plist"

    /// `folders.plist`.
    public var foldersURL: URL { folder.appendingPathComponent(Self.foldersFile) }

    /// The synced folders.
    /// - Throws: ``BatonAgentError`` `stateCorrupt` for a damaged file, `statePermissions` for one others may read.
    public func syncedFolders() throws -> SyncedFolders {
        guard FileManager.default.fileExists(atPath: foldersURL.path) else { return SyncedFolders() }
        let document = try readDocument(foldersURL, what: "synced folders")
        guard document["v"]?.integerValue == 1, case .dictionary(let entries)? = document["folders"] else {
            throw BatonAgentError(.stateCorrupt, "\(foldersURL.path): not a list of synced folders (version 1); fix or remove it, then `baton folders add` again")
        }
        var folders = SyncedFolders()
        for (id, value) in entries {
            guard let path = value.stringValue, let folder = try? SyncedFolder(id: id, path: path) else {
                throw BatonAgentError(.stateCorrupt, "\(foldersURL.path): folder \"\(id)\" is damaged; `baton folders remove` it and add it again")
            }
            if let why = FolderPath.refusal(path) {
                throw BatonAgentError(.stateCorrupt, "\(foldersURL.path): folder \"\(id)\" is refused: \(why); `baton folders remove \(id)` and add the folder itself")
            }
            folders.add(folder)
        }
        return folders
    }

    /// Adds `folder` (replacing one with its id), under the state lock.
    /// - Throws: ``BatonAgentError`` `invalidFolder` for the root folder (``FolderPath/refusal(_:)``).
    public func addSyncedFolder(_ folder: SyncedFolder) throws {
        if let why = FolderPath.refusal(folder.path) { throw BatonAgentError(.invalidFolder, "folder \"\(folder.id)\": \(why)") }
        try updateSyncedFolders { $0.add(folder) }
    }

    /// Removes the folder `id`; false when there was none.
    @discardableResult
    public func removeSyncedFolder(id: String) throws -> Bool {
        var removed = false
        try updateSyncedFolders { removed = $0.remove(id: id) }
        return removed
    }

    /// Reads, changes and writes `folders.plist` under the state lock, so two commands cannot lose each other's change.
    func updateSyncedFolders(_ change: (inout SyncedFolders) -> Void) throws {
        try withStateLock {
            var folders = try syncedFolders()
            change(&folders)
            var entries: [String: PropertyList] = [:]
            for folder in folders.folders { entries[folder.id] = .string(folder.path) }
            let document: PropertyList = ["v": 1, "folders": .dictionary(entries)]
            try AtomicFile.store(try BinaryPropertyListEncoder.encode(document), at: foldersURL)
        }
    }
}

/// A folder path as given on a command line or in Syncthing's configuration, made what `folders.plist` keeps.
public enum FolderPath {
    /// `path` made absolute (against `currentDirectory`; a leading `~` is `home`), with symbolic links resolved.
    /// - Throws: ``BatonAgentError`` `invalidFolder` when the path does not exist or is not a folder.
    public static func resolve(_ path: String, currentDirectory: String, home: String?) throws -> String {
        if let why = refusal(path) { throw BatonAgentError(.invalidFolder, why) }
        var absolute = path
        if path == "~" || path.hasPrefix("~/") {
            guard let home else { throw BatonAgentError(.invalidFolder, "\(path): no home folder to expand ~ in (HOME is not set)") }
            absolute = home + path.dropFirst()
        } else if !path.hasPrefix("/") {
            absolute = currentDirectory + "/" + path
        }
        guard let resolved = realPath(absolute) else {
            throw BatonAgentError(.invalidFolder, "\(absolute): no such folder (\(String(cString: strerror(errno))))")
        }
        guard FileStatus(path: resolved)?.kind == .directory else {
            throw BatonAgentError(.invalidFolder, "\(absolute): not a folder")
        }
        if let why = refusal(resolved) { throw BatonAgentError(.invalidFolder, "\(path): \(why)") }
        return resolved
    }

    /// Why `path` cannot be a synced folder, or nil when it can (issue 25 item 7; C9). The root: every file of this
    /// device would travel as a folder file, and on a continuing device any path a peer names would be opened. A
    /// `..` segment: the folder named is not the one the text seems to name (and in `folders.plist` or Syncthing's
    /// configuration, a path that climbs could end at the root); the folder itself is named instead.
    public static func refusal(_ path: String) -> String? {
        if path.split(separator: "/", omittingEmptySubsequences: true).contains("..") {
            return "\"\(path)\" goes through '..': name the synced folder itself (e.g. ~/Documents/Shared)"
        }
        if path.hasPrefix("/"), SyncedFolders.lexicallyStandardized(path) == "/" {
            return "/ cannot be a synced folder (every file of this device would be in it): name the folder that is synced"
        }
        return nil
    }

    /// `path` with every symbolic link resolved (`realpath(3)`), or nil when it does not exist.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
