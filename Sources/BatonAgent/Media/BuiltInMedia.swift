import BatonActivitySources
import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The media players as a Handoff app (issue 27 item 1), as ``BuiltInBrowser`` is the browser: an app every agent with
/// its media source on registers itself, with no bundle. The agent's ``MediaSource`` connects to the agent as this app
/// and publishes what a player plays as an `org.baton.media.playing` activity, through the same app socket and broker
/// as any app (A9). It has no executable: only the agent's own process connects as it (``Agent/inAgentApps``), and it
/// is never launched.
public enum BuiltInMedia {
    /// The app's bundle identifier.
    public static let bundleIdentifier = "org.baton.media"
    /// Its team: no other app's, so only another device's media app continues its activities (D1, D3).
    public static let teamIdentifier = "BATONMEDIA"
    /// Its name in `baton apps list --agent` and on the other device.
    public static let name = "Media player (MPRIS)"
    /// The activity type of a track playing.
    public static let activityType = "org.baton.media.playing"

    /// The keys of the activity's `userInfo`.
    public enum Key {
        /// The track's URL (a URL value: a `file:` one in a synced folder travels in its folder's form, C9).
        public static let url = "url"
        /// Where the player was, in microseconds, when read.
        public static let position = "positionMicroseconds"
        /// Its rate (1 normal speed).
        public static let rate = "rate"
        /// When the position was read, microseconds since 1970 on the originating device's clock: the continuing side
        /// adds the time since (at the rate, while playing).
        public static let readAt = "readAtMicroseconds"
        /// `Playing` or `Paused`.
        public static let status = "status"
        /// The track's length in microseconds, when known.
        public static let length = "lengthMicroseconds"
        /// The player's desktop file id (`mpv`), when it gives one: what the other device would launch.
        public static let desktopEntry = "desktopEntry"
        /// True when the originating player pauses once continued (A8): the continuing side then starts where it
        /// stopped, so nothing is skipped; absent, or false, it starts where that player would be by then.
        public static let originPauses = "originPauses"
        /// When the state was made, microseconds since 1970 on the originating device's clock: with ``readAt`` it says
        /// how old the position was then whatever the two clocks say (issue 27: clocks minutes apart).
        public static let savedAt = "savedAtMicroseconds"
    }

    /// The most time a state is taken to have spent between the two devices when their clocks disagree about it: a
    /// fetch takes milliseconds, so a longer gap (or a negative one) is the clocks' difference, not time passed.
    static let maximumTransitMicroseconds: Int64 = 2_000_000

    /// `registry` with the media app last, unless an installed bundle already has its identifier.
    static func adding(to registry: AppRegistry) -> AppRegistry {
        registry.addingInAgentApp(bundle: bundleIdentifier, name: name, team: teamIdentifier, activityTypes: [activityType])
    }

    /// A track as another device's activity describes it, checked as a player's own words are (issue 27 item 4):
    /// what is continued here.
    struct Track: Sendable, Hashable {
        var url: ActivityURL
        var playback: MPRISPlayback
        var desktopEntry: String?
        /// Whether the originating player pauses when this is continued (``Key/originPauses``).
        var originPauses = false
        /// When the state was made, on the originating device's clock (``Key/savedAt``), if it says.
        var savedAt: Int64?

        /// Reads `payload`'s `userInfo`.
        /// - Throws: ``ActivitySourceError`` when the URL, status, position or rate is missing or refused.
        init(_ payload: ActivityPayload) throws {
            let info = payload.userInfo
            let text: String
            switch info[Key.url] {
            case .url(let url)?: text = url.absoluteString
            case .string(let string)?: text = string
            default: throw ActivitySourceError(.invalidMetadata, "the track continued here has no URL")
            }
            url = try ActivityURL(text)
            func value(_ key: String) -> MPRISValue? {
                switch info[key] {
                case .string(let string)?: .string(string)
                case .integer(let number)?: .int64(number)
                case .unsignedInteger(let number)?: .uint64(number)
                case .real(let number)?: .double(number)
                default: nil
                }
            }
            guard case .int64(let readAt)? = value(Key.readAt) else {
                throw ActivitySourceError(.invalidMetadata, "the track continued here does not say when its position was read")
            }
            var length: Int64?
            if case .int64(let known)? = value(Key.length) { length = known }
            playback = try MPRISPlayback(
                status: value(Key.status) ?? .string(""),
                position: value(Key.position) ?? .string(""),
                rate: value(Key.rate),
                readAt: readAt,
                length: length
            )
            if case .string(let entry)? = info[Key.desktopEntry], DesktopEntry.isValidID(entry) { desktopEntry = entry }
            if case .bool(true)? = info[Key.originPauses] { originPauses = true }
            if case .integer(let saved)? = info[Key.savedAt] { savedAt = saved }
        }

        /// Where the player here starts, at `now` (wall microseconds here): where the originating player stopped, when
        /// it pauses on continuing, else the playback as read (its time running on). Both in this device's time: the
        /// position's age when the state was made is the other clock's own difference, and the time since then is
        /// taken from this clock only within ``maximumTransitMicroseconds``, so clocks apart move it by at most that.
        func start(at now: Int64) -> (playback: MPRISPlayback, resumes: Bool) {
            var local = playback
            if let savedAt {
                let age = max(0, savedAt.subtractingReportingOverflow(playback.readAt).partialValue)
                let transit = min(max(0, now.subtractingReportingOverflow(savedAt).partialValue), maximumTransitMicroseconds)
                local.readAt = now.subtractingReportingOverflow(min(age, MPRISMetadata.maximumMicroseconds) + transit).partialValue
            }
            guard originPauses, local.status == .playing else { return (local, false) }
            var stopped = local
            stopped.position = local.position(at: now)
            stopped.readAt = now
            return (stopped, true)
        }
    }

    /// The activity's state for `offer`, as an app's save gives it (C4).
    /// - Throws: `BatonCoreError` when the payload cannot be made (never for an offer the rules took).
    static func payload(_ offer: MediaFocus.Offer, originPauses: Bool = false, savedAt: Int64? = nil) throws -> ActivityPayload {
        var payload = try ActivityPayload(activityType: activityType)
        payload.title = offer.title
        var info: [String: PropertyList] = [
            Key.position: .integer(offer.playback.position),
            Key.rate: .real(offer.playback.rate),
            Key.readAt: .integer(offer.playback.readAt),
            Key.status: .string(offer.playback.status.rawValue),
        ]
        if let url = URL(string: offer.url.text) {
            info[Key.url] = .url(url)
            // E1: a web stream opens in the browser on a device with no media app.
            if offer.url.scheme != .file { try? payload.setWebpageURL(url) }
        }
        if let length = offer.length { info[Key.length] = .integer(length) }
        if let entry = offer.desktopEntry { info[Key.desktopEntry] = .string(entry) }
        if originPauses { info[Key.originPauses] = .bool(true) }
        if let savedAt { info[Key.savedAt] = .integer(savedAt) }
        payload.userInfo = info
        return payload
    }
}
