import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import NIOCore

extension Agent {
    /// The keyed hash an activity is advertised under: team and type, or the host of a web page (E3).
    static func typeHash(_ notice: ActivityNotice, team: String, keys: AdvertKeys) -> [UInt8] {
        if notice.activityType == AppRecord.browsingWebActivityType, let host = notice.webpageHost {
            return keys.typeHash(webHost: host)
        }
        return keys.typeHash(team: team, activityType: notice.activityType)
    }

    /// Seals and sends one advert (or, with `isCurrent` false, a goodbye: A9) to every target.
    func sendAdvert(_ current: HandoffBroker.CurrentActivity, isCurrent: Bool) {
        let (keys, targets) = state.withLockedValue { ($0.keys, $0.targets) }
        let notice = current.notice
        var flags = Advert.Flags().with(revision: current.revision)
        if notice.webpageHost != nil { flags.insert(.hasWebpageURL) }
        if notice.supportsStreams { flags.insert(.supportsStreams) }
        if isCurrent { flags.insert(.isCurrent) }
        let advert = Advert(
            device: identity.id,
            sequence: current.sequence,
            typeHash: Self.typeHash(notice, team: current.team, keys: keys),
            flags: flags,
            sessionPort: UInt16(port),
            timestamp: Self.now()
        )
        guard let datagram = try? keys.seal(advert) else { return }
        adverts?.send(datagram, to: targets)
        if isCurrent {
            lastAdvert.withLockedValue { $0 = Self.uptimeMilliseconds() }
            advertBell.ring()  // the loop re-advertises from now on
        }
    }

    /// Re-advertises the current activity every `advertInterval`, expires silent nearby entries, and re-advertises
    /// at once when the multicast memberships changed with the interfaces (the advert socket hears of that from the
    /// kernel, issue 26 item 6; checked every round while sends fail). Sleeps until the earliest of those is due;
    /// with nothing current and nothing nearby, nothing wakes it (issue 11 part 8) but an interface change, or,
    /// where the kernel's word cannot be had, the interface check every ``membershipCheckInterval``.
    func advertLoop() async {
        let interval = UInt64(configuration.advertInterval * 1000)
        let timeToLive = UInt64(configuration.nearbyTimeToLive * 1000)
        let multicast = adverts?.multicastIsOn == true
        var nextMembershipCheck = Self.uptimeMilliseconds() + Self.membershipCheckInterval
        adverts?.whenInterfacesChange { [advertBell] in advertBell.ring() }
        while !Task.isCancelled {
            let now = Self.uptimeMilliseconds()
            // A timer only where the kernel does not say: each wake of this task on a timer started a thread.
            let polling = multicast && adverts?.watchesInterfaces != true
            let (offered, oldest) = state.withLockedValue { state in
                (state.broker.current?.isOffered(at: Self.now()) == true, state.nearby.entries.values.map(\.lastSeen).min())
            }
            var deadlines: [UInt64] = []
            if offered { deadlines.append(lastAdvert.withLockedValue { $0 } + interval) }
            if let oldest { deadlines.append(now + (oldest + timeToLive).subtractingSaturated(Self.now()) + 1) }
            if polling { deadlines.append(nextMembershipCheck) }
            let wait = deadlines.min().map { Duration.milliseconds(Int64($0.subtractingSaturated(now))) }
            await advertBell.wait(timeout: wait)
            guard !Task.isCancelled else { return }
            var networkChanged = false
            // While sends fail (a link down, say), the interfaces are checked every round, not every 10 s: the
            // moment the link is back its groups are joined and the advert goes out (issue 25 item 1).
            if multicast, (polling && Self.uptimeMilliseconds() >= nextMembershipCheck) || adverts?.isFailing == true {
                nextMembershipCheck = Self.uptimeMilliseconds() + Self.membershipCheckInterval
                networkChanged = adverts?.refreshMemberships(log: { [logger] line in logger.info("\(line)") }) ?? false
            }
            if adverts?.takeInterfacesChanged() == true { networkChanged = true }
            if networkChanged { log("network interfaces changed: advertising again") }
            let current = state.withLockedValue(\.broker.current)
            if let current, current.isOffered(at: Self.now()),
                networkChanged || Self.uptimeMilliseconds() >= lastAdvert.withLockedValue({ $0 }) + interval
            {
                sendAdvert(current, isCurrent: true)
            }
            let expired = state.withLockedValue { $0.nearby.expire(now: Self.now()) }
            for entry in expired {
                logger.info("nearby: \(entry.advert.device.short) expired (no advert for \(PeerLink.format(configuration.nearbyTimeToLive)))")
                nearbyChanged(entry.advert.device, .removed)
            }
        }
    }

    /// Milliseconds between checks of the network interfaces for multicast where the kernel's change messages
    /// cannot be had (``InterfaceWatch``: a netlink socket, which makes it none elsewhere).
    static let membershipCheckInterval: UInt64 = 10_000

    /// Milliseconds of uptime: the clock the loops sleep by.
    static func uptimeMilliseconds() -> UInt64 {
        DispatchTime.now().uptimeNanoseconds / 1_000_000
    }

    /// After a burst of connections has ended (many more were open at once than now), hands the memory the
    /// allocator kept for them back to the system (ISSUE 10 item 7: glibc keeps freed memory in its per-thread
    /// arenas; 2,000 connections left 60 MB behind per round). Costs a few milliseconds, only after such a burst.
    func givesMemoryBackAfterBursts() {
        let (peak, open) = links.takePeak()
        guard peak - open >= PeerLinks.burst else { return }
        Allocator.giveBackFreeMemory()
    }

    /// One datagram from the network: through the receiver's checks into the nearby table.
    func receiveAdvert(_ datagram: Data, from source: SocketAddress) {
        let now = Self.now()
        let (outcome, change) = state.withLockedValue { state -> (AdvertReceiver.Outcome, (DeviceID, NearbyTable.Change)?) in
            let roster = state.roster
            let outcome = state.receiver.receive(datagram, now: now) { roster.isActive($0) }
            guard case .accepted(let advert) = outcome else { return (outcome, nil) }
            // The address as text only for an advert that counts (a flood's datagrams never get here).
            let change = state.nearby.apply(advert, from: source.hostText ?? "?", now: now)
            if change == .replaced || change == .removed || change == .revised { state.summaries[advert.device] = nil }
            return (outcome, (advert.device, change))
        }
        advertRefused(outcome, from: source)
        if case .stale(let advert, _) = outcome { probeClock(of: advert, from: source) }
        guard let (device, change) = change, change != .refreshed, change != .ignored else { return }
        if change == .added { advertBell.ring() }  // its expiry is due some time
        if change == .removed {
            logger.info("nearby: \(device.short) withdrew its activity (goodbye, A9)", metadata: ["peer": "\(device.short)"])
        }
        nearbyChanged(device, change)
    }

    /// Logs a refused advert, once per kind (issue 25 item 12): a flood of forged or replayed datagrams is one line.
    func advertRefused(_ outcome: AdvertReceiver.Outcome, from source: SocketAddress) {
        // Only when a line is written (once per kind), not for every datagram of a flood.
        var from: String { "from \(source.hostText ?? "?"):\(source.port ?? 0)" }
        switch outcome {
        case .accepted, .own:
            return
        case .notForUs:
            refusals.refused(.advertNotForUs) {
                "an advert \(from): not sealed under this account's key (forged, another account's, or sealed before a key rotation)"
            }
        case .stale:
            refusals.refused(.advertStale) { "an advert \(from): its time is outside the replay window (\(AdvertReceiver.Limits().replayWindowMilliseconds / 1000) s)" }
        case .replayed:
            refusals.refused(.advertReplayed) { "an advert \(from): replayed (its nonce was seen within the replay window)" }
        case .notMember(let device):
            refusals.refused(.advertNotMember) { "an advert \(from): sealed by \(device.short), which is not a member of this account" }
        case .rateLimited:
            refusals.refused(.advertRateLimited) { "an advert \(from): its device sent more than its allowance of adverts a second" }
        }
    }

    /// Tells observers and watching command lines that the nearby list changed.
    func nearbyChanged(_ device: DeviceID, _ change: NearbyTable.Change) {
        for observer in nearbyObservers.withLockedValue({ $0 }) { observer(device, change) }
        let watchers = state.withLockedValue { Array($0.watchers.values) }
        guard !watchers.isEmpty else { return }
        appWork.start { [self] in
            let items = await nearbyItems(describe: true)
            for watcher in watchers { watcher.send(.nearbyChanged(items)) }
        }
    }

    // MARK: What is nearby

    /// The activities other devices offer now, newest first, with the app here that would continue each. With
    /// `describe`, asks each originating device for type and title it has not told yet (C3), at most 1 s.
    public func nearbyItems(describe: Bool = false) async -> [NearbyItem] {
        if describe {
            let missing = entriesToDescribe()
            await withTaskGroup(of: Void.self) { group in
                for entry in missing {
                    group.addTask { await self.describe(entry) }
                }
            }
        }
        return nearbyItemsNow()
    }

    /// The nearby entries whose type and title this device has not been told yet.
    func entriesToDescribe() -> [NearbyTable.Entry] {
        state.withLockedValue { state in
            state.nearby.entries.values.filter { entry in
                state.summaries[entry.advert.device].map { !$0.describes(entry.advert) } ?? true
            }
        }
    }

    /// The activities other devices offer now, with what is known of them (``nearbyItems(describe:)`` without the
    /// asking).
    func nearbyItemsNow() -> [NearbyItem] {
        let now = Self.now()
        return state.withLockedValue { state in
            state.nearby.entries.values.sorted { $0.lastSeen > $1.lastSeen }.map { entry in
                let device = entry.advert.device
                let summary = state.summaries[device].flatMap { $0.describes(entry.advert) ? $0.summary : nil }
                return NearbyItem(
                    device: device.description,
                    deviceName: state.roster.members[device]?.name ?? device.short,
                    sequence: entry.advert.sequence,
                    ageMilliseconds: now > entry.firstSeen ? now - entry.firstSeen : 0,
                    app: appFor(entry.advert, state: state)?.bundle ?? "",
                    activityType: summary?.activityType,
                    title: summary?.title
                )
            }
        }
    }

    /// The app here that continues what `advert` names, found by its keyed type hash and the router (D1, D3).
    func appFor(_ advert: Advert, state: State) -> (bundle: String, team: String, type: String, decision: RouteDecision)? {
        for candidate in state.hashIndex[advert.typeHash] ?? [] {
            let decision = router.route(RouteRequest(activityType: candidate.type, teamIdentifier: candidate.team))
            if case .app(let bundle) = decision.target { return (bundle, candidate.team, candidate.type, decision) }
        }
        return nil
    }

    /// Asks the originating device what its activity is (type, title), and remembers the answer for this sequence.
    func describe(_ entry: NearbyTable.Entry) async {
        guard let link = try? await links.link(to: entry.advert.device, host: entry.host, port: Int(entry.advert.sessionPort)) else { return }
        remember(await link.request(.describe(sequence: entry.advert.sequence), timeout: 1), for: entry)
    }

    /// Keeps the type and title a device told for `entry`'s sequence.
    func remember(_ reply: SessionMultiplexer.Reply, for entry: NearbyTable.Entry) {
        if case .summary(let summary) = reply {
            state.withLockedValue { $0.summaries[entry.advert.device] = NearbySummary(of: entry.advert, summary) }
        }
    }
}

/// What another device said its current activity is (C3), and which advert of it that answers: the sequence and
/// the revision (a new title moves the revision on, and the device is asked again).
struct NearbySummary: Sendable {
    let sequence: UInt64
    let revision: UInt8
    let summary: ActivitySummary

    init(of advert: Advert, _ summary: ActivitySummary) {
        sequence = advert.sequence
        revision = advert.flags.revision
        self.summary = summary
    }

    /// Whether this is what `advert` offers now.
    func describes(_ advert: Advert) -> Bool {
        sequence == advert.sequence && revision == advert.flags.revision
    }
}

extension UInt64 {
    /// `self - other`, or 0 when `other` is larger.
    func subtractingSaturated(_ other: UInt64) -> UInt64 {
        self > other ? self - other : 0
    }
}
