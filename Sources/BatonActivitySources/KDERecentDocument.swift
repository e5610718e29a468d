import BatonCore

/// One of KDE's recent documents (`$XDG_DATA_HOME/RecentDocuments/NAME.desktop`, written by `KRecentDocument`):
/// a `[Desktop Entry]` of `Type=Link` whose `URL` is the document (issue 27 item 2).
///
/// KDE writes the URL with `writePathEntry`: as `URL[$e]=file://$HOME/Documents/report.odt`, the home folder as
/// `$HOME`, the rest not percent-encoded (`toDisplayString`). KConfig would expand any `$VAR` and even `$(command)`
/// there; Baton expands `$HOME` and `${HOME}` with the folder it is given, reads `$$` as `$`, and refuses every other
/// `$`: a file any program can write never makes Baton look up another variable or run anything.
public struct KDERecentDocument: Sendable, Hashable {
    /// The document's URL, checked (``ActivityURL``; percent-encoded here).
    public var url: ActivityURL
    /// `Name`: the file name KDE showed.
    public var name: String
    /// `X-KDE-LastOpenedWith`: the desktop file id of the application that opened it (`org.kde.okular`); nil when
    /// absent or not a valid id.
    public var lastOpenedWith: String?

    /// Reads one recent-document file.
    /// - Parameter home: the user's home folder, for `$HOME` in the URL.
    /// - Throws: ``ActivitySourceError`` `tooLarge`, `malformedDesktopEntry` (bad syntax, not `Type=Link`, no `URL`,
    ///   a `$` other than `$HOME`), `urlRefused` (see ``ActivityURL``).
    public init(_ data: some Collection<UInt8>, home: String, limits: KeyFile.Limits = .default) throws {
        let file = try KeyFile(data, limits: limits)
        let group = DesktopEntry.group
        guard file.groups[group] != nil, try file.string("Type", in: group) == "Link" else {
            throw ActivitySourceError(.malformedDesktopEntry, "a recent document is a [Desktop Entry] with Type=Link; this is not")
        }
        let expanded: String
        if let raw = try file.string("URL[$e]", in: group) {
            expanded = try Self.expandingHome(raw, home: home)
        } else if let raw = try file.string("URL", in: group) {
            expanded = raw
        } else {
            throw ActivitySourceError(.malformedDesktopEntry, "the recent document has no URL")
        }
        url = try Self.activityURL(expanded)
        name = try file.string("Name", in: group) ?? ""
        lastOpenedWith = try file.string("X-KDE-LastOpenedWith", in: group).flatMap { DesktopEntry.isValidID($0) ? $0 : nil }
    }

    /// `text` with `$HOME` and `${HOME}` replaced by `home` and `$$` by `$`.
    static func expandingHome(_ text: String, home: String) throws -> String {
        var output = ""
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            output += rest[..<dollar]
            let after = rest[rest.index(after: dollar)...]
            if after.hasPrefix("HOME"), !(after.dropFirst(4).first.map { $0.isLetter || $0.isNumber || $0 == "_" } ?? false) {
                output += home
                rest = after.dropFirst(4)
            } else if after.hasPrefix("{HOME}") {
                output += home
                rest = after.dropFirst(6)
            } else if after.hasPrefix("$") {
                output += "$"
                rest = after.dropFirst()
            } else {
                throw ActivitySourceError(.malformedDesktopEntry, "the recent document's URL \(BatonCoreError.quoted(text)) asks to expand something other than $HOME: refused")
            }
        }
        return output + rest
    }

    /// KDE's display form to a checked URL: a plain path or `file://` + path (percent-encoded here); other URLs as they are.
    static func activityURL(_ text: String) throws -> ActivityURL {
        let path: Substring
        if text.hasPrefix("/") {
            path = Substring(text)
        } else if text.hasPrefix("file:///") {
            path = text.dropFirst(7)
        } else {
            return try ActivityURL(text)
        }
        var encoded = "file://"
        for byte in path.utf8 {
            let keep = (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A) || "/-._~!$&'()*+,;=:@".utf8.contains(byte)
            if keep {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = Array("0123456789ABCDEF".utf8)
                encoded += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]], as: UTF8.self)
            }
        }
        return try ActivityURL(encoded)
    }
}
