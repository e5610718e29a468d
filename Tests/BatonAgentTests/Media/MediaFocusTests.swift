import BatonActivitySources
@testable import BatonAgent
import BatonCore
import BatonProtocol
import Foundation
import Testing

/// Issue 27 item 1: which player is the device's media activity, decided with no bus and no clock (``MediaFocus``).
@Suite("Issue 27 item 1: MediaFocus decides which track is offered")
struct MediaFocusTests {
    static let second: Int64 = 1_000_000
    static let mpv = "org.mpris.MediaPlayer2.mpv"
    static let vlc = "org.mpris.MediaPlayer2.vlc"

    static func properties(
        _ status: String,
        url: String = "https://radio.example/stream.ogg",
        title: String = "Song",
        artist: [String] = ["Band"],
        position: MPRISValue = .int64(5 * second),
        entry: String? = "mpv"
    ) -> MediaFocus.Properties {
        MediaFocus.Properties(
            player: ["PlaybackStatus": .string(status), "Position": position, "Rate": .double(1)],
            metadata: ["xesam:url": .string(url), "xesam:title": .string(title), "xesam:artist": .strings(artist), "mpris:length": .int64(200 * second)],
            desktopEntry: entry
        )
    }

    static func offered(_ actions: [MediaFocus.Action]) -> MediaFocus.Offer? {
        for case .offer(let offer) in actions { return offer }
        return nil
    }

    @Test("A player starting an http track offers it, titled 'Title — Artist', with its desktop entry and position as read")
    func playingOffers() throws {
        var focus = MediaFocus()
        _ = focus.playerAppeared(Self.mpv)
        let offer = try #require(Self.offered(focus.playerRead(Self.mpv, Self.properties("Playing"), now: 100 * Self.second)))
        #expect(offer.title == "Song — Band")
        #expect(offer.desktopEntry == "mpv")
        #expect(offer.url.text == "https://radio.example/stream.ogg")
        #expect(offer.playback.position == 5 * Self.second)
        #expect(offer.playback.readAt == 100 * Self.second)
        let payload = try BuiltInMedia.payload(offer)
        #expect(payload.activityType == "org.baton.media.playing")
        #expect(payload.userInfo[BuiltInMedia.Key.position] == .integer(5 * Self.second))
        #expect(payload.userInfo[BuiltInMedia.Key.readAt] == .integer(100 * Self.second))
        #expect(payload.userInfo[BuiltInMedia.Key.desktopEntry] == .string("mpv"))
        #expect(payload.webpageURL?.absoluteString == "https://radio.example/stream.ogg")
    }

    @Test("Paused: still offered until the limit, then withdrawn; stopped or gone: withdrawn at once")
    func pausedStoppedGone() throws {
        var focus = MediaFocus()
        _ = focus.playerRead(Self.mpv, Self.properties("Playing"), now: 0)
        let paused = focus.playerRead(Self.mpv, Self.properties("Paused"), now: 10 * Self.second)
        #expect(Self.offered(paused)?.playback.status == .paused)
        #expect(focus.nextDeadline == 10 * Self.second + MediaFocus.pausedOfferLimit)
        #expect(focus.timePassed(now: 10 * Self.second + MediaFocus.pausedOfferLimit - 1).isEmpty)
        #expect(focus.timePassed(now: 10 * Self.second + MediaFocus.pausedOfferLimit) == [.withdraw])
        // Playing again offers it again; stopping withdraws it at once.
        #expect(Self.offered(focus.playerRead(Self.mpv, Self.properties("Playing"), now: 20 * 60 * Self.second)) != nil)
        #expect(focus.playerRead(Self.mpv, Self.properties("Stopped"), now: 21 * 60 * Self.second) == [.withdraw])
        _ = focus.playerRead(Self.mpv, Self.properties("Playing"), now: 22 * 60 * Self.second)
        #expect(focus.playerVanished(Self.mpv, now: 23 * 60 * Self.second) == [.withdraw])
    }

    @Test("A9: the player that started last wins; when it stops, the one still playing is offered")
    func latestWins() throws {
        var focus = MediaFocus()
        _ = focus.playerRead(Self.mpv, Self.properties("Playing", title: "First"), now: 0)
        let second = try #require(Self.offered(focus.playerRead(Self.vlc, Self.properties("Playing", title: "Second", entry: "vlc"), now: Self.second)))
        #expect(second.player == Self.vlc)
        // mpv's position moving (a re-read) is not a start: vlc stays offered.
        #expect(Self.offered(focus.playerRead(Self.mpv, Self.properties("Playing", title: "First"), now: 2 * Self.second)) == nil)
        let back = try #require(Self.offered(focus.playerRead(Self.vlc, Self.properties("Stopped", title: "Second"), now: 3 * Self.second)))
        #expect(back.player == Self.mpv)
    }

    @Test("C9: a file track is offered only inside a synced folder")
    func filesOnlyInSyncedFolders() throws {
        var focus = MediaFocus(folders: SyncedFolders([try SyncedFolder(id: "music", path: "/home/me/Music")]))
        let outside = focus.playerRead(Self.mpv, Self.properties("Playing", url: "file:///tmp/song.ogg"), now: 0)
        #expect(Self.offered(outside) == nil)
        #expect(outside.contains { if case .refused = $0 { true } else { false } })
        let inside = focus.playerRead(Self.mpv, Self.properties("Playing", url: "file:///home/me/Music/song.ogg"), now: 0)
        #expect(Self.offered(inside)?.url.filePath == "/home/me/Music/song.ogg")
    }

    @Test("Issue 27 item 4: javascript:, position -1 or 2^63, a 1 MB title: nothing refused is offered, the title is cut")
    func hostilePlayers() throws {
        var focus = MediaFocus()
        for hostile in [
            Self.properties("Playing", url: "javascript:alert(1)"),
            Self.properties("Playing", url: "file:///home/me/../etc/passwd"),
            Self.properties("Playing", position: .int64(-1)),
            Self.properties("Playing", position: .uint64(1 << 63)),
        ] {
            let actions = focus.playerRead(Self.mpv, hostile, now: 0)
            #expect(Self.offered(actions) == nil)
            #expect(focus.offered == nil)
        }
        let huge = String(repeating: "é", count: 512 * 1024)
        let offer = try #require(Self.offered(focus.playerRead(Self.mpv, Self.properties("Playing", title: huge), now: 0)))
        #expect(offer.title.utf8.count <= MPRISMetadata.maximumTitleBytes + 64)
        // A valid track offered, then a refused one from the same player: withdrawn.
        #expect(focus.playerRead(Self.mpv, Self.properties("Playing", url: "javascript:alert(1)"), now: 1).contains(.withdraw))
    }

    @Test("A8, C5: where the other device's player starts: where this one stopped when it pauses on continuing (nothing skipped), else where it is by then")
    func continuedStartsWhereStopped() throws {
        var focus = MediaFocus()
        let offer = try #require(Self.offered(focus.playerRead(Self.mpv, Self.properties("Playing"), now: 100 * Self.second)))
        // The origin pauses when told continued: delivered at 102 s, the player here starts at 7 s whenever it loads.
        let pausing = try BuiltInMedia.Track(try BuiltInMedia.payload(offer, originPauses: true))
        let start = pausing.start(at: 102 * Self.second)
        #expect(start.resumes && start.playback.position == 7 * Self.second && start.playback.readAt == 102 * Self.second)
        // An origin that plays on (the option off, or an older agent that does not say): where it would be by then.
        let playingOn = try BuiltInMedia.Track(try BuiltInMedia.payload(offer))
        #expect(!playingOn.start(at: 102 * Self.second).resumes)
        #expect(playingOn.start(at: 102 * Self.second).playback.position(at: 103 * Self.second) == 8 * Self.second)
    }

    @Test("C5: two devices' clocks ten minutes apart: the position's age is the originating clock's own, the time between the devices at most 2 s")
    func clocksApart() throws {
        var focus = MediaFocus()
        let offer = try #require(Self.offered(focus.playerRead(Self.mpv, Self.properties("Playing"), now: 100 * Self.second)))
        // Read at 100 s, saved at 101 s, on a clock ten minutes ahead of this one; delivered here 50 ms later: the
        // second between the read and the save counts (the other clock measured it), the time between the devices
        // looks negative here and counts as none: 6 s, not 5 s less ten minutes (clamped to 0).
        let track = try BuiltInMedia.Track(try BuiltInMedia.payload(offer, savedAt: 101 * Self.second))
        let here = 101 * Self.second + 50_000 - 600 * Self.second
        #expect(track.start(at: here).playback.position(at: here) == 6 * Self.second)
        // This clock ahead instead: the time between counts as 2 s at most, not ten minutes.
        let ahead = 101 * Self.second + 600 * Self.second
        #expect(track.start(at: ahead).playback.position(at: ahead) == 8 * Self.second)
    }

    @Test("C5, issue 27 item 4: a continued state is read back as a player's words are: javascript:, position -1, no read time open nothing")
    func continuedStateChecked() throws {
        var focus = MediaFocus()
        let offer = try #require(Self.offered(focus.playerRead(Self.mpv, Self.properties("Playing"), now: 100 * Self.second)))
        let track = try BuiltInMedia.Track(try BuiltInMedia.payload(offer))
        #expect(track.url.text == "https://radio.example/stream.ogg")
        #expect(track.playback.position(at: 102 * Self.second) == 7 * Self.second)
        #expect(track.desktopEntry == "mpv")
        for (key, value) in [
            (BuiltInMedia.Key.url, PropertyList.string("javascript:alert(1)")),
            (BuiltInMedia.Key.position, .integer(-1)),
            (BuiltInMedia.Key.rate, .real(.infinity)),
            (BuiltInMedia.Key.status, .string("Exploding")),
        ] {
            var payload = try BuiltInMedia.payload(offer)
            payload.userInfo[key] = value
            #expect(throws: ActivitySourceError.self, "\(key)") { try BuiltInMedia.Track(payload) }
        }
        var payload = try BuiltInMedia.payload(offer)
        payload.userInfo[BuiltInMedia.Key.readAt] = nil
        #expect(throws: ActivitySourceError.self) { try BuiltInMedia.Track(payload) }
        payload = try BuiltInMedia.payload(offer)
        payload.userInfo[BuiltInMedia.Key.desktopEntry] = .string("../../bin/sh")
        #expect(try BuiltInMedia.Track(payload).desktopEntry == nil)
    }
}
