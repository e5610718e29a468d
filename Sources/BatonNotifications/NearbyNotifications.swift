import BatonCore

/// Which desktop notifications of nearby offers to show, replace and withdraw, and when to reach the session bus: a
/// pure state machine (issue 16 part 2; SEMANTICS C3: "the person is shown which activities can be continued").
///
/// Events in, one `mutating func` each, the time passed in (uptime milliseconds): the offers nearby now, the bus
/// connected / failed / went away, a `Notify` answered with its id or failed, an action invoked, a notification
/// closed by the server, time passed, stop. Actions out: connect, notify (replacing an id or not), close an id,
/// continue a device's offer here, wake at a time. No D-Bus, no clock, no tasks: ``NotificationService`` and
/// ``NotificationBus`` do those.
///
/// One notification per offer, not per advert: an offer equal to the one shown does nothing; a different one (a new
/// activity, a new title) replaces it by id; an offer that ends (goodbye, expiry) closes it. A notification the person
/// or the server closed is forgotten and not shown again until the offer changes. While the bus is down nothing is
/// sent; the offers wait, and are shown when it is back.
public struct NearbyNotifications: Sendable {
    /// What another device offers, as a notification shows it.
    public struct Offer: Sendable, Hashable {
        /// The offering device's id (what ``NearbyFeed/continueNearby`` takes) and name.
        public var device: String
        public var deviceName: String
        /// The activity's sequence there: a new one is a new activity.
        public var sequence: UInt64
        /// The activity's title (or what stands for it).
        public var title: String
        /// The app here that would continue it: its name and icon (a path, or an XDG icon name).
        public var appName: String
        public var icon: String

        /// An offer.
        public init(device: String, deviceName: String, sequence: UInt64, title: String, appName: String, icon: String)
        {
            self.device = device
            self.deviceName = deviceName
            self.sequence = sequence
            self.title = title
            self.appName = appName
            self.icon = icon
        }

        /// What `Notify` sends for it.
        public var notice: Notice {
            Notice(
                appName: appName,
                icon: icon,
                summary: Notice.plain(title),
                body: Notice.escaped("From \(deviceName): continue it here in \(appName)."),
                actions: [Notice.continueKey, "Continue", Notice.defaultKey, "Continue"]
            )
        }
    }

    /// What a notification says when continuing its offer failed: why, in place of the offer, with Continue to try
    /// again.
    func failureNotice(_ offer: Offer, message: String) -> Notice {
        Notice(
            appName: offer.appName,
            icon: offer.icon,
            summary: Notice.plain("Could not continue \(offer.title)"),
            body: Notice.escaped("From \(offer.deviceName): \(message)"),
            actions: [Notice.continueKey, "Try again"]
        )
    }

    /// One notification's text, as the freedesktop `Notify` method takes it.
    public struct Notice: Sendable, Hashable {
        /// The action key of the Continue button, and the key of a click on the notification itself.
        public static let continueKey = "continue"
        public static let defaultKey = "default"

        public var appName: String
        public var icon: String
        /// Plain text.
        public var summary: String
        /// Servers may read it as markup: text from other devices is escaped.
        public var body: String
        /// Key, label, key, label, ...
        public var actions: [String]

        /// Text from other devices (titles, device names) as a summary shows it: without bidirectional controls,
        /// which could make a title read as something else (U+202E; issue 25 item 7).
        static func plain(_ text: String) -> String {
            text.neutralizingBidiControls()
        }

        /// `&`, `<`, `>` as entities: the body may be read as markup (the specification's `body-markup`); without
        /// bidirectional controls, as ``plain(_:)``.
        static func escaped(_ text: String) -> String {
            var escaped = ""
            for character in plain(text) {
                switch character {
                case "&": escaped += "&amp;"
                case "<": escaped += "&lt;"
                case ">": escaped += "&gt;"
                default: escaped.append(character)
                }
            }
            return escaped
        }
    }

    /// Why a `Notify` got no id.
    public enum NotifyFailure: Sendable, Hashable {
        /// Nobody owns org.freedesktop.Notifications and nothing starts it: no desktop to show it on.
        case noServer
        /// The server answered with an error, or did not answer in time.
        case refused
    }

    /// What to do.
    public enum Action: Sendable, Hashable {
        /// Open a connection to the session bus; answer with ``connected(now:)`` or ``connectFailed(now:)``.
        case connect
        /// Send `Notify` (with `replaces_id` when `replacing` is set); answer with ``notified(token:id:now:)`` or
        /// ``notifyFailed(token:_:now:)``.
        case notify(token: UInt64, replacing: UInt32?, Notice)
        /// Send `CloseNotification` for this id.
        case close(UInt32)
        /// Continue the offer of this device here, as `baton continue DEVICE` does.
        case continueHere(device: String)
        /// Call ``timePassed(now:)`` at this uptime (milliseconds); replaces any earlier wake.
        case wake(at: UInt64)
    }

    /// The bounds of trying the bus again.
    public struct Policy: Sendable, Hashable {
        /// The wait after the first failure (connecting, or the bus going away), doubling up to ``longestRetry``.
        public var firstRetryMilliseconds: UInt64 = 1_000
        /// Long enough that a desktop without a bus costs a connect attempt a minute; short enough that a session bus
        /// started after the agent (a login after boot) is found within a minute.
        public var longestRetryMilliseconds: UInt64 = 60_000

        /// The defaults.
        public init() {}

        /// The wait after `failures` failures in a row (1 or more).
        func retry(after failures: Int) -> UInt64 {
            let doublings = UInt64(max(0, min(failures - 1, 16)))
            return min(longestRetryMilliseconds, firstRetryMilliseconds << doublings)
        }
    }

    private enum Connection: Sendable, Hashable {
        /// Not connected; trying again at this time (nil: not started, or stopped trying).
        case disconnected(retryAt: UInt64?)
        case connecting
        case connected
        case stopped
    }

    private enum Shown: Sendable, Hashable {
        var isShown: Bool {
            if case .shown = self { return true }
            return false
        }

        /// Wanted but not on screen: the bus is down, or the last `Notify` failed.
        case unshown
        /// `Notify` sent for `offer`, no answer yet.
        case pending(token: UInt64, sent: Offer)
        case shown(id: UInt32)
        /// The server closed it (the person dismissed it, it expired, an action was taken and it went): not shown
        /// again for this offer.
        case dismissed
    }

    private struct Entry: Sendable, Hashable {
        var offer: Offer
        var shown: Shown
    }

    /// How the bus is retried.
    public let policy: Policy
    private var connection = Connection.disconnected(retryAt: nil)
    private var failures = 0
    private var entries: [String: Entry] = [:]
    /// `Notify` calls whose offer ended before the id came back: the id is closed when it does.
    private var closeWhenAnswered: Set<UInt64> = []
    private var nextToken: UInt64 = 1

    /// Nothing offered, not connected.
    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// The ids on screen now, by device (for tests and logs).
    public var shownIDs: [String: UInt32] {
        entries.compactMapValues { entry in
            if case .shown(let id) = entry.shown { return id }
            return nil
        }
    }

    // MARK: The bus

    /// The service started: connect.
    public mutating func start() -> [Action] {
        guard connection == .disconnected(retryAt: nil) else { return [] }
        connection = .connecting
        return [.connect]
    }

    /// The bus is connected: every offer waiting is shown.
    public mutating func connected(now: UInt64) -> [Action] {
        guard connection == .connecting else { return [] }
        connection = .connected
        failures = 0
        return serverAppeared()
    }

    /// Connecting failed (no socket at the address, refused, authentication): tried again after the back-off.
    public mutating func connectFailed(now: UInt64) -> [Action] {
        guard connection == .connecting else { return [] }
        return retryLater(now: now)
    }

    /// The connection went away: what was on screen is forgotten (the server went with the bus, or can no longer
    /// tell us of it), the offers wait, and the bus is tried again after the back-off.
    public mutating func disconnected(now: UInt64) -> [Action] {
        guard connection == .connected || connection == .connecting else { return [] }
        for device in entries.keys {
            if entries[device]?.shown != .dismissed { entries[device]?.shown = .unshown }
        }
        closeWhenAnswered = []
        return retryLater(now: now)
    }

    private mutating func retryLater(now: UInt64) -> [Action] {
        failures += 1
        let at = now + policy.retry(after: failures)
        connection = .disconnected(retryAt: at)
        return [.wake(at: at)]
    }

    /// Time passed: connect again if the back-off is over.
    public mutating func timePassed(now: UInt64) -> [Action] {
        guard case .disconnected(let retryAt?) = connection else { return [] }
        guard now >= retryAt else { return [.wake(at: retryAt)] }
        connection = .connecting
        return [.connect]
    }

    // MARK: Offers

    /// The offers nearby now that an app here can continue (the whole list, each time it may have changed): new
    /// ones are shown, changed ones replaced, ended ones closed; the same offer again does nothing.
    public mutating func offersChanged(_ offers: [Offer]) -> [Action] {
        guard connection != .stopped else { return [] }
        var actions: [Action] = []
        let current = Dictionary(offers.map { ($0.device, $0) }, uniquingKeysWith: { first, _ in first })
        for device in entries.keys.sorted() where current[device] == nil {
            actions += end(device)
        }
        for device in current.keys.sorted() {
            guard let offer = current[device] else { continue }
            guard var entry = entries[device] else {
                entries[device] = Entry(offer: offer, shown: .unshown)
                actions += notify(device, replacing: nil)
                continue
            }
            guard entry.offer != offer else { continue }
            entry.offer = offer
            entries[device] = entry
            switch entry.shown {
            case .shown(let id): actions += notify(device, replacing: id)
            case .unshown, .dismissed: actions += notify(device, replacing: nil)
            case .pending: break  // its answer sends the new offer (notified(token:id:now:))
            }
        }
        return actions
    }

    /// `device`'s offer ended: its notification is closed (or will be, once its id is known).
    private mutating func end(_ device: String) -> [Action] {
        guard let entry = entries.removeValue(forKey: device) else { return [] }
        switch entry.shown {
        case .shown(let id): return connection == .connected ? [.close(id)] : []
        case .pending(let token, _):
            closeWhenAnswered.insert(token)
            return []
        case .unshown, .dismissed: return []
        }
    }

    /// Sends `Notify` for `device`'s offer (or `notice` in its place) when the bus is up; otherwise it waits, unshown.
    private mutating func notify(_ device: String, replacing: UInt32?, notice: Notice? = nil) -> [Action] {
        guard var entry = entries[device] else { return [] }
        guard connection == .connected else {
            entry.shown = .unshown
            entries[device] = entry
            return []
        }
        let token = nextToken
        nextToken += 1
        entry.shown = .pending(token: token, sent: entry.offer)
        entries[device] = entry
        return [.notify(token: token, replacing: replacing, notice ?? entry.offer.notice)]
    }

    // MARK: The server's answers

    /// The server answered `Notify` `token` with `id`. If the offer changed meanwhile the new one replaces it; if it
    /// ended, it is closed.
    public mutating func notified(token: UInt64, id: UInt32, now: UInt64) -> [Action] {
        if closeWhenAnswered.remove(token) != nil {
            return connection == .connected || connection == .stopped ? [.close(id)] : []
        }
        guard let device = device(pending: token), var entry = entries[device], case .pending(_, let sent) = entry.shown
        else { return [] }
        entry.shown = .shown(id: id)
        entries[device] = entry
        return sent == entry.offer ? [] : notify(device, replacing: id)
    }

    /// `Notify` `token` failed: the offer stays unshown (tried again when the bus connects again, or the offer changes).
    public mutating func notifyFailed(token: UInt64, _ failure: NotifyFailure, now: UInt64) -> [Action] {
        closeWhenAnswered.remove(token)
        guard let device = device(pending: token) else { return [] }
        entries[device]?.shown = .unshown
        return []
    }

    /// The person chose an action of notification `id`: Continue (or the notification itself) continues that
    /// device's offer here (C3, C5).
    public mutating func actionInvoked(id: UInt32, key: String) -> [Action] {
        guard connection != .stopped, key == Notice.continueKey || key == Notice.defaultKey,
            let device = device(shown: id)
        else { return [] }
        return [.continueHere(device: device)]
    }

    /// Continuing `device`'s offer, chosen from its notification, failed: the person is told why, in place of the
    /// notification (or anew, when the server closed it as the action was taken), with Continue to try again. Shown
    /// until the offer changes (the new offer replaces it) or ends (closed). Nothing when the offer is gone already.
    public mutating func continueFailed(device: String, message: String) -> [Action] {
        guard connection != .stopped, let entry = entries[device] else { return [] }
        let notice = failureNotice(entry.offer, message: message)
        switch entry.shown {
        case .shown(let id): return notify(device, replacing: id, notice: notice)
        case .dismissed, .unshown: return notify(device, replacing: nil, notice: notice)
        case .pending: return []  // the offer changed meanwhile: the new offer is on its way
        }
    }

    /// The server closed notification `id` (dismissed, expired, or closed after an action): forgotten, and not shown
    /// again for the same offer.
    public mutating func closedByServer(id: UInt32) -> [Action] {
        guard let device = device(shown: id) else { return [] }
        entries[device]?.shown = .dismissed
        return []
    }

    /// The process that owned `org.freedesktop.Notifications` went (the server quit or crashed, or another took the
    /// name): the ids it gave mean nothing to a successor, and `replaces_id` with one of them could replace another
    /// program's notification. They are forgotten; the offers wait, unshown, for ``serverAppeared()``.
    public mutating func serverWentAway() -> [Action] {
        for device in entries.keys where entries[device]?.shown.isShown == true {
            entries[device]?.shown = .unshown
        }
        return []
    }

    /// A process took `org.freedesktop.Notifications` (a server started, by itself or activated by a `Notify`): every
    /// offer waiting unshown is shown. Ones on screen stay (an activated server gave them their ids).
    public mutating func serverAppeared() -> [Action] {
        guard connection == .connected else { return [] }
        var actions: [Action] = []
        for device in entries.keys.sorted() where entries[device]?.shown == .unshown {
            actions += notify(device, replacing: nil)
        }
        return actions
    }

    /// `org.freedesktop.Notifications` changed hands (the bus's `NameOwnerChanged`): ``serverWentAway()`` when a
    /// process had it, then ``serverAppeared()`` when one has it now, so a server replaced by another shows the offers
    /// again under new ids. What the bus adapter says is dispatched here, so the fuzzer drives the same path.
    public mutating func serverChanged(hadOwner: Bool, hasOwner: Bool) -> [Action] {
        (hadOwner ? serverWentAway() : []) + (hasOwner ? serverAppeared() : [])
    }

    /// The agent stops: every notification on screen is closed (its offer cannot be continued here once the agent
    /// is gone); ids still to come are closed when they come.
    public mutating func stop() -> [Action] {
        let wasConnected = connection == .connected
        connection = .stopped
        var actions: [Action] = []
        for device in entries.keys.sorted() {
            guard let entry = entries[device] else { continue }
            switch entry.shown {
            case .shown(let id): if wasConnected { actions.append(.close(id)) }
            case .pending(let token, _): closeWhenAnswered.insert(token)
            case .unshown, .dismissed: break
            }
        }
        entries = [:]
        return actions
    }

    /// Whether a `Notify` whose offer ended (or stopped) is still unanswered: its id is closed when it comes. At stop,
    /// the bus thread finishes a call in flight before it ends, and the close that follows still goes out.
    public var hasUnansweredNotify: Bool { !closeWhenAnswered.isEmpty }

    private func device(pending token: UInt64) -> String? {
        entries.first { entry in
            if case .pending(let pending, _) = entry.value.shown { return pending == token }
            return false
        }?.key
    }

    private func device(shown id: UInt32) -> String? {
        entries.first { $0.value.shown == .shown(id: id) }?.key
    }
}
