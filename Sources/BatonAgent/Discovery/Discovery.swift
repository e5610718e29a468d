import BatonClient
import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// What this device knows and says on the network (issue 26 item 1): the advert keys and the receiver's checks, the
/// nearby table and what each device told of its offer (C3), the activity advertised as current, the addresses
/// adverts go to, and who hears of the table's changes. The one handle to discovery the agent keeps; its loop is
/// ``DiscoveryService``.
///
/// It owns this state under a lock of its own, shared with nothing else (the broker's state is the agent's): the
/// agent tells it things as typed calls (advertise or say goodbye to an activity, as the broker decides; a new
/// roster; new targets; a datagram that arrived) and asks it what is nearby. The decisions are BatonProtocol's pure
/// ``AdvertReceiver`` and ``NearbyTable``, given the time from the injected ``Clock``. The lock is never held while
/// sending, logging or calling an observer.
final class Discovery: Sendable {
    /// The clocks discovery reads, the agent's (tests may pass their own): wall time is what adverts carry and the
    /// nearby table keeps, uptime (milliseconds) what the loop sleeps by and re-advertises by.
    typealias Clock = AgentClock

    /// One nearby offer as known now: the entry, the device's name in the roster, and its type and title when the
    /// device told them for this advert (C3).
    struct Offer: Sendable {
        var entry: NearbyTable.Entry
        var deviceName: String
        var summary: ActivitySummary?
        /// The application that will open it here, by name, when the agent's own media or documents app continues it.
        var opensWith: String?
    }

    typealias Observer = @Sendable (DeviceID, NearbyTable.Change) -> Void

    private struct State {
        var roster: Roster
        var keys: AdvertKeys
        var receiver: AdvertReceiver
        var nearby: NearbyTable
        var summaries: [DeviceID: NearbySummary] = [:]
        /// When each member whose adverts were stale was last dialled to learn its clock (issue 25 item 9).
        var clockProbes: [DeviceID: UInt64] = [:]
        /// The unicast targets of adverts.
        var targets: [SocketAddress] = []
        /// What adverts go out on (the UDP sockets, or a memory network: issue 26 item 3) and the session port they
        /// name, once the agent opened them.
        var socket: (any AdvertTransport)?
        var sessionPort: UInt16 = 0
        /// The activity last advertised as current, re-advertised while it is offered; nil after a goodbye.
        var current: HandoffBroker.CurrentActivity?
        /// Uptime milliseconds of the last advert of the current activity (re-advertised every interval).
        var lastAdvert: UInt64 = 0
        /// Whether the loop's sleep is armed with a re-advert of an activity (``readvertArmed(at:)``): it wakes by
        /// then anyway, no later than a newer advert's re-advert is due, so an advert need not ring it.
        var readvertArmed = false
        /// The keyed type hashes adverts were sealed with, by what they hash (`Discovery.typeHashKey`), under
        /// ``keys``: an activity is re-advertised every interval and an app makes a few types current, so each is
        /// an HMAC once (issue 26 item 5). Emptied with the keys; at most ``typeHashesKept``.
        var typeHashes: [String: [UInt8]] = [:]
        var observers: [Observer] = []
    }

    private let state: NIOLockedValueBox<State>
    /// What wakes the loop: an advert of the current activity, a new nearby entry, an interface change.
    let bell = Doorbell()
    let clock: Clock
    /// This device: its adverts name it, and the receiver drops them when they come back.
    private let me: DeviceID
    private let logger: Logger

    init(me: DeviceID, roster: Roster, timeToLiveMilliseconds: UInt64, logger: Logger, clock: Clock = .system) {
        self.me = me
        let keys = AdvertKeys(roster.accountKey)
        state = NIOLockedValueBox(
            State(
                roster: roster,
                keys: keys,
                receiver: AdvertReceiver(me: me, keys: keys),
                nearby: NearbyTable(timeToLiveMilliseconds: timeToLiveMilliseconds)
            )
        )
        self.logger = logger
        self.clock = clock
    }

    /// The advert transport, once opened: adverts go out on it and `sessionPort` is the port they name.
    func attach(_ socket: any AdvertTransport, sessionPort: Int) {
        state.withLockedValue { state in
            state.socket = socket
            state.sessionPort = UInt16(clamping: sessionPort)
        }
    }

    var socket: (any AdvertTransport)? { state.withLockedValue(\.socket) }

    /// Calls `observer` on every change of the nearby table (an advert that added, replaced or removed an entry, an
    /// expiry, a device no longer a member).
    func observe(_ observer: @escaping Observer) {
        state.withLockedValue { $0.observers.append(observer) }
    }

    private func changed(_ device: DeviceID, _ change: NearbyTable.Change) {
        for observer in state.withLockedValue(\.observers) { observer(device, change) }
    }

    // MARK: Saying

    /// The keyed hash an activity is advertised under: team and type, or the host of a web page (E3).
    static func typeHash(_ notice: ActivityNotice, team: String, keys: AdvertKeys) -> [UInt8] {
        if notice.activityType == AppRecord.browsingWebActivityType, let host = notice.webpageHost {
            return keys.typeHash(webHost: host)
        }
        return keys.typeHash(team: team, activityType: notice.activityType)
    }

    /// What ``typeHash(_:team:keys:)`` hashes, as one key of ``State/typeHashes`` (NUL cannot be in a team or type).
    static func typeHashKey(_ notice: ActivityNotice, team: String) -> String {
        "\(team)\u{0}\(notice.activityType)\u{0}\(notice.webpageHost ?? "")"
    }

    /// Type hashes kept at most; past it they are all forgotten (a device makes a handful of types current).
    static let typeHashesKept = 64

    /// Seals and sends one advert of `current` to every target, now (the broker's `.advertise`, C2), or with
    /// `isCurrent` false its goodbye (`.goodbye`, A9). An advert makes it the activity the loop re-advertises; a
    /// goodbye ends that.
    func advertise(_ current: HandoffBroker.CurrentActivity, isCurrent: Bool) {
        HopStamps.stamp(.advertDecided)
        let notice = current.notice
        let hashKey = Self.typeHashKey(notice, team: current.team)
        let (keys, typeHash, targets, socket, port, ring) = state.withLockedValue { state in
            if isCurrent {
                state.current = current
                state.lastAdvert = clock.uptime()
            } else {
                state.current = nil
            }
            let typeHash: [UInt8]
            if let kept = state.typeHashes[hashKey] {
                typeHash = kept
            } else {
                typeHash = Self.typeHash(notice, team: current.team, keys: state.keys)
                if state.typeHashes.count >= Self.typeHashesKept { state.typeHashes.removeAll() }
                state.typeHashes[hashKey] = typeHash
            }
            return (state.keys, typeHash, state.targets, state.socket, state.sessionPort, isCurrent && !state.readvertArmed)
        }
        var flags = Advert.Flags().with(revision: current.revision)
        if notice.webpageHost != nil { flags.insert(.hasWebpageURL) }
        if notice.supportsStreams { flags.insert(.supportsStreams) }
        if isCurrent { flags.insert(.isCurrent) }
        let advert = Advert(
            device: me,
            sequence: current.sequence,
            typeHash: typeHash,
            flags: flags,
            sessionPort: port,
            timestamp: clock.wall()
        )
        guard let datagram = try? keys.seal(advert) else { return }
        HopStamps.stamp(.advertSealed)
        socket?.send(datagram, to: targets)
        HopStamps.stamp(.advertSent)
        // The loop re-advertises from now on: woken only when its sleep has no re-advert armed. A wake-up for each
        // becomeCurrent was a task resumed between this send and the peer's read, on the same cores (issue 26 item 5).
        if ring { bell.ring() }
    }

    /// The uptime of the last advert of the activity to re-advertise, when one is offered at `now` (A10): the loop
    /// arms its sleep with it (due an interval after), and adverts until its next wake need not ring it.
    func readvertArmed(at now: UInt64) -> UInt64? {
        state.withLockedValue { state in
            let last = state.current.flatMap { $0.isOffered(at: now) ? state.lastAdvert : nil }
            state.readvertArmed = last != nil
            return last
        }
    }

    /// The activity to re-advertise, when it is still offered at `now` (A10), and when it was last advertised.
    func offered(at now: UInt64) -> (current: HandoffBroker.CurrentActivity, lastAdvert: UInt64)? {
        state.withLockedValue { state in
            guard let current = state.current, current.isOffered(at: now) else { return nil }
            return (current, state.lastAdvert)
        }
    }

    /// The addresses unicast adverts go to.
    func setTargets(_ targets: [SocketAddress]) {
        state.withLockedValue { $0.targets = targets }
    }

    // MARK: Hearing

    /// One datagram from the network: through the receiver's checks into the nearby table, whose observers hear of
    /// a change. Returns the receiver's outcome (the agent logs a refusal and dials a member whose clock is off).
    func receive(_ datagram: Data, from source: SocketAddress) -> AdvertReceiver.Outcome {
        let now = clock.wall()
        let (outcome, change) = state.withLockedValue { state -> (AdvertReceiver.Outcome, (DeviceID, NearbyTable.Change)?) in
            let roster = state.roster
            let outcome = state.receiver.receive(datagram, now: now) { roster.isActive($0) }
            guard case .accepted(let advert) = outcome else { return (outcome, nil) }
            // The address as text only for an advert that counts (a flood's datagrams never get here).
            let change = state.nearby.apply(advert, from: source.hostText ?? "?", now: now)
            if change == .replaced || change == .removed || change == .revised { state.summaries[advert.device] = nil }
            return (outcome, (advert.device, change))
        }
        guard let (device, change) = change, change != .refreshed, change != .ignored else { return outcome }
        HopStamps.stamp(.advertApplied)
        if change == .added { bell.ring() }  // its expiry is due some time
        if change == .removed {
            logger.info("nearby: \(device.short) withdrew its activity (goodbye, A9)", metadata: ["peer": "\(device.short)"])
        }
        changed(device, change)
        return outcome
    }

    /// The `lastSeen` of the entry heard from longest ago: its expiry is the next one due.
    var oldestLastSeen: UInt64? {
        state.withLockedValue { $0.nearby.entries.values.map(\.lastSeen).min() }
    }

    /// Removes the entries not heard from within the time to live at `now`, telling the observers; returns them.
    func expire(now: UInt64) -> [NearbyTable.Entry] {
        let expired = state.withLockedValue { $0.nearby.expire(now: now) }
        for entry in expired { changed(entry.advert.device, .removed) }
        return expired
    }

    /// A new roster: after a key rotation the keys and the receiver's change and every entry goes (its type hash was
    /// keyed by the old key, issue 25 item 9); otherwise the entries of devices no longer active go. Observers hear
    /// of each removal. Returns whether the key changed.
    @discardableResult
    func rosterChanged(_ roster: Roster) -> Bool {
        let (rotated, forgotten) = state.withLockedValue { state -> (Bool, [DeviceID]) in
            // A merge can change the key without a new epoch (two accounts' first keys meeting), so compare keys.
            let rotated = roster.accountKey != state.roster.accountKey
            state.roster = roster
            if rotated {
                state.keys = AdvertKeys(roster.accountKey)
                state.receiver.update(keys: state.keys)
                state.typeHashes.removeAll()  // hashed under the old key
            }
            // A device that has the new key is back with its next advert, within the advert interval; one that does
            // not (it could not save the roster) is out of step, and not offered, until it catches up.
            let forgotten = state.nearby.entries.keys.filter { rotated || !roster.isActive($0) }
            for device in forgotten { state.nearby.forget(device) }
            return (rotated, forgotten)
        }
        // Watchers and observers (a desktop notification of its offer, issue 16) hear that a removed device's offer went.
        for device in forgotten { changed(device, .removed) }
        return rotated
    }

    // MARK: Clocks (issue 25 item 9)

    /// Learns `device`'s clock from a session; returns its offset when the difference first exceeds the replay
    /// window, or moved by more than it (a clock that was set): the agent says so once.
    func learnClock(of device: DeviceID, theirs: UInt64, now: UInt64) -> Int64? {
        state.withLockedValue { state -> Int64? in
            let before = state.receiver.clockOffsets[device]
            state.receiver.learnClock(of: device, theirs: theirs, now: now)
            let after = state.receiver.clockOffsets[device] ?? 0
            let window = AdvertReceiver.Limits().replayWindowMilliseconds
            let changed = after.magnitude > window && (before.map { ($0 &- after).magnitude > window } ?? true)
            return changed ? after : nil
        }
    }

    /// Whether `device`, an active member whose advert was stale, is to be dialled now to learn its clock: not more
    /// than every `interval` milliseconds per device.
    func clockProbeDue(_ device: DeviceID, now: UInt64, interval: UInt64) -> Bool {
        state.withLockedValue { state -> Bool in
            guard state.roster.isActive(device) else { return false }
            if let last = state.clockProbes[device], now &- last < interval { return false }
            state.clockProbes[device] = now
            return true
        }
    }

    // MARK: What is nearby

    /// The offers nearby, newest first, with what each device told of them.
    func offers() -> [Offer] {
        state.withLockedValue { state in
            state.nearby.entries.values.sorted { $0.lastSeen > $1.lastSeen }.map { entry in
                let device = entry.advert.device
                let described = state.summaries[device].flatMap { $0.describes(entry.advert) ? $0 : nil }
                return Offer(
                    entry: entry,
                    deviceName: state.roster.members[device]?.name ?? device.short,
                    summary: described?.summary,
                    opensWith: described?.opensWith
                )
            }
        }
    }

    /// The entry `selector` names: a device id or a prefix of one, or a device name; the newest when nil or empty.
    func entry(matching selector: String?) -> NearbyTable.Entry? {
        state.withLockedValue { state in
            guard let selector, !selector.isEmpty else { return state.nearby.entries.values.max { $0.lastSeen < $1.lastSeen } }
            guard let device = state.roster.member(named: selector)?.id else { return nil }
            return state.nearby.entries[device]
        }
    }

    /// What the device told of `advert`'s offer (C3), when it told it for this sequence and revision.
    func summary(of advert: Advert) -> ActivitySummary? {
        state.withLockedValue { state in
            state.summaries[advert.device].flatMap { $0.describes(advert) ? $0.summary : nil }
        }
    }

    /// The entries whose type and title this device has not been told yet.
    func entriesToDescribe() -> [NearbyTable.Entry] {
        state.withLockedValue { state in
            state.nearby.entries.values.filter { entry in
                state.summaries[entry.advert.device].map { !$0.describes(entry.advert) } ?? true
            }
        }
    }

    /// Keeps the type and title a device told for `entry`'s sequence, and the application that will open it here.
    func remember(_ summary: ActivitySummary, opensWith: String? = nil, for entry: NearbyTable.Entry) {
        state.withLockedValue { $0.summaries[entry.advert.device] = NearbySummary(of: entry.advert, summary, opensWith: opensWith) }
    }
}
