import BatonActivitySources
import BatonProtocol

/// Which media player, if any, is this device's media activity (issue 27 item 1): a pure state machine, with no bus and
/// no clock. The media source feeds it what the session bus says (a player appeared, its properties as read, it
/// vanished) and the time, in microseconds since 1970; it says what to offer, or to stop offering.
///
/// The rules: a player offers its track while it plays one whose `xesam:url` is http(s), or a `file:` inside a synced
/// folder (C9: the other device opens it at its own path); the latest player to start playing such a track wins (A9:
/// one current activity). A track paused stays offered for ``pausedOfferLimit`` (a pause to answer the door), then
/// goes; stopped, gone, or changed to a track the rules refuse, it goes at once. What a player says is decoded by
/// ``MPRISMetadata`` and ``MPRISPlayback``: a player whose title, URL, position or rate they refuse offers nothing.
struct MediaFocus: Sendable {
    /// How long a paused track stays offered: long enough for a pause in the room, short enough that a player left
    /// paused overnight is not what another device offers in the morning.
    static let pausedOfferLimit: Int64 = 10 * 60 * 1_000_000

    /// What a player said when last read: its `org.mpris.MediaPlayer2.Player` properties, `Metadata` apart, and the
    /// `DesktopEntry` of `org.mpris.MediaPlayer2`.
    struct Properties: Sendable, Hashable {
        var player: [String: MPRISValue] = [:]
        var metadata: [String: MPRISValue]?
        var desktopEntry: String?
    }

    /// What is offered: the track of one player, where it was when read.
    struct Offer: Sendable, Hashable {
        /// The player's bus name (`org.mpris.MediaPlayer2.mpv`).
        var player: String
        /// The player's desktop file id, checked (`mpv`), when it gives one.
        var desktopEntry: String?
        /// "Title — Artist".
        var title: String
        var url: ActivityURL
        /// The track's length in microseconds, when known.
        var length: Int64?
        var playback: MPRISPlayback

        /// Whether `other` is the same activity (another position of the same track) rather than a new one.
        func isSameTrack(as other: Offer) -> Bool {
            player == other.player && url == other.url && title == other.title
        }
    }

    /// What to do next.
    enum Action: Sendable, Hashable {
        /// Offer this (a new track, or the same one with a new position or status).
        case offer(Offer)
        /// Offer nothing any more.
        case withdraw
        /// What `player` said is refused by the rules, and why (for the log, once per reason).
        case refused(player: String, reason: String)
    }

    /// One player as last read.
    private struct Player: Sendable, Hashable {
        /// Its track as it could be offered, when the rules take it (whether or not it plays).
        var candidate: Offer?
        /// When it last started playing its track (the latest wins).
        var startedAt: Int64?
        /// When it was paused, while it is.
        var pausedAt: Int64?
        /// Why the rules refused it when last read.
        var refusal: String?
    }

    private var players: [String: Player] = [:]
    private(set) var offered: Offer?
    /// The synced folders a `file:` track must be inside (C9).
    private(set) var folders: SyncedFolders

    init(folders: SyncedFolders = SyncedFolders()) {
        self.folders = folders
    }

    /// When ``timePassed(now:)`` next has something to decide (a paused track's limit), if ever.
    var nextDeadline: Int64? {
        guard let offered, let paused = players[offered.player]?.pausedAt else { return nil }
        return paused + Self.pausedOfferLimit
    }

    /// The players known, by bus name.
    var playerNames: [String] { players.keys.sorted() }

    /// The player named `name` appeared on the bus; it offers nothing before it is read.
    mutating func playerAppeared(_ name: String) -> [Action] {
        if players[name] == nil { players[name] = Player() }
        return []
    }

    /// The player named `name` left the bus (it quit, or crashed).
    mutating func playerVanished(_ name: String, now: Int64) -> [Action] {
        players[name] = nil
        return decide(now: now)
    }

    /// The synced folders changed: a `file:` track may be offered, or not, from the next read.
    mutating func foldersChanged(_ folders: SyncedFolders) {
        self.folders = folders
    }

    /// The player named `name` was read at `now`.
    mutating func playerRead(_ name: String, _ properties: Properties, now: Int64) -> [Action] {
        var player = players[name] ?? Player()
        var actions: [Action] = []
        let previous = player.candidate
        do {
            player.candidate = try candidate(name, properties, now: now)
            player.refusal = nil
        } catch {
            let reason = "\(error)"
            if player.refusal != reason { actions.append(.refused(player: name, reason: reason)) }
            player.refusal = reason
            player.candidate = nil
        }
        let current = player.candidate
        let newTrack = current.map { current in previous.map { !$0.isSameTrack(as: current) } ?? true } ?? false
        switch current?.playback.status {
        case .playing?:
            // Starting to play, or playing another track, is what the person did last.
            if previous?.playback.status != .playing || newTrack { player.startedAt = now }
            player.pausedAt = nil
        case .paused?:
            if player.pausedAt == nil || newTrack { player.pausedAt = now }
        case .stopped?, nil:
            player.startedAt = nil
            player.pausedAt = nil
        }
        players[name] = player
        return actions + decide(now: now)
    }

    /// Time passed: a track paused too long stops being offered.
    mutating func timePassed(now: Int64) -> [Action] {
        decide(now: now)
    }

    /// The player's track as an offer, when the rules take it.
    private func candidate(_ name: String, _ properties: Properties, now: Int64) throws -> Offer? {
        guard let raw = properties.metadata else { return nil }
        let metadata = try MPRISMetadata(raw)
        guard let status = properties.player["PlaybackStatus"] else { return nil }
        // Position is optional in practice (a stream): the start then.
        let playback = try MPRISPlayback(
            status: status,
            position: properties.player["Position"] ?? .int64(0),
            rate: properties.player["Rate"],
            readAt: now,
            length: metadata.length
        )
        guard let url = metadata.url else { return nil }
        if url.scheme == .file {
            // C9: a file the other device has too, at its own path; any other file stays here.
            guard let path = url.filePath, folders.folder(containing: path) != nil else {
                throw ActivitySourceError(.urlRefused, "the file \(url.filePath ?? url.text) is in no synced folder, so no other device has it")
            }
        }
        let entry = properties.desktopEntry.flatMap { DesktopEntry.isValidID($0) ? $0 : nil }
        return Offer(player: name, desktopEntry: entry, title: metadata.displayTitle, url: url, length: metadata.length, playback: playback)
    }

    /// The offer the rules give now, and the actions that take the device there.
    private mutating func decide(now: Int64) -> [Action] {
        let playing = players
            .compactMap { name, player -> (name: String, started: Int64, offer: Offer)? in
                guard let offer = player.candidate, offer.playback.status == .playing else { return nil }
                return (name, player.startedAt ?? 0, offer)
            }
            // The latest to start wins; the name breaks a tie, so the choice never depends on the dictionary's order.
            .max { ($0.started, $1.name) < ($1.started, $0.name) }
        var next: Offer?
        if let playing {
            next = playing.offer
        } else if let offered, let player = players[offered.player], let candidate = player.candidate,
            candidate.playback.status == .paused, candidate.isSameTrack(as: offered),
            let paused = player.pausedAt, now - paused < Self.pausedOfferLimit
        {
            next = candidate
        }
        guard next != offered else { return [] }
        offered = next
        return [next.map(Action.offer) ?? .withdraw]
    }
}
