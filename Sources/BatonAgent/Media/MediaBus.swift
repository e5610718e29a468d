import BatonActivitySources
import BatonNotifications
import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// The media players on the session bus (`org.mpris.MediaPlayer2.*`, MPRIS 2.2), through sd-bus: the thin adapter
/// under ``MediaSource`` (issue 27 item 1).
///
/// As the notifier's bus does, it keeps the connection on a thread of its own (``SessionBusThread``: sd-bus blocks and
/// is not thread-safe), waiting in `poll` on the bus and an eventfd. It follows `NameOwnerChanged` for players appearing and vanishing,
/// and each player's `PropertiesChanged` and `Seeked`; on any of them it reads the player again (`GetAll` of
/// `org.mpris.MediaPlayer2.Player`, which has the `Position` that `PropertiesChanged` never carries, and the
/// `DesktopEntry` of `org.mpris.MediaPlayer2`), after the signals at hand are all handled, so a burst is one read. What
/// it reads is bounded (``maximumText``, ``maximumEntries``, one level of nesting) and reported as ``Event``s.
/// A call is answered within ``callTimeoutMicroseconds`` or given up: a player that hangs delays the others by that.
///
/// `@unchecked Sendable`: `bus`, `slots`, `owners` and `pending` are touched only on the bus thread; the queue and the
/// finish state are the ``SessionBusThread``'s; the rest is set in `init`.
final class MediaBus: @unchecked Sendable {
    /// What the thread does next.
    enum Command: Sendable {
        case connect
        /// Pause `player` (A8: its track was continued on another device).
        case pause(player: String)
        /// Continue a track here (C5): `OpenUri(url)` on `player`, then, once it has loaded that track, `SetPosition`
        /// to where `playback` says it is by then, and `Play` or `Pause` as it was. With `resumes`, the other player
        /// stopped at `playback`'s position (A8): the player here starts there, and `playback`'s time runs from then.
        case open(player: String, url: String, playback: MPRISPlayback, resumes: Bool)
        /// As ``open(player:url:playback:resumes:)`` for a player started with the track already (no `OpenUri`).
        case position(player: String, url: String, playback: MPRISPlayback, resumes: Bool)
    }

    /// A track opened here waiting to be positioned once its player has loaded it.
    struct Opening: Sendable {
        var player: String
        var url: String
        var playback: MPRISPlayback
        /// Whether the player starts where `playback` was read rather than where it would be by now.
        var resumes: Bool
        /// Given up after this (monotonic microseconds): a player that never loads the track is left as it is.
        var until: UInt64
    }

    /// How long a player is given to load a track opened in it before it is positioned.
    static let openingTimeoutMicroseconds: UInt64 = 10_000_000

    /// What happened on the bus.
    enum Event: Sendable {
        case connected
        case connectFailed(String)
        case disconnected(String)
        case appeared(String)
        case vanished(String)
        /// A player's properties, as read.
        case read(String, MediaFocus.Properties)
        /// A player could not be read (it vanished mid-call, or did not answer in time).
        case readFailed(String, String)
        /// A track continued here is positioned (`SetPosition` to `position` µs) and playing or paused as it was; or
        /// could not be, and why.
        case positioned(player: String, position: Int64)
        case openFailed(player: String, String)
    }

    static let prefix = "org.mpris.MediaPlayer2."
    static let path = "/org/mpris/MediaPlayer2"
    static let rootInterface = "org.mpris.MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"
    /// A player answers in milliseconds; one that does not is given up after this.
    static let callTimeoutMicroseconds: UInt64 = 1_000_000
    /// The longest string read, in bytes: above ``ActivityURL/maximumLength``, so a URL cut here is refused there; a
    /// title of a megabyte costs this much, not a megabyte (``MPRISMetadata`` cuts it shorter still).
    static let maximumText = 64 * 1024
    /// The most entries of a dictionary or strings of an array read: past ``MPRISMetadata/maximumEntries``, so a
    /// larger dictionary is still refused as too large, without holding all of it.
    static let maximumEntries = MPRISMetadata.maximumEntries + 1
    /// The most players followed: a bus with more names than this is not a desktop.
    static let maximumPlayers = 64

    private let address: String
    private let onEvent: @Sendable (Event) -> Void
    private let thread: SessionBusThread<Command>
    // The bus thread's own.
    private var bus: OpaquePointer?
    private var slots: [OpaquePointer] = []
    /// Each player's unique name (`:1.42`) to its well-known names: signals come from the unique one.
    private var owners: [String: Set<String>] = [:]
    /// Players to read once the signals at hand are handled.
    private var pending: Set<String> = []
    /// A track continued here, until it is positioned.
    private var opening: Opening?

    /// An adapter for the bus at `address`; nothing happens before ``start()``.
    /// - Throws: ``BatonAgentError`` `busUnavailable` when no eventfd can be made.
    init(address: String, onEvent: @escaping @Sendable (Event) -> Void) throws {
        self.address = address
        self.onEvent = onEvent
        do {
            thread = try SessionBusThread()
        } catch {
            throw BatonAgentError(.busUnavailable, error.message)
        }
    }

    /// Starts the bus thread.
    /// - Throws: ``BatonAgentError`` `busUnavailable` when no thread can be started.
    func start() throws {
        do {
            try thread.start(named: "baton-mpris") { [self] in run() }
        } catch {
            throw BatonAgentError(.busUnavailable, error.message)
        }
    }

    /// Queues `command` for the bus thread and wakes it; dropped once the thread has ended.
    func send(_ command: Command) {
        thread.send(command)
    }

    /// Closes the connection and ends the thread; returns when it has.
    func finish() async {
        await thread.finish()
    }

    // MARK: The bus thread

    private func run() {
        while true {
            let (commands, finishing) = thread.take()
            // Nothing is worth doing once the agent stops: the connection closes now.
            if finishing {
                while !thread.shouldEnd() { _ = thread.take() }
                break
            }
            for command in commands {
                switch command {
                case .connect: connect()
                case .pause(let player): control(player, "Pause")
                case .open(let player, let url, let playback, let resumes): open(player, url: url, playback: playback, resumes: resumes)
                case .position(let player, let url, let playback, let resumes): waitForTrack(player, url: url, playback: playback, resumes: resumes)
                }
            }
            processIncoming()
            readPending()
            thread.waitForWork(bus: bus)
        }
        disconnect()
        thread.ended()
    }

    private func connect() {
        guard bus == nil else { return onEvent(.connected) }
        let opened: OpaquePointer
        do {
            opened = try SessionBus.open(address, purpose: "media players")
        } catch {
            return onEvent(.connectFailed(error.message))
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        var subscribed: [OpaquePointer] = []
        var result: Int32 = 0
        for (rule, handler) in [
            (Self.ownerChangedRule, Self.nameOwnerChanged),
            (Self.propertiesChangedRule, Self.playerSignal),
            (Self.seekedRule, Self.playerSignal),
        ] where result >= 0 {
            var slot: OpaquePointer?
            result = baton_sd_bus_add_match(opened, &slot, rule, handler, me)
            if let slot { subscribed.append(slot) }
        }
        guard result >= 0 else {
            for slot in subscribed { baton_sd_bus_slot_unref(slot) }
            baton_sd_bus_flush_close_unref(opened)
            return onEvent(.connectFailed("cannot listen for the media players' signals: \(String(cString: strerror(-result)))"))
        }
        bus = opened
        slots = subscribed
        onEvent(.connected)
        // The players already there.
        for name in listPlayers().prefix(Self.maximumPlayers) {
            guard let owner = callForString(opened, "GetNameOwner", name) else { continue }
            owners[owner, default: []].insert(name)
            onEvent(.appeared(name))
            pending.insert(name)
        }
    }

    private func disconnect() {
        for slot in slots { baton_sd_bus_slot_unref(slot) }
        slots = []
        if let bus { baton_sd_bus_flush_close_unref(bus) }
        bus = nil
        owners = [:]
        pending = []
    }

    private func lost(_ result: Int32) {
        disconnect()
        onEvent(.disconnected("the session bus went away: \(String(cString: strerror(-result)))"))
    }

    private func processIncoming() {
        while let bus {
            let result = baton_sd_bus_process(bus, nil)
            if result < 0 { return lost(result) }
            if result == 0 { break }
        }
        if let bus, baton_sd_bus_is_open(bus) <= 0 { lost(-ECONNRESET) }
    }

    private func readPending() {
        let names = pending.sorted()
        pending = []
        for name in names {
            guard let bus else { return }
            readPlayer(bus, name)
        }
    }

    // MARK: Calls (on the bus thread)

    /// The well-known names on the bus that are media players.
    private func listPlayers() -> [String] {
        guard let bus, let reply = call(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames", []) else {
            return []
        }
        defer { baton_sd_bus_message_unref(reply) }
        guard baton_sd_bus_message_enter_container(reply, Self.type("a"), "s") > 0 else { return [] }
        var names: [String] = []
        while let name = Self.readString(reply) {
            if Self.isPlayerName(name) { names.append(name) }
        }
        return names
    }

    private func callForString(_ bus: OpaquePointer, _ member: String, _ argument: String) -> String? {
        guard let reply = call(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", member, [argument]) else {
            return nil
        }
        defer { baton_sd_bus_message_unref(reply) }
        return Self.readString(reply)
    }

    /// `member` (`Pause`, `Play`) on `player`'s Player interface.
    private func control(_ player: String, _ member: String) {
        guard let bus, let reply = call(bus, player, Self.path, Self.playerInterface, member, []) else { return }
        baton_sd_bus_message_unref(reply)
    }

    private func open(_ player: String, url: String, playback: MPRISPlayback, resumes: Bool) {
        guard let bus else { return onEvent(.openFailed(player: player, "not connected to the session bus")) }
        var failure = ""
        guard let reply = call(bus, player, Self.path, Self.playerInterface, "OpenUri", [url], failure: &failure) else {
            return onEvent(.openFailed(player: player, "OpenUri: \(failure)"))
        }
        baton_sd_bus_message_unref(reply)
        waitForTrack(player, url: url, playback: playback, resumes: resumes)
    }

    /// Waits for `player` to have loaded `url`, then positions it.
    private func waitForTrack(_ player: String, url: String, playback: MPRISPlayback, resumes: Bool) {
        opening = Opening(
            player: player, url: url, playback: playback, resumes: resumes, until: Self.monotonicMicroseconds() + Self.openingTimeoutMicroseconds
        )
        // Its PropertiesChanged says when the track is loaded; a player that loaded it already is read now.
        pending.insert(player)
    }

    /// After `name` was read: when it has loaded the track continued here, it is positioned, then played or paused.
    private func positionIfOpened(_ bus: OpaquePointer, _ name: String, _ properties: MediaFocus.Properties) {
        guard let waiting = opening, waiting.player == name else { return }
        if Self.monotonicMicroseconds() > waiting.until {
            opening = nil
            return onEvent(.openFailed(player: name, "it did not load \(waiting.url) within \(Self.openingTimeoutMicroseconds / 1_000_000) s"))
        }
        guard case .string(let loaded)? = properties.metadata?["xesam:url"], loaded == waiting.url,
            case .string(let track)? = properties.metadata?["mpris:trackid"]
        else { return }
        opening = nil
        // A player that has just loaded a track may drop a seek it cannot do yet (mpv does, on a busy machine): the
        // position is read back and the seek sent again, a few times, until the player is where it was asked to be.
        var position: Int64 = 0
        var target = waiting.playback
        // The other player stopped where it was read (it paused when told continued, A8): this one starts there, so
        // nothing of the track is skipped while it loaded; from now on the target moves as this player plays.
        if waiting.resumes { target.readAt = Self.wallMicroseconds() }
        for attempt in 0..<Self.seekAttempts {
            if attempt > 0 { usleep(Self.seekRetryMicroseconds) }
            // Where the other device's player is now: the position it read, plus the time since at its rate (C5).
            position = target.position(at: Self.wallMicroseconds())
            if let failure = setPosition(bus, name, track: track, position) {
                return onEvent(.openFailed(player: name, "SetPosition: \(failure)"))
            }
            guard let root = call(bus, name, Self.path, "org.freedesktop.DBus.Properties", "Get", [Self.playerInterface, "Position"]) else { break }
            let now = Self.readVariant(root)
            baton_sd_bus_message_unref(root)
            guard case .int64(let reached)? = now else { break }
            if abs(reached - target.position(at: Self.wallMicroseconds())) < Self.seekTolerance { break }
        }
        control(name, waiting.playback.status == .playing ? "Play" : "Pause")
        onEvent(.positioned(player: name, position: position))
    }

    /// How often a seek is sent before the player is left where it is, how long apart, and how far off counts as there.
    static let seekAttempts = 10
    static let seekRetryMicroseconds: UInt32 = 100_000
    static let seekTolerance: Int64 = 250_000

    /// `SetPosition(track, position)` on `player`; why not, or nil when it was answered.
    private func setPosition(_ bus: OpaquePointer, _ player: String, track: String, _ position: Int64) -> String? {
        var at = position
        var message: OpaquePointer?
        var result = baton_sd_bus_message_new_method_call(bus, &message, player, Self.path, Self.playerInterface, "SetPosition")
        guard result >= 0, let message else { return "cannot make the call" }
        defer { baton_sd_bus_message_unref(message) }
        result = track.withCString { baton_sd_bus_message_append_basic(message, Self.type("o"), $0) }
        if result >= 0 { result = baton_sd_bus_message_append_basic(message, Self.type("x"), &at) }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        var reply: OpaquePointer?
        if result >= 0 { result = baton_sd_bus_call(bus, message, Self.callTimeoutMicroseconds, &error, &reply) }
        defer { baton_sd_bus_error_free(&error) }
        if let reply { baton_sd_bus_message_unref(reply) }
        guard result >= 0 else { return error.name.map { String(cString: $0) } ?? String(cString: strerror(-result)) }
        return nil
    }

    static func wallMicroseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
    }

    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }

    /// Reads the player `name`: its player properties and desktop entry.
    private func readPlayer(_ bus: OpaquePointer, _ name: String) {
        var failure = ""
        guard let reply = call(bus, name, Self.path, "org.freedesktop.DBus.Properties", "GetAll", [Self.playerInterface], failure: &failure) else {
            return onEvent(.readFailed(name, failure))
        }
        var properties = MediaFocus.Properties()
        Self.readProperties(reply, into: &properties)
        baton_sd_bus_message_unref(reply)
        if let root = call(bus, name, Self.path, "org.freedesktop.DBus.Properties", "Get", [Self.rootInterface, "DesktopEntry"]) {
            if case .string(let entry)? = Self.readVariant(root) { properties.desktopEntry = entry }
            baton_sd_bus_message_unref(root)
        }
        onEvent(.read(name, properties))
        positionIfOpened(bus, name, properties)
    }

    /// A method call with string arguments; its reply (the caller unrefs it), or nil with why in `failure`.
    private func call(
        _ bus: OpaquePointer, _ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [String],
        failure: inout String
    ) -> OpaquePointer? {
        var message: OpaquePointer?
        var result = baton_sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        guard result >= 0, let message else {
            failure = "cannot make the call \(member) (\(String(cString: strerror(-result))))"
            return nil
        }
        defer { baton_sd_bus_message_unref(message) }
        for argument in arguments where result >= 0 {
            result = argument.withCString { baton_sd_bus_message_append_basic(message, Self.type("s"), $0) }
        }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        var reply: OpaquePointer?
        if result >= 0 { result = baton_sd_bus_call(bus, message, Self.callTimeoutMicroseconds, &error, &reply) }
        defer { baton_sd_bus_error_free(&error) }
        guard result >= 0, let reply else {
            failure = error.name.map { String(cString: $0) } ?? String(cString: strerror(-result))
            if baton_sd_bus_is_open(bus) <= 0 { lost(result) }
            return nil
        }
        return reply
    }

    private func call(
        _ bus: OpaquePointer, _ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [String]
    ) -> OpaquePointer? {
        var failure = ""
        return call(bus, destination, path, interface, member, arguments, failure: &failure)
    }

    // MARK: Signals (on the bus thread, from sd_bus_process)

    /// The bus's own signal when a name changes hands, for media players' names only.
    static let ownerChangedRule =
        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
        + "member='NameOwnerChanged',arg0namespace='org.mpris.MediaPlayer2'"
    static let propertiesChangedRule =
        "type='signal',path='\(path)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"
    static let seekedRule = "type='signal',path='\(path)',interface='\(playerInterface)',member='Seeked'"

    private static let nameOwnerChanged: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata, let name = readString(message), let old = readString(message),
            let new = readString(message), isPlayerName(name)
        else { return 0 }
        let bus = Unmanaged<MediaBus>.fromOpaque(userdata).takeUnretainedValue()
        if !old.isEmpty {
            bus.owners[old]?.remove(name)
            if bus.owners[old]?.isEmpty == true { bus.owners[old] = nil }
            bus.pending.remove(name)
            bus.onEvent(.vanished(name))
        }
        if !new.isEmpty, bus.owners.values.reduce(0, { $0 + $1.count }) < maximumPlayers {
            bus.owners[new, default: []].insert(name)
            bus.onEvent(.appeared(name))
            bus.pending.insert(name)
        }
        return 0
    }

    /// `PropertiesChanged` or `Seeked` from a player: it is read again, once the signals at hand are handled.
    private static let playerSignal: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata, let sender = baton_sd_bus_message_get_sender(message) else { return 0 }
        let bus = Unmanaged<MediaBus>.fromOpaque(userdata).takeUnretainedValue()
        for name in bus.owners[String(cString: sender)] ?? [] { bus.pending.insert(name) }
        return 0
    }

    // MARK: Reading values

    static func isPlayerName(_ name: String) -> Bool {
        name.hasPrefix(prefix) && name.utf8.count > prefix.utf8.count && name.utf8.count <= 255
    }

    /// Reads an `a{sv}` of properties; `Metadata`'s `a{sv}` into ``MediaFocus/Properties/metadata``.
    static func readProperties(_ message: OpaquePointer, into properties: inout MediaFocus.Properties) {
        guard baton_sd_bus_message_enter_container(message, type("a"), "{sv}") > 0 else { return }
        var count = 0
        while count < maximumEntries, baton_sd_bus_message_enter_container(message, type("e"), "sv") > 0 {
            count += 1
            defer { _ = baton_sd_bus_message_exit_container(message) }
            guard let key = readString(message) else { return }
            if key == "Metadata" {
                properties.metadata = readMetadata(message)
            } else if let value = readVariant(message) {
                properties.player[key] = value
            }
        }
    }

    /// A variant holding an `a{sv}`, read one level deep: values that are containers (other than `as`) are skipped.
    static func readMetadata(_ message: OpaquePointer) -> [String: MPRISValue]? {
        guard baton_sd_bus_message_enter_container(message, type("v"), "a{sv}") > 0 else {
            _ = baton_sd_bus_message_skip(message, "v")
            return nil
        }
        defer { _ = baton_sd_bus_message_exit_container(message) }
        guard baton_sd_bus_message_enter_container(message, type("a"), "{sv}") > 0 else { return nil }
        defer { _ = baton_sd_bus_message_exit_container(message) }
        var metadata: [String: MPRISValue] = [:]
        var count = 0
        while baton_sd_bus_message_enter_container(message, type("e"), "sv") > 0 {
            count += 1
            defer { _ = baton_sd_bus_message_exit_container(message) }
            guard let key = readString(message) else { return metadata }
            // One more than the decoder takes: it refuses the whole as too large, and nothing past is held.
            if count <= maximumEntries, let value = readVariant(message) {
                metadata[key] = value
            } else {
                _ = baton_sd_bus_message_skip(message, "v")
            }
        }
        return metadata
    }

    /// A variant's value when it is one ``MPRISValue`` takes; skipped (nil) otherwise.
    static func readVariant(_ message: OpaquePointer) -> MPRISValue? {
        var kind: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard baton_sd_bus_message_peek_type(message, &kind, &contents) > 0, kind == type("v"), let contents else { return nil }
        let signature = String(cString: contents)
        guard baton_sd_bus_message_enter_container(message, type("v"), contents) > 0 else { return nil }
        defer { _ = baton_sd_bus_message_exit_container(message) }
        switch signature {
        case "s", "o", "g":
            return readBasicString(message, signature).map(MPRISValue.string)
        case "as":
            guard baton_sd_bus_message_enter_container(message, type("a"), "s") > 0 else { return nil }
            defer { _ = baton_sd_bus_message_exit_container(message) }
            var strings: [String] = []
            while let text = readString(message) {
                if strings.count < maximumEntries { strings.append(text) }
            }
            return .strings(strings)
        case "x":
            var value: Int64 = 0
            return baton_sd_bus_message_read_basic(message, type("x"), &value) > 0 ? .int64(value) : nil
        case "i":
            var value: Int32 = 0
            return baton_sd_bus_message_read_basic(message, type("i"), &value) > 0 ? .int64(Int64(value)) : nil
        case "n":
            var value: Int16 = 0
            return baton_sd_bus_message_read_basic(message, type("n"), &value) > 0 ? .int64(Int64(value)) : nil
        case "y":
            var value: UInt8 = 0
            return baton_sd_bus_message_read_basic(message, type("y"), &value) > 0 ? .int64(Int64(value)) : nil
        case "t":
            var value: UInt64 = 0
            return baton_sd_bus_message_read_basic(message, type("t"), &value) > 0 ? .uint64(value) : nil
        case "u":
            var value: UInt32 = 0
            return baton_sd_bus_message_read_basic(message, type("u"), &value) > 0 ? .uint64(UInt64(value)) : nil
        case "q":
            var value: UInt16 = 0
            return baton_sd_bus_message_read_basic(message, type("q"), &value) > 0 ? .uint64(UInt64(value)) : nil
        case "d":
            var value: Double = 0
            return baton_sd_bus_message_read_basic(message, type("d"), &value) > 0 ? .double(value) : nil
        case "b":
            // sd-bus reads a boolean as an int.
            var value: Int32 = 0
            return baton_sd_bus_message_read_basic(message, type("b"), &value) > 0 ? .bool(value != 0) : nil
        default:
            _ = baton_sd_bus_message_skip(message, contents)
            return nil
        }
    }

    /// The next `s`, cut at ``maximumText`` bytes; nil at the end of the container or for another type.
    static func readString(_ message: OpaquePointer) -> String? {
        readBasicString(message, "s")
    }

    private static func readBasicString(_ message: OpaquePointer, _ code: String) -> String? {
        var text: UnsafePointer<CChar>?
        guard let scalar = code.unicodeScalars.first, baton_sd_bus_message_read_basic(message, type(scalar), &text) > 0, let text else {
            return nil
        }
        let length = strnlen(text, maximumText)
        return text.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
            String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
        }
    }

    private static func type(_ code: Unicode.Scalar) -> CChar {
        CChar(UInt8(ascii: code))
    }
}
