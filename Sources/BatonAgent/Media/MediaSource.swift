import BatonActivitySources
import BatonClient
import BatonCore
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The media players as this device's current activity (issue 27 item 1; A9): the service that follows the players on
/// the session bus (``MediaBus``), lets ``MediaFocus`` decide which track is offered, and publishes it as the built-in
/// app ``BuiltInMedia`` over the agent's app socket, the way `baton browser-host` publishes the focused tab: the same
/// admission, broker and adverts as any app. A save (another device continuing it, C4) is answered with the track's
/// URL, position, rate and the time the position was read (``BuiltInMedia/payload(_:)``).
///
/// Everything it decides is in one loop over one stream (bus events, the agent's messages, ticks), so its state is
/// that loop's own. No session bus, or no libsystemd, is a log line: the agent runs on without it.
struct MediaSource: Service, CustomStringConvertible {
    /// The session bus (a D-Bus address).
    let address: String
    /// The agent's app socket.
    let socketPath: String
    /// The synced folders now (C9: a `file:` track outside them is not offered).
    let folders: @Sendable () -> SyncedFolders
    let clock: AgentClock
    /// Whether the player here pauses once its track plays on another device (A8).
    let pausesWhenContinued: Bool
    /// The applications installed here (the XDG folders the recent documents read too): the player a continued track's
    /// desktop entry names is started from there when none runs.
    let applications: DesktopApplications
    /// The environment a player started here gets (this bus as its session bus).
    let environment: [String: String]
    let logger: Logger
    var description: String { "media players" }

    /// How often time is looked at while a paused track is offered (its limit is minutes; this is its resolution).
    static let tick: Duration = .seconds(5)

    enum Input: Sendable {
        case bus(MediaBus.Event)
        case agent(IPCMessage?)
        case tick
    }

    func run() async {
        let (inputs, input) = AsyncStream.makeStream(of: Input.self)
        let bus: MediaBus
        do {
            bus = try MediaBus(address: address) { input.yield(.bus($0)) }
            try bus.start()
        } catch {
            logger.info("media players are not followed: \(error)")
            return
        }
        bus.send(.connect)
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: Self.tick)
                        input.yield(.tick)
                    }
                }
                var loop = Loop(source: self, bus: bus)
                for await next in inputs {
                    await loop.handle(next, input: input)
                    // A new connection's messages come in through a child of the group, which ends with it.
                    if let messages = loop.unforwarded.take() {
                        group.addTask {
                            for await message in messages { input.yield(.agent(message)) }
                            input.yield(.agent(nil))
                        }
                    }
                }
                loop.stop()
                group.cancelAll()
            }
        }
        input.finish()
        await bus.finish()
    }

    /// The loop's state: the decisions, and the agent connection the offer is published on.
    struct Loop {
        let source: MediaSource
        let bus: MediaBus
        var focus: MediaFocus
        var client: AgentClient?
        /// What is published, under which activity number (a new number per track: A9's one current activity).
        var published: (activity: UInt64, offer: MediaFocus.Offer)?
        var nextActivity: UInt64 = 1
        /// The offer to publish once connected.
        var wanted: MediaFocus.Offer?
        /// A track continued here in a player started for it: positioned when a player appears on the bus.
        var launched: (url: String, playback: MPRISPlayback, resumes: Bool, until: Int64)?
        /// The players started here, until they end and are reaped.
        var children: [pid_t] = []
        /// The messages of a connection just made, for the service's group to forward into its stream.
        var unforwarded: AsyncStream<IPCMessage>?

        init(source: MediaSource, bus: MediaBus) {
            self.source = source
            self.bus = bus
            focus = MediaFocus(folders: source.folders())
        }

        var now: Int64 { Int64(clamping: source.clock.wall()) * 1000 }

        mutating func handle(_ input: Input, input stream: AsyncStream<Input>.Continuation) async {
            switch input {
            case .bus(let event):
                await busEvent(event, input: stream)
            case .agent(let message?):
                agentMessage(message)
            case .agent(nil):
                // The agent closed the connection (it is stopping, or refused us): publish again when it is back.
                client = nil
                published = nil
            case .tick:
                if let deadline = focus.nextDeadline, now >= deadline { perform(focus.timePassed(now: now)) }
                children = children.filter(Launcher.isRunning)
            }
        }

        mutating func busEvent(_ event: MediaBus.Event, input: AsyncStream<Input>.Continuation) async {
            switch event {
            case .connected:
                source.logger.info("following media players on \(source.address)")
                // Connected from the start, so a track continued from another device finds this app running (C5).
                await connect(input: input)
            case .connectFailed(let why):
                source.logger.info("media players are not followed: \(why)")
            case .disconnected(let why):
                source.logger.info("media players are no longer followed: \(why)")
                for name in focus.playerNames { perform(focus.playerVanished(name, now: now)) }
            case .appeared(let name):
                perform(focus.playerAppeared(name))
                if let waiting = launched {
                    launched = nil
                    if now < waiting.until { bus.send(.position(player: name, url: waiting.url, playback: waiting.playback, resumes: waiting.resumes)) }
                }
            case .vanished(let name):
                perform(focus.playerVanished(name, now: now))
            case .read(let name, let properties):
                focus.foldersChanged(source.folders())
                perform(focus.playerRead(name, properties, now: now))
            case .readFailed(let name, let why):
                source.logger.debug("media player \(name) could not be read: \(why)")
            case .positioned(let name, let position):
                source.logger.info("the track continued here plays in \(name) from \(position / 1000) ms")
            case .openFailed(let name, let why):
                source.logger.info("the track continued here could not be opened in \(name): \(why)")
            }
            await publish(input: input)
        }

        mutating func perform(_ actions: [MediaFocus.Action]) {
            for action in actions {
                switch action {
                case .offer(let offer):
                    wanted = offer
                case .withdraw:
                    wanted = nil
                case .refused(let player, let reason):
                    source.logger.info("media player \(player) is not offered: \(reason)")
                }
            }
        }

        /// Connects to the agent as ``BuiltInMedia``, unless connected.
        mutating func connect(input: AsyncStream<Input>.Continuation) async {
            guard client == nil else { return }
            do {
                client = try await AgentClient.connect(path: source.socketPath, bundleIdentifier: BuiltInMedia.bundleIdentifier, timeout: 5)
            } catch {
                source.logger.info("media players cannot publish to the agent: \(error)")
                return
            }
            unforwarded = client?.messages
        }

        /// Brings what is published to what is wanted: connects first when needed.
        mutating func publish(input: AsyncStream<Input>.Continuation) async {
            if wanted != nil { await connect(input: input) }
            guard let client else { return }
            switch (published, wanted) {
            case (nil, nil):
                return
            case (let shown?, nil):
                client.send(.resignCurrent(activity: shown.activity))
                published = nil
            case (let shown, let offer?):
                // The same track keeps its activity, and what a save gives (a new position, a pause) is all that
                // changes: nothing to advertise again. Another track is a new activity.
                if let shown, shown.offer.isSameTrack(as: offer) {
                    published = (shown.activity, offer)
                    return
                }
                let activity = nextActivity
                nextActivity += 1
                published = (activity, offer)
                // The player's desktop entry, and a file's likeliest type by its name: the other device names the player
                // that will play it, that one or the default for the type where it is not installed (issue 27 item 3).
                let name = offer.url.scheme == .file ? URL(string: offer.url.text)?.lastPathComponent : nil
                let notice = ActivityNotice(
                    activityType: BuiltInMedia.activityType, title: offer.title, desktopEntry: offer.desktopEntry,
                    mimeType: name.flatMap { source.applications.mimeTypes(forFileName: $0).first }
                )
                client.send(.becomeCurrent(activity: activity, notice))
            }
        }

        mutating func agentMessage(_ message: IPCMessage) {
            switch message {
            case .save(let request, let activity, _):
                guard let published, published.activity == activity else {
                    client?.send(.saveFailed(request: request, message: "that track is no longer playing"))
                    return
                }
                do {
                    client?.send(.saved(request: request, payload: try BuiltInMedia.payload(published.offer, originPauses: source.pausesWhenContinued, savedAt: MediaBus.wallMicroseconds()).encoded()))
                } catch {
                    client?.send(.saveFailed(request: request, message: "the track cannot be described: \(error)"))
                }
            case .continued(let activity):
                // A8: the other device plays it now; the player here pauses (as an app closes what was continued).
                guard let published, published.activity == activity else { return }
                source.logger.info("the track playing here was continued on another device")
                if source.pausesWhenContinued, published.offer.playback.status == .playing { bus.send(.pause(player: published.offer.player)) }
            case .notCurrent(let activity):
                // Who wins (A9; issue 27 item 3): another app's activity took over. The same track playing on (a new
                // position, a pause) is nobody's new action and is never announced again (``publish(input:)``); a new
                // track is a new activity, and takes over.
                guard published?.activity == activity else { return }
                source.logger.debug("the track playing here is no longer this device's current activity: another app's took over")
            case .deliver(_, let payload):
                continueHere(payload)
            default:
                break
            }
        }

        /// A track continued from another device (C5): opened in a player running here, the one its desktop entry
        /// names if it runs, then positioned where the other device's player is by then. A payload the rules refuse
        /// (a URL not http(s) or file:, a position out of range) opens nothing.
        mutating func continueHere(_ data: Data) {
            do {
                let payload = try ActivityPayload(decoding: data)
                let track = try BuiltInMedia.Track(payload)
                let players = focus.playerNames
                let named = track.desktopEntry.map { MediaBus.prefix + $0 }
                guard let player = players.first(where: { $0 == named || $0.hasPrefix((named ?? "-") + ".") }) ?? players.first else {
                    return launch(track)
                }
                let start = track.start(at: MediaBus.wallMicroseconds())
                bus.send(.open(player: player, url: track.url.text, playback: start.playback, resumes: start.resumes))
            } catch {
                source.logger.info("a track continued here is refused: \(error)")
            }
        }

        /// No player runs here: the one the track's desktop entry names is started with it, else the default
        /// application for the file's type (shared-mime-info's globs, then `mimeapps.list`), or for a stream the
        /// default for its scheme (the web browser, E1), through the desktop-entry rules (its `Exec` line's argument
        /// vector, `posix_spawn`, never a shell), and positioned when it appears.
        mutating func launch(_ track: BuiltInMedia.Track) {
            guard let url = URL(string: track.url.text) else { return }
            let types = track.url.scheme == .file
                ? source.applications.mimeTypes(forFileName: url.lastPathComponent) : ["x-scheme-handler/\(track.url.scheme.rawValue)"]
            guard let application = source.applications.application(preferred: track.desktopEntry, mimeTypes: types) else {
                let type = types.isEmpty ? "no type known" : "no default for \(types.joined(separator: ", "))"
                return source.logger.info("no media player runs here to continue \(track.url.text) in: \(track.desktopEntry ?? "its player") is not installed, \(type)")
            }
            do {
                for command in try source.applications.commands(opening: url, with: application) {
                    children.append(try Launcher.spawn(command.program, arguments: command.arguments, environment: source.environment))
                }
                let start = track.start(at: MediaBus.wallMicroseconds())
                launched = (track.url.text, start.playback, start.resumes, now + Int64(MediaBus.openingTimeoutMicroseconds))
                source.logger.info("started \(application.id) to continue \(track.url.text)")
            } catch {
                source.logger.info("\(application.id) could not be started to continue \(track.url.text): \(error)")
            }
        }

        /// Stops offering (the agent is stopping).
        mutating func stop() {
            if let shown = published { client?.send(.resignCurrent(activity: shown.activity)) }
            client?.close()
            client = nil
            published = nil
        }
    }
}
