#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a device does with each datagram that arrives on the advert port: a pure state machine, time passed in.
///
/// In order: one attempt to open it under the current account key (a stranger's datagram costs that and nothing
/// more), the device's own adverts dropped, a timestamp window, a nonce cache against replays within that window,
/// membership of the sender, and a rate limit per sending device.
///
/// Every datagram of the right size is opened, whoever sent it. Opening a seal costs about a microsecond, less than
/// the system call that received the datagram, so a limit before it would save nothing worth having, and it would
/// let anyone who can send from (or spoof) a member's address silence that member (ISSUE 10 item 5). The rate
/// limit counts authenticated adverts, by the device that sealed them: it bounds what a misbehaving member can do
/// to the nearby table, and a stranger cannot spend a member's allowance.
public struct AdvertReceiver: Sendable {
    /// Bounds, each with its reason.
    public struct Limits: Sendable {
        /// Adverts older or newer than this (clock skew included) are stale: a captured advert cannot be replayed later.
        public var replayWindowMilliseconds: UInt64 = 30_000
        /// Nonces remembered within the window. A member sends a few per second; this is room for thousands.
        public var nonceCacheCapacity = 8_192
        /// Authenticated adverts per second from one member device, sustained, and the burst allowed above it. A
        /// member sends one a second, plus one per change of its current activity.
        public var perDeviceRate = 50.0
        public var perDeviceBurst = 100.0
        /// Devices tracked for rate limiting; the least recently seen are forgotten beyond this. Only members that
        /// sealed a valid advert are tracked, so strangers cannot fill it.
        public var trackedDevices = 1_024

        /// The defaults.
        public init() {}
    }

    /// What became of a datagram.
    public enum Outcome: Sendable, Equatable {
        /// A fresh advert from another member.
        case accepted(Advert)
        /// Not sealed under this account's current key (another account, an old key, noise).
        case notForUs
        /// Sent by this device (multicast loops back).
        case own
        /// Outside the replay window, judged by the sender's clock where its offset is known (``learnClock(of:theirs:now:)``).
        /// `offBy` is the advert's time minus this device's clock, in milliseconds: minutes, and steady, when the
        /// two clocks disagree (the agent then dials the device: the session teaches the offset; issue 25 item 9).
        case stale(Advert, offBy: Int64)
        /// A nonce already seen within the window.
        case replayed
        /// The sender is not an active member.
        case notMember(DeviceID)
        /// A member device sent more valid adverts than its allowance; dropped after opening.
        case rateLimited
    }

    struct Bucket: Sendable {
        var tokens: Double
        var updated: UInt64
    }

    let me: DeviceID
    public private(set) var keys: AdvertKeys
    let limits: Limits
    var nonces: [[UInt8]: UInt64] = [:]
    var nonceOrder: [([UInt8], UInt64)] = []
    var nonceOrderStart = 0
    var buckets: [DeviceID: Bucket] = [:]
    /// Each member device's wall clock minus this device's, in milliseconds, as its last authenticated session said
    /// (issue 25 item 9). A device whose clock is ten minutes off is still heard: its adverts are judged against its
    /// own clock, and a replay, old by that clock, is still refused. At most `trackedDevices`.
    public private(set) var clockOffsets: [DeviceID: Int64] = [:]

    /// A receiver for device `me`, opening with `keys`.
    public init(me: DeviceID, keys: AdvertKeys, limits: Limits = Limits()) {
        self.me = me
        self.keys = keys
        self.limits = limits
    }

    /// Switches to a new account key (after a rotation). Adverts under the old key are no longer accepted.
    public mutating func update(keys: AdvertKeys) {
        self.keys = keys
    }

    /// Records `device`'s clock: `theirs` is what its authenticated session said the time was there, `now` the time
    /// here when it arrived (both milliseconds since 1970). Only from a session whose certificate is a member's: an
    /// advert alone cannot move the window.
    public mutating func learnClock(of device: DeviceID, theirs: UInt64, now: UInt64) {
        if clockOffsets[device] == nil, clockOffsets.count >= limits.trackedDevices, let any = clockOffsets.keys.first {
            clockOffsets[any] = nil
        }
        clockOffsets[device] = Int64(clamping: theirs) &- Int64(clamping: now)
    }

    /// Forgets a device's clock (it left the account).
    public mutating func forgetClock(of device: DeviceID) {
        clockOffsets[device] = nil
    }

    /// Handles one datagram at `now` (milliseconds since 1970). Where it came from plays no part: a source address
    /// proves nothing, and turning it into text for every datagram of a flood cost more than the check itself.
    public mutating func receive(_ datagram: Data, now: UInt64, isMember: (DeviceID) -> Bool) -> Outcome {
        guard let (advert, nonce) = keys.open(datagram) else { return .notForUs }
        guard advert.device != me else { return .own }
        let offBy = Int64(clamping: advert.timestamp) &- Int64(clamping: now)
        // The advert's time against the sender's clock as last learned: the same window, wherever its clock is.
        let offset = clockOffsets[advert.device] ?? 0
        guard (offBy &- offset).magnitude <= limits.replayWindowMilliseconds else { return .stale(advert, offBy: offBy) }
        forgetExpiredNonces(now: now)
        guard nonces[nonce] == nil else { return .replayed }
        // Kept until the window has passed by this device's clock (the nonce could be replayed until then).
        let sentHere = UInt64(clamping: max(0, Int64(clamping: advert.timestamp) &- offset))
        remember(nonce, until: sentHere + limits.replayWindowMilliseconds)
        guard isMember(advert.device) else { return .notMember(advert.device) }
        guard admit(advert.device, now: now) else { return .rateLimited }
        return .accepted(advert)
    }

    /// Token bucket per authenticated sending device.
    mutating func admit(_ source: DeviceID, now: UInt64) -> Bool {
        var bucket = buckets[source] ?? Bucket(tokens: limits.perDeviceBurst, updated: now)
        let elapsed = Double(now > bucket.updated ? now - bucket.updated : 0) / 1000
        bucket.tokens = min(limits.perDeviceBurst, bucket.tokens + elapsed * limits.perDeviceRate)
        bucket.updated = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        if buckets[source] == nil, buckets.count >= limits.trackedDevices {
            // Forget the device idle longest.
            if let oldest = buckets.min(by: { $0.value.updated < $1.value.updated })?.key { buckets[oldest] = nil }
        }
        buckets[source] = bucket
        return allowed
    }

    mutating func remember(_ nonce: [UInt8], until expiry: UInt64) {
        if nonces.count >= limits.nonceCacheCapacity, nonceOrderStart < nonceOrder.count {
            nonces[nonceOrder[nonceOrderStart].0] = nil
            nonceOrderStart += 1
        }
        nonces[nonce] = expiry
        nonceOrder.append((nonce, expiry))
    }

    mutating func forgetExpiredNonces(now: UInt64) {
        while nonceOrderStart < nonceOrder.count, nonceOrder[nonceOrderStart].1 < now {
            let (nonce, expiry) = nonceOrder[nonceOrderStart]
            if nonces[nonce] == expiry { nonces[nonce] = nil }
            nonceOrderStart += 1
        }
        if nonceOrderStart > 1_024, nonceOrderStart * 2 > nonceOrder.count {
            nonceOrder.removeFirst(nonceOrderStart)
            nonceOrderStart = 0
        }
    }
}

/// The activities other devices of the account offer now (SEMANTICS C3): one per device, each expiring unless
/// re-advertised, removed at once by a goodbye (A9).
public struct NearbyTable: Sendable {
    /// One offered activity.
    public struct Entry: Sendable, Hashable {
        /// The latest advert for it.
        public var advert: Advert
        /// The address it came from: where to connect back.
        public var host: String
        /// When it was first and last heard (milliseconds since 1970).
        public var firstSeen: UInt64
        public var lastSeen: UInt64
    }

    /// What an advert changed.
    public enum Change: Sendable, Equatable {
        /// `revised`: the same activity again, with a new revision (its title or type changed): ask what it is again.
        case added, refreshed, revised, replaced, removed, ignored
    }

    /// How long an entry lives without a fresh advert.
    public let timeToLiveMilliseconds: UInt64
    /// The entries by originating device.
    public private(set) var entries: [DeviceID: Entry] = [:]

    /// A table whose entries live `timeToLiveMilliseconds` after their last advert.
    public init(timeToLiveMilliseconds: UInt64 = 5_000) {
        self.timeToLiveMilliseconds = timeToLiveMilliseconds
    }

    /// Applies an accepted advert.
    public mutating func apply(_ advert: Advert, from host: String, now: UInt64) -> Change {
        let existing = entries[advert.device]
        if let existing, existing.advert.sequence > advert.sequence { return .ignored }
        guard advert.flags.contains(.isCurrent) else {
            // A goodbye removes the activity it names, or anything older from that device.
            guard existing != nil else { return .ignored }
            entries[advert.device] = nil
            return .removed
        }
        if let existing, existing.advert.sequence == advert.sequence {
            entries[advert.device] = Entry(advert: advert, host: host, firstSeen: existing.firstSeen, lastSeen: now)
            return existing.advert.flags.revision == advert.flags.revision ? .refreshed : .revised
        }
        entries[advert.device] = Entry(advert: advert, host: host, firstSeen: now, lastSeen: now)
        return existing == nil ? .added : .replaced
    }

    /// Removes entries not re-advertised in time; returns them.
    public mutating func expire(now: UInt64) -> [Entry] {
        let gone = entries.values.filter { now > $0.lastSeen + timeToLiveMilliseconds }
        for entry in gone { entries[entry.advert.device] = nil }
        return gone
    }

    /// Removes every entry of a device (it was removed from the account, or its session failed).
    public mutating func forget(_ device: DeviceID) {
        entries[device] = nil
    }
}
