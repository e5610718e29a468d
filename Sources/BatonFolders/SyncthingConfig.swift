import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The bounds of ``SyncthingConfig/decode(_:limits:)``: a config file is local, but it is still input Baton did not
/// write (another program's, possibly damaged or replaced), so the reader is bounded like every decoder here.
public struct SyncthingConfigLimits: Sendable, Hashable {
    /// The largest file read. Real configs are a few KiB; one with hundreds of devices and folders stays far below.
    public var maximumBytes: Int
    /// The most `<folder>` elements taken: far above what a person syncs, low enough to list in a terminal.
    public var maximumFolders: Int
    /// The longest attribute value, after unescaping: above `PATH_MAX` (4096), so any real path fits.
    public var maximumAttributeLength: Int
    /// The most attributes on one element: Syncthing writes about 20 on a folder.
    public var maximumAttributes: Int
    /// The deepest nesting of elements: Syncthing's is 4; the bound keeps the reader's stack small.
    public var maximumDepth: Int

    /// The bounds `baton folders syncthing` uses.
    public static let `default` = SyncthingConfigLimits(
        maximumBytes: 4 << 20, maximumFolders: 1000, maximumAttributeLength: 8192, maximumAttributes: 128, maximumDepth: 32
    )

    /// Bounds of your own.
    public init(maximumBytes: Int, maximumFolders: Int, maximumAttributeLength: Int, maximumAttributes: Int, maximumDepth: Int) {
        self.maximumBytes = maximumBytes
        self.maximumFolders = maximumFolders
        self.maximumAttributeLength = maximumAttributeLength
        self.maximumAttributes = maximumAttributes
        self.maximumDepth = maximumDepth
    }
}

/// The folders of a Syncthing configuration (`config.xml`): what `baton folders syncthing` adds under Syncthing's own
/// folder ids, which are the same on every device sharing a folder (C9).
///
/// Read with BatonCore's ``XMLSubsetReader`` (FoundationEssentials has no XML parser and the agent's modules do not
/// link Foundation): only the `<folder id=… label=… path=…>` elements directly inside `<configuration>` are taken (the
/// `<folder>` inside `<defaults>` is a template, not a folder), but the whole file must be well-formed; a `DOCTYPE` is
/// skipped unread, so an entity other than XML's five is refused (Syncthing writes neither).
public struct SyncthingConfig: Sendable, Hashable {
    /// One folder as Syncthing describes it.
    public struct Folder: Sendable, Hashable {
        /// Syncthing's folder id (`abcd1-xyz23`), shared by every device syncing it.
        public var id: String
        /// The label people see in Syncthing's interface; may be empty.
        public var label: String
        /// The path on this device as written: may start with `~`.
        public var path: String
        /// Whether Syncthing has it paused.
        public var paused: Bool
    }

    /// The folders, in the file's order.
    public var folders: [Folder]

    /// Reads the folders of a Syncthing `config.xml`.
    /// - Throws: ``SyncthingConfigError`` `syncthingConfigTooLarge` over one of `limits`, `syncthingConfigMalformed`
    ///   for anything that is not well-formed (the byte offset in the message).
    public static func decode(_ data: Data, limits: SyncthingConfigLimits = .default) throws -> SyncthingConfig {
        guard data.count <= limits.maximumBytes else {
            throw SyncthingConfigError(.tooLarge, "the Syncthing configuration is \(data.count) bytes, more than \(limits.maximumBytes)")
        }
        do {
            // Text is read only to check it; one run of it may be as long as the file.
            var bounds = XMLSubsetReader.Limits(
                maximumBytes: limits.maximumBytes, maximumDepth: limits.maximumDepth, maximumAttributes: limits.maximumAttributes,
                maximumAttributeLength: limits.maximumAttributeLength, maximumTextLength: limits.maximumBytes
            )
            bounds.skipsDoctype = true
            var xml = try XMLSubsetReader(Array(data), limits: bounds)
            var folders: [Folder] = []
            var open: [String] = []
            while let event = try xml.next() {
                switch event {
                case .start(let name, let attributes):
                    defer { open.append(name) }
                    guard name == "folder", open == ["configuration"] else { continue }
                    guard folders.count < limits.maximumFolders else {
                        throw SyncthingConfigError(.tooLarge, "more than \(limits.maximumFolders) folders in the Syncthing configuration")
                    }
                    guard let id = attributes["id"], let path = attributes["path"] else { throw malformed("a <folder> without its id or path") }
                    folders.append(Folder(id: id, label: attributes["label"] ?? "", path: path, paused: attributes["paused"] == "true"))
                case .end:
                    _ = open.popLast()
                case .text:
                    continue
                }
            }
            return SyncthingConfig(folders: folders)
        } catch let error as XMLReaderError {
            let message = "the Syncthing configuration: \(error.message)"
            throw SyncthingConfigError(error.kind == .tooLarge ? .tooLarge : .malformed, message)
        }
    }

    private static func malformed(_ what: String) -> SyncthingConfigError {
        SyncthingConfigError(.malformed, "the Syncthing configuration is not well-formed: \(what)")
    }
}
