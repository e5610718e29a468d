import BatonCore

/// The `[Desktop Entry]` group of a `.desktop` file (Desktop Entry Specification 1.5): what Baton needs to open a
/// document or a URL with the application a person used (issue 27 items 1, 2), and nothing it does not.
public struct DesktopEntry: Sendable, Hashable {
    /// The group every desktop file has.
    public static let group = "Desktop Entry"
    /// The longest desktop file id taken (`org.gnome.TextEditor`): file names stop at 255 bytes.
    public static let maximumIDLength = 255

    /// `Application`, `Link` or `Directory` (or a type a newer specification adds).
    public var type: String
    /// `Name`, unlocalized.
    public var name: String
    /// `Name[locale]` by locale (`de`, `pt_BR`).
    public var localizedNames: [String: String]
    /// `Exec` with the key file's escapes undone: parse it with ``ExecLine``.
    public var exec: String?
    /// `TryExec`, `Path` (the working folder), `Icon`.
    public var tryExec: String?
    public var path: String?
    public var icon: String?
    /// `URL` of a `Link` entry.
    public var url: String?
    /// `MimeType`: the types the application opens.
    public var mimeTypes: [String]
    /// `NoDisplay`, `Hidden` (deleted: treat as absent), `Terminal`.
    public var noDisplay: Bool
    public var hidden: Bool
    public var terminal: Bool
    /// The whole file, for keys this type does not name.
    public var keyFile: KeyFile

    /// Parses a desktop file.
    /// - Throws: ``ActivitySourceError`` `tooLarge` over one of `limits`, `malformedDesktopEntry` for bad syntax, no
    ///   `[Desktop Entry]` group, no `Type` or `Name`, or a boolean that is neither `true` nor `false`.
    public init(_ data: some Collection<UInt8>, limits: KeyFile.Limits = .default) throws {
        let file = try KeyFile(data, limits: limits)
        let group = Self.group
        guard file.groups[group] != nil else {
            throw ActivitySourceError(.malformedDesktopEntry, "the file has no [Desktop Entry] group: not a desktop entry")
        }
        guard let type = try file.string("Type", in: group), !type.isEmpty, let name = try file.string("Name", in: group) else {
            throw ActivitySourceError(.malformedDesktopEntry, "the desktop entry has no Type or no Name, which every entry needs")
        }
        self.type = type
        self.name = name
        localizedNames = [:]
        for key in file.groups[group]?.keys ?? [:].keys where key.hasPrefix("Name[") && key.hasSuffix("]") {
            localizedNames[String(key.dropFirst(5).dropLast())] = try file.string(key, in: group)
        }
        exec = try file.string("Exec", in: group)
        tryExec = try file.string("TryExec", in: group)
        path = try file.string("Path", in: group)
        icon = try file.string("Icon", in: group)
        url = try file.string("URL", in: group)
        mimeTypes = try file.strings("MimeType", in: group) ?? []
        noDisplay = try file.bool("NoDisplay", in: group) ?? false
        hidden = try file.bool("Hidden", in: group) ?? false
        terminal = try file.bool("Terminal", in: group) ?? false
        keyFile = file
    }

    /// The `Exec` line parsed; nil when the entry has none.
    /// - Throws: ``ActivitySourceError`` `invalidExec` (see ``ExecLine``).
    public func execLine() throws -> ExecLine? { try exec.map { try ExecLine($0) } }

    /// Whether `id` can be a desktop file id (`org.gnome.TextEditor`, `vlc`): what a media player's `DesktopEntry`
    /// property or a recent file's application name must be before Baton looks for `ID.desktop`. Letters, digits,
    /// `_ - .`, not starting with `.` or `-`: no `/`, so it names a file in an applications folder and nothing else.
    public static func isValidID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= maximumIDLength, let first = id.first, first != ".", first != "-" else { return false }
        return id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") }
    }
}
