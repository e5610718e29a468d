import BatonActivitySources
import Testing

/// A media player's metadata and position as they come off the session bus (issue 27 items 1, 4): what mpv and
/// Spotify send, the hostile player of item 4 (1 MB title, `javascript:`, `..`, a position of -1 or 2^63), and where
/// the track is now.
@Suite("MPRIS metadata and position (issue 27 items 1, 4)")
struct MPRISMetadataTests {
    @Test("what mpv-mpris sends for a local file: title, artists, URL, length; the title shown as Title — Artist")
    func mpv() throws {
        let metadata = try MPRISMetadata([
            "mpris:trackid": .string("/io/mpv/tracklist/0"), "xesam:title": .string("Clair de lune"),
            "xesam:artist": .strings(["Claude Debussy", "Pianist"]), "xesam:album": .string("Suite bergamasque"),
            "xesam:url": .string("file:///home/alex/Music/clair%20de%20lune.ogg"), "mpris:length": .int64(301_000_000),
            "mpris:artUrl": .string("data:image/png;base64,AAAA"),
        ])
        #expect(metadata.trackID == "/io/mpv/tracklist/0" && metadata.length == 301_000_000)
        #expect(metadata.url?.filePath == "/home/alex/Music/clair de lune.ogg")
        #expect(metadata.displayTitle == "Clair de lune — Claude Debussy, Pianist")
    }

    @Test("Spotify's shapes: uint64 length, one artist as a string; no title shows the file name; NoTrack is no track")
    func shapes() throws {
        let spotify = try MPRISMetadata(["mpris:length": .uint64(200_000_000), "xesam:artist": .string("Band"), "xesam:title": .string("Song")])
        #expect(spotify.length == 200_000_000 && spotify.displayTitle == "Song — Band")
        let bare = try MPRISMetadata(["xesam:url": .string("https://radio.example/live/stream.mp3"), "mpris:length": .int64(-1),
                                      "mpris:trackid": .string(MPRISMetadata.noTrack)])
        #expect(bare.displayTitle == "stream.mp3" && bare.length == nil && bare.trackID == nil && bare.url?.scheme == .https)
    }

    @Test("a hostile title: 1 MB clipped to 512 bytes at a whole character, newlines and bidi controls neutralized")
    func hostileTitle() throws {
        let huge = String(repeating: "é", count: 500_000)
        let metadata = try MPRISMetadata(["xesam:title": .string(huge), "xesam:artist": .strings(Array(repeating: "x\u{202E}y\nz", count: 10_000))])
        #expect(metadata.title?.utf8.count == 512 && metadata.title?.allSatisfy { $0 == "é" } == true)
        #expect(metadata.artists.count == MPRISMetadata.maximumArtists && metadata.artists[0] == "xy z")
    }

    @Test("refused URLs and wrong types", arguments: [
        ("xesam:url", MPRISValue.string("javascript:alert(1)"), "activitySourceURLRefused"),
        ("xesam:url", .string("file:///home/a/Sync/../../../etc/passwd"), "activitySourceURLRefused"),
        ("xesam:url", .string("file:///home/a/%2e%2e/b"), "activitySourceURLRefused"),
        ("xesam:url", .string("file://evil.example/share/x"), "activitySourceURLRefused"),
        ("xesam:url", .string("data:audio/ogg;base64,AAAA"), "activitySourceURLRefused"),
        ("xesam:url", .string("https://a.example/x y"), "activitySourceURLRefused"),
        ("xesam:url", .string("https:///nohost"), "activitySourceURLRefused"),
        ("xesam:url", .string("file:///a%00b"), "activitySourceURLRefused"),
        ("xesam:url", .strings(["https://a.example/"]), "activitySourceInvalidMetadata"),
        ("xesam:title", .int64(3), "activitySourceInvalidMetadata"),
        ("xesam:artist", .bool(true), "activitySourceInvalidMetadata"),
        ("mpris:length", .double(1.5), "activitySourceInvalidMetadata"),
        ("mpris:length", .uint64(1 << 63), "activitySourceInvalidMetadata"),
        ("mpris:trackid", .string("not/a/path"), "activitySourceInvalidMetadata"),
        ("mpris:trackid", .string("/a//b"), "activitySourceInvalidMetadata"),
    ])
    func refused(key: String, value: MPRISValue, code: String) {
        #expect(errorCode { _ = try MPRISMetadata([key: value]) }?.name == code)
    }

    @Test("more entries than the limit is refused")
    func tooMany() {
        var metadata: [String: MPRISValue] = [:]
        for index in 0...MPRISMetadata.maximumEntries { metadata["x:\(index)"] = .bool(true) }
        #expect(errorCode { _ = try MPRISMetadata(metadata) } == .tooLarge)
    }

    @Test("position, rate and status: -1, 2^63, NaN, 0 and unknown statuses refused; past the end clamped")
    func playback() throws {
        let good = try MPRISPlayback(status: .string("Playing"), position: .int64(5_000_000), rate: .double(1.5), readAt: 1_000)
        #expect(good.status == .playing && good.position == 5_000_000 && good.rate == 1.5)
        #expect(try MPRISPlayback(status: .string("Paused"), position: .uint64(7), rate: nil, readAt: 0).rate == 1)
        #expect(try MPRISPlayback(status: .string("Playing"), position: .int64(310_000_000), rate: nil, readAt: 0, length: 300_000_000).position == 300_000_000)
        let refused: [(MPRISValue, MPRISValue, MPRISValue?)] = [
            (.string("Playing"), .int64(-1), nil), (.string("Playing"), .uint64(1 << 63), nil), (.string("Playing"), .int64(.max), nil),
            (.string("Playing"), .double(3), nil), (.string("Playing"), .int64(0), .double(.nan)), (.string("Playing"), .int64(0), .double(0)),
            (.string("Playing"), .int64(0), .double(-1)), (.string("Playing"), .int64(0), .double(.infinity)),
            (.string("Playing"), .int64(0), .double(101)), (.string("Playing"), .int64(0), .int64(1)), (.string("playing"), .int64(0), nil),
            (.int64(1), .int64(0), nil),
        ]
        for (status, position, rate) in refused {
            #expect(errorCode { _ = try MPRISPlayback(status: status, position: position, rate: rate, readAt: 0) } == .invalidMetadata, "\(status) \(position) \(String(describing: rate))")
        }
    }

    @Test("the position now: advanced at the rate while playing, held while paused, within 0 and the length")
    func positionNow() throws {
        let playing = try MPRISPlayback(status: .string("Playing"), position: .int64(10_000_000), rate: .double(2), readAt: 1_000_000_000)
        #expect(playing.position(at: 1_000_000_000) == 10_000_000)
        #expect(playing.position(at: 1_003_000_000) == 16_000_000)
        // A clock a little behind: no time passed, never backwards.
        #expect(playing.position(at: 999_000_000) == 10_000_000)
        #expect(playing.position(at: 2_000_000_000, length: 60_000_000) == 60_000_000)
        // The extremes of the clock do not overflow.
        #expect(playing.position(at: .max) == MPRISMetadata.maximumMicroseconds)
        #expect(playing.position(at: .min) == 10_000_000)
        let far = try MPRISPlayback(status: .string("Playing"), position: .int64(0), rate: nil, readAt: .min)
        #expect(far.position(at: .max) == MPRISMetadata.maximumMicroseconds)
        let paused = try MPRISPlayback(status: .string("Paused"), position: .int64(10_000_000), rate: nil, readAt: 0)
        #expect(paused.position(at: 50_000_000) == 10_000_000)
    }

    @Test("garbage: random metadata never traps, and every error is typed")
    func garbage() {
        var generator = SystemRandomNumberGenerator()
        let keys = ["mpris:trackid", "xesam:title", "xesam:artist", "xesam:url", "mpris:length", "other"]
        let texts = ["", "/", "/a/b", "file:///a/../b", "https://x.example/", "javascript:x", "\u{0}\u{202E}", "%", "file:", "http://",
                     String(repeating: "x", count: 20_000), "file:///%ZZ", "FILE:///A", "/org/mpris/MediaPlayer2/TrackList/NoTrack"]
        func value() -> MPRISValue {
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: .string(texts.randomElement(using: &generator) ?? "")
            case 1: .strings((0..<Int.random(in: 0..<40, using: &generator)).map { _ in texts.randomElement(using: &generator) ?? "" })
            case 2: .int64(Int64.random(in: .min ... .max, using: &generator))
            case 3: .uint64(UInt64.random(in: 0 ... .max, using: &generator))
            case 4: .double([Double.nan, .infinity, -0.0, 1, 1e308, -5].randomElement(using: &generator) ?? 0)
            default: .bool(Bool.random(using: &generator))
            }
        }
        var decoded = 0
        for _ in 0..<5000 {
            var metadata: [String: MPRISValue] = [:]
            for key in keys where Bool.random(using: &generator) { metadata[key] = value() }
            do {
                let track = try MPRISMetadata(metadata)
                #expect((track.title?.utf8.count ?? 0) <= MPRISMetadata.maximumTitleBytes)
                decoded += 1
            } catch is ActivitySourceError {}
            catch { Issue.record("untyped error \(error)") }
            let now = Int64.random(in: .min ... .max, using: &generator)
            if let playback = try? MPRISPlayback(status: value(), position: value(), rate: Bool.random() ? nil : value(), readAt: now, length: Int64.random(in: -5...1_000, using: &generator)) {
                let position = playback.position(at: Int64.random(in: .min ... .max, using: &generator))
                #expect(position >= 0 && position <= MPRISMetadata.maximumMicroseconds)
            }
        }
        #expect(decoded > 100)
    }
}
