import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Documents in synced folders (SEMANTICS C9, issue 16 part 3): the agents rewrite `file:` URLs, the apps never see
/// the travel form. The originating agent puts the state it serves into travel form (``travelling(_:)``, from
/// the handoff coordinator's `answerFetch`); the continuing agent turns it into this device's paths (``arriving(_:)``,
/// from its `fetched`), and when a document is not here yet (sync lag) the broker waits in `awaitingDocuments`,
/// asking the coordinator to look for it (``documents(at:)``) until its bound, ``AgentConfiguration/syncWait``.
extension Agent {
    /// The synced folders as `folders.plist` says now. The file's status is compared on each call (a `stat`), and
    /// the file read again only when it changed, so `baton folders add` takes effect without a restart. A damaged
    /// file is logged once and the last good table kept: a continuation never fails for it.
    func syncedFolders() -> SyncedFolders {
        let status = FileStatus(path: store.foldersURL.path)
        let cached = foldersCache.withLockedValue { $0 }
        if let cached, cached.file == status { return cached.folders }
        var folders = cached?.folders ?? SyncedFolders()
        do {
            folders = try store.syncedFolders()
        } catch {
            logger.error("synced folders: \(error); the folders read before stay in use")
        }
        foldersCache.withLockedValue { $0 = SyncedFoldersSnapshot(file: status, folders: folders) }
        return folders
    }

    /// The state an app gave, as it goes to another device: `file:` URLs inside synced folders in travel form.
    /// Unchanged when there are no folders or no `file:` URL: the app's library writes URLs as ASCII strings in the
    /// binary property list, so a state without the bytes `file:` has none, nor has one without a URL object
    /// (issue 26 item 5), and neither is decoded.
    func travelling(_ data: Data) -> Data {
        let folders = syncedFolders()
        guard !folders.isEmpty, data.firstRange(of: Self.fileScheme) != nil, BinaryPropertyList.mayHoldURLs(data),
            let payload = try? ActivityPayload(decoding: data)
        else { return data }
        let moved = folders.travelling(payload, resolve: Self.resolvingParent)
        guard moved != payload else { return data }
        do {
            return try moved.encoded()
        } catch {
            logger.warning("the state with its folder URLs cannot be encoded (\(error)); it goes with its file URLs unchanged")
            return data
        }
    }

    /// What a fetched state means here (C9).
    enum ArrivedState {
        /// Ready for the broker: `payload`, and the files it names in synced folders not here yet.
        case ready(payload: Data, missing: [String])
        /// A document is in a folder this device does not have, or leads out of its folder through a symbolic
        /// link: the continuation fails `documentNotSynced`.
        case unavailable(message: String)
        /// A URL in travel form is malformed or leaves its folder: the other device broke the protocol.
        case invalid(message: String)
    }

    /// `data` as it arrived, with URLs in travel form made this device's `file:` URLs, and every other `file:` URL
    /// in foreign form (`baton-foreign:`, issue 25 item 2): it names a file on the other device, and the app's
    /// library marks it so (`UserActivity.foreignFileURLs`) and never opens it as a document (B6, C9). Decoded,
    /// not searched for the bytes `file:`: the peer chooses how its property list writes a URL (UTF-16 hides them),
    /// so a byte search could let a `file:` URL through unmarked. A state that does not decode goes on as it is; the app's
    /// library refuses it (`unreadable`) with the same decoder. One with no URL object goes on as it is without the
    /// decode (issue 26 item 5): only URL values change here, and the decoder makes them from that marker alone.
    func arriving(_ data: Data) -> ArrivedState {
        guard BinaryPropertyList.mayHoldURLs(data) else { return .ready(payload: data, missing: []) }
        return Self.arriving(decoding: data, folders: syncedFolders())
    }

    /// ``arriving(_:)`` by decoding `data`, with `folders`.
    static func arriving(decoding data: Data, folders: SyncedFolders) -> ArrivedState {
        guard var payload = try? ActivityPayload(decoding: data) else {
            return .ready(payload: data, missing: [])
        }
        let arrived = folders.arriving(.dictionary(payload.userInfo))
        if let why = arrived.invalid.first {
            return .invalid(message: "the state names a document in a synced folder wrongly: \(why)")
        }
        if let unknown = arrived.unknown.first {
            return .unavailable(
                message: "\"\(unknown.relativePath)\" is in synced folder \"\(unknown.id)\", which this device does not have: "
                    + "`baton folders add \(unknown.id) PATH` (or `baton folders syncthing`) sets it up (C9)"
            )
        }
        guard case .dictionary(let userInfo) = arrived.value else { return .ready(payload: data, missing: []) }
        // Nothing to rewrite: the bytes go on as they came.
        if arrived.documents.isEmpty, arrived.foreign.isEmpty { return .ready(payload: data, missing: []) }
        payload.userInfo = userInfo
        guard let encoded = try? payload.encoded() else {
            return .invalid(message: "the state with this device's file URLs cannot be encoded")
        }
        let paths = arrived.documents.map { $0.url.path(percentEncoded: false) }
        let missing = paths.filter { !FileManager.default.fileExists(atPath: $0) }
        if let message = Self.escapingDocument(paths.filter { !missing.contains($0) }, folders: folders) {
            return .unavailable(message: message)
        }
        return .ready(payload: encoded, missing: missing)
    }

    /// Whether every file at `paths` is here now, for the handoff coordinator, which tells the broker: it decides
    /// whether to look again (every 100 ms, up to ``AgentConfiguration/syncWait``) or that the continuation fails
    /// (issue 26 item 2). A file that resolves outside its folder (a symbolic link) is refused. A look is a few
    /// `stat`s, on the loop.
    func documents(at paths: [String]) -> HandoffBroker.DocumentsCheck {
        let folders = syncedFolders()
        if let path = paths.first(where: { !FileManager.default.fileExists(atPath: $0) }) {
            let folder = folders.folder(containing: path).map { "folder \"\($0.folder.id)\" (\($0.folder.path))" }
            return .missing(path: path, folder: folder)
        }
        if let message = Self.escapingDocument(paths, folders: folders) {
            return .refused(message: message)
        }
        return .present
    }

    /// Why one of `paths` (existing files in `folders`) is not opened: it resolves outside its folder through a
    /// symbolic link (a link synced from elsewhere must not hand an app a file the folder does not hold); nil when
    /// none does.
    static func escapingDocument(_ paths: [String], folders: SyncedFolders) -> String? {
        for path in paths {
            guard let folder = folders.folder(containing: path)?.folder else { continue }
            guard let real = FolderPath.realPath(path), let realFolder = FolderPath.realPath(folder.path),
                SyncedFolders.relativePath(of: real, inside: realFolder) != nil
            else {
                return "\(path) leads outside folder \"\(folder.id)\" (\(folder.path)) through a symbolic link: not opened (C9)"
            }
        }
        return nil
    }

    static let fileScheme = Array("file:".utf8)

    /// `path` with its parent folder's symbolic links resolved (the file itself may be a link, kept as one), or nil
    /// when the parent does not exist.
    @Sendable static func resolvingParent(_ path: String) -> String? {
        let parent = FilePaths.parent(path)
        guard let real = FolderPath.realPath(parent) else { return nil }
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        return real == "/" ? "/" + name : real + "/" + name
    }
}

/// The synced folders as last read, and the status of the file they were read from.
struct SyncedFoldersSnapshot: Sendable {
    var file: FileStatus?
    var folders: SyncedFolders
}
