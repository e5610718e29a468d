import BatonCore

/// A media player's current track as MPRIS2 publishes it (`org.mpris.MediaPlayer2.Player.Metadata`), decoded and
/// checked before it can become an activity (issue 27 items 1, 4).
///
/// A player is any program on the session bus, so its metadata is hostile input: text is clipped to named sizes, the
/// URL must pass ``ActivityURL`` (http, https, or a plain local file), numbers must be in range, and wrong types are
/// refused with ``ActivitySourceError``, never a trap (Fuzz/MPRISMetadataFuzzer.swift).
public struct MPRISMetadata: Sendable, Hashable {
    /// The most entries taken in one metadata dictionary: players send 5 to 20 (`xesam:*`, `mpris:*`, their own).
    public static let maximumEntries = 256
    /// The longest title kept, in UTF-8 bytes, cut at a whole character: a title is one line in a notification.
    public static let maximumTitleBytes = 512
    /// The most artists kept, and the longest name of each, in bytes.
    public static let maximumArtists = 16
    public static let maximumArtistBytes = 256
    /// The longest track id (a D-Bus object path) taken, in bytes.
    public static let maximumTrackIDLength = 1024
    /// The longest duration or position taken, in microseconds (ten years): past any recording or stream, and exact in
    /// a `Double` (under 2^53), so the position arithmetic never loses a microsecond or overflows.
    public static let maximumMicroseconds: Int64 = 315_360_000_000_000
    /// The track id MPRIS uses for "no track".
    public static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"

    /// `mpris:trackid`: an object path naming the track in this player; nil when absent or `NoTrack`.
    public var trackID: String?
    /// `xesam:title`, clipped to ``maximumTitleBytes``, control characters as spaces, bidirectional controls removed.
    public var title: String?
    /// `xesam:artist`, at most ``maximumArtists``, each cleaned as the title is.
    public var artists: [String]
    /// `xesam:url`, checked; nil when the player gives none.
    public var url: ActivityURL?
    /// `mpris:length` in microseconds; nil when absent, zero or negative (a stream, or unknown).
    public var length: Int64?

    /// "Title — Artist, Artist": what a person sees on the other device (issue 27 item 1); the URL's last path
    /// segment when there is no title.
    public var displayTitle: String {
        let title = self.title ?? url.map { String($0.text.split(separator: "/").last ?? Substring($0.text)) } ?? ""
        return artists.isEmpty ? title : "\(title) — \(artists.joined(separator: ", "))"
    }

    /// Decodes a metadata dictionary.
    /// - Throws: ``ActivitySourceError`` `tooLarge` for more than ``maximumEntries`` entries, `invalidMetadata` for a
    ///   known key of the wrong type or a length out of range, a track id that is not an object path; `urlRefused`
    ///   for a URL ``ActivityURL`` refuses (`javascript:`, `..`).
    public init(_ metadata: [String: MPRISValue]) throws {
        guard metadata.count <= Self.maximumEntries else {
            throw ActivitySourceError(.tooLarge, "a player's metadata of \(metadata.count) entries, more than \(Self.maximumEntries)")
        }
        func wrongType(_ key: String, _ value: MPRISValue, _ expected: String) -> ActivitySourceError {
            ActivitySourceError(.invalidMetadata, "the player's \(key) is \(value.typeName), not \(expected)")
        }
        switch metadata["mpris:trackid"] {
        case nil:
            trackID = nil
        case .string(let path)?:
            guard Self.isObjectPath(path) else {
                throw ActivitySourceError(.invalidMetadata, "the player's mpris:trackid \(BatonCoreError.quoted(path)) is not a D-Bus object path")
            }
            trackID = path == Self.noTrack ? nil : path
        case let other?:
            throw wrongType("mpris:trackid", other, "an object path")
        }
        switch metadata["xesam:title"] {
        case nil: title = nil
        case .string(let text)?: title = Self.cleaned(text, maximumBytes: Self.maximumTitleBytes)
        case let other?: throw wrongType("xesam:title", other, "a string")
        }
        // The specification says `as`; some players send one string.
        switch metadata["xesam:artist"] {
        case nil: artists = []
        case .string(let name)?: artists = [Self.cleaned(name, maximumBytes: Self.maximumArtistBytes)]
        case .strings(let names)?: artists = names.prefix(Self.maximumArtists).map { Self.cleaned($0, maximumBytes: Self.maximumArtistBytes) }
        case let other?: throw wrongType("xesam:artist", other, "an array of strings")
        }
        artists.removeAll { $0.isEmpty }
        switch metadata["xesam:url"] {
        case nil: url = nil
        case .string(let text)?: url = try ActivityURL(text)
        case let other?: throw wrongType("xesam:url", other, "a string")
        }
        // The specification says `x`; Spotify and others send `t`.
        switch metadata["mpris:length"] {
        case nil: length = nil
        case .int64(let value)?: length = try Self.duration(value > 0 ? UInt64(value) : 0, key: "mpris:length")
        case .uint64(let value)?: length = try Self.duration(value, key: "mpris:length")
        case let other?: throw wrongType("mpris:length", other, "an integer")
        }
    }

    /// Microseconds within ``maximumMicroseconds``; nil for 0 (unknown).
    static func duration(_ value: UInt64, key: String) throws -> Int64? {
        guard value <= UInt64(maximumMicroseconds) else {
            throw ActivitySourceError(.invalidMetadata, "the player's \(key) of \(value) µs is more than ten years")
        }
        return value == 0 ? nil : Int64(value)
    }

    /// `text` with control characters as spaces, bidirectional controls removed, cut at a whole character.
    static func cleaned(_ text: String, maximumBytes: Int) -> String {
        // Cut first (O(maximumBytes) however long the text), then clean what is kept.
        let kept = text.prefix(utf8Bytes: maximumBytes)
        var scalars = String.UnicodeScalarView()
        for scalar in kept.unicodeScalars {
            scalars.append(scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) ? " " : scalar)
        }
        return String(scalars).neutralizingBidiControls().trimmingWhitespace()
    }

    /// D-Bus's object path syntax: `/`, or `/` then segments of `[A-Za-z0-9_]+` joined by `/`.
    static func isObjectPath(_ path: String) -> Bool {
        guard path.utf8.count <= maximumTrackIDLength, path.hasPrefix("/") else { return false }
        if path == "/" { return true }
        return path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).allSatisfy { segment in
            !segment.isEmpty && segment.utf8.allSatisfy { ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
        }
    }
}
