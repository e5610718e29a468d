import BatonCore

/// A URL that may become an activity (issue 27 items 1, 2, 4): `http:`, `https:` or `file:`, nothing else (no
/// `javascript:`, `data:`, `smb:`), no control characters, bounded; a `file:` URL names an absolute local path with no
/// `.` or `..` segment, so what it names is what its text says, and the synced-folder check (C9) sees the real path.
public struct ActivityURL: Sendable, Hashable, CustomStringConvertible {
    /// The schemes offered. A player's or recent file's other URLs stay on the device.
    public enum Scheme: String, Sendable, Hashable {
        case http, https, file
    }

    /// The longest URL taken, in UTF-8 bytes: above every real path (`PATH_MAX` 4096, three bytes a character once
    /// percent-encoded) and every web address a browser keeps, small enough to log and send.
    public static let maximumLength = 16 * 1024

    /// The URL as given (percent-encoded), its scheme lowercased.
    public let text: String
    /// Its scheme.
    public let scheme: Scheme
    /// For a `file:` URL, the local path it names, percent-decoded; nil for http(s).
    public let filePath: String?

    /// Checks `text`.
    /// - Throws: ``ActivitySourceError`` `urlRefused` saying why (scheme, length, control characters, a file URL on
    ///   another host, a relative path, `..`, a NUL or bad percent-encoding).
    public init(_ text: String) throws {
        guard text.utf8.count <= Self.maximumLength else {
            throw ActivitySourceError(.urlRefused, "a URL of \(Clipping.grouped(text.utf8.count)) bytes, more than \(Clipping.grouped(Self.maximumLength))")
        }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F || ($0.value >= 0x80 && $0.value < 0xA0) }) else {
            throw ActivitySourceError(.urlRefused, "the URL \(BatonCoreError.quoted(text)) holds spaces or control characters (a URL has them percent-encoded)")
        }
        guard let colon = text.firstIndex(of: ":"), let scheme = Scheme(rawValue: text[..<colon].lowercased()) else {
            throw ActivitySourceError(.urlRefused, "the URL \(BatonCoreError.quoted(text)) is not http, https or file: only those are offered")
        }
        let rest = text[text.index(after: colon)...]
        self.scheme = scheme
        self.text = scheme.rawValue + ":" + rest
        switch scheme {
        case .http, .https:
            guard rest.hasPrefix("//"), let host = rest.dropFirst(2).split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first,
                !host.isEmpty, !host.hasPrefix("@"), !host.hasPrefix(":")
            else {
                throw ActivitySourceError(.urlRefused, "the URL \(BatonCoreError.quoted(text)) names no host")
            }
            filePath = nil
        case .file:
            filePath = try Self.localPath(rest, url: text)
        }
    }

    /// `//host/path` or `/path` of a file URL, decoded: the host empty or `localhost`, the path absolute and plain.
    private static func localPath(_ rest: Substring, url: String) throws -> String {
        var encoded = rest
        if rest.hasPrefix("//") {
            let afterSlashes = rest.dropFirst(2)
            let slash = afterSlashes.firstIndex(of: "/") ?? afterSlashes.endIndex
            let host = afterSlashes[..<slash]
            guard host.isEmpty || host.lowercased() == "localhost" else {
                throw ActivitySourceError(.urlRefused, "the file URL \(BatonCoreError.quoted(url)) names another host")
            }
            encoded = afterSlashes[slash...]
        }
        if let cut = encoded.firstIndex(where: { $0 == "?" || $0 == "#" }) { encoded = encoded[..<cut] }
        guard encoded.hasPrefix("/"), let path = encoded.percentDecoded else {
            throw ActivitySourceError(.urlRefused, "the file URL \(BatonCoreError.quoted(url)) has no absolute path, or bad percent-encoding")
        }
        guard !path.utf8.contains(0) else { throw ActivitySourceError(.urlRefused, "the file URL \(BatonCoreError.quoted(url)) holds a NUL") }
        guard !path.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else {
            throw ActivitySourceError(.urlRefused, "the file URL \(BatonCoreError.quoted(url)) holds a '.' or '..' segment: the path must say where it is")
        }
        return path
    }

    public var description: String { text }
}
