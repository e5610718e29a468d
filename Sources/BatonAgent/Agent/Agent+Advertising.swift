import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import NIOCore

/// The agent's side of discovery (issue 26 item 1): ``Discovery`` owns the sockets' state and the nearby table and
/// ``DiscoveryService`` runs its loop; the agent passes on the broker's adverts, the datagrams that arrive, and
/// builds nearby items with the apps here that would continue them.
extension Agent {
    /// Seals and sends one advert (or, with `isCurrent` false, a goodbye: A9) to every target: the broker's
    /// `.advertise` and `.goodbye`, told to discovery.
    func sendAdvert(_ current: HandoffBroker.CurrentActivity, isCurrent: Bool) {
        discovery.advertise(current, isCurrent: isCurrent)
    }

    /// The discovery loop (its state is the ``discovery``); its shutdown stops the broker first, so the goodbye goes
    /// out on the still open socket.
    func discoveryService() -> DiscoveryService {
        DiscoveryService(
            discovery: discovery,
            advertInterval: UInt64(configuration.advertInterval * 1000),
            timeToLive: configuration.nearbyTimeToLive,
            logger: logger,
            stop: { [weak self] in await self?.stopBroker() }
        )
    }

    /// Milliseconds between checks of the network interfaces for multicast where the kernel's change messages
    /// cannot be had (``InterfaceWatch``: a netlink socket, which makes it none elsewhere).
    static let membershipCheckInterval: UInt64 = 10_000


    /// One datagram from the network: discovery judges it and keeps it; a refusal is logged here, and a member
    /// whose clock is off is dialled.
    func receiveAdvert(_ datagram: Data, from source: SocketAddress) {
        let outcome = discovery.receive(datagram, from: source)
        advertRefused(outcome, from: source)
        if case .stale(let advert, _) = outcome { probeClock(of: advert, from: source) }
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

    /// Tells watching command lines that the nearby list changed (an observer of ``discovery``): at once, from the
    /// table, on the loop the advert arrived on; then, when an offer is not described yet, again once its device
    /// has told type and title (C3). Waiting for the description first put a session round trip and two task hops
    /// between the advert and the watcher (issue 26 item 5: 4.5-5x the floor's hop on that leg).
    func tellWatchersNearbyChanged() {
        // The watchers are the handoff coordinator's, on the loop: an advert arrives there, so this runs at once.
        handoff.withWatchers { [self] watchers in
            let items = nearbyItemsNow()
            for watcher in watchers { watcher.send(.nearbyChanged(items)) }
            guard !discovery.entriesToDescribe().isEmpty else { return }
            appWork.start { [self] in
                let described = await nearbyItems(describe: true)
                // Nothing learnt (the device did not answer, or another change told it already): no second message.
                guard described.map(\.described) != items.map(\.described) else { return }
                for watcher in watchers { watcher.send(.nearbyChanged(described)) }
            }
        }
    }

    // MARK: What is nearby

    /// The activities other devices offer now, newest first, with the app here that would continue each. With
    /// `describe`, asks each originating device for type and title it has not told yet (C3), at most 1 s.
    public func nearbyItems(describe: Bool = false) async -> [NearbyItem] {
        if describe {
            let missing = discovery.entriesToDescribe()
            await withTaskGroup(of: Void.self) { group in
                for entry in missing {
                    group.addTask { await self.describe(entry) }
                }
            }
        }
        return nearbyItemsNow()
    }

    /// The activities other devices offer now, with what is known of them (``nearbyItems(describe:)`` without the
    /// asking).
    func nearbyItemsNow() -> [NearbyItem] {
        let now = discovery.clock.wall()
        let offers = discovery.offers()
        return state.withLockedValue { state in
            offers.map { offer in
                let app = appFor(offer.entry.advert, state: state)?.bundle ?? ""
                return NearbyItem(
                    device: offer.entry.advert.device.description,
                    deviceName: offer.deviceName,
                    sequence: offer.entry.advert.sequence,
                    ageMilliseconds: now > offer.entry.firstSeen ? now - offer.entry.firstSeen : 0,
                    app: app,
                    activityType: offer.summary?.activityType,
                    title: offer.summary?.title,
                    // Issue 27 item 3: which application the agent's own media or documents app opens it with.
                    opensWith: Agent.inAgentApps.contains(app) ? offer.opensWith : nil
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

    /// Keeps the type and title a device told for `entry`'s sequence, with the application that will open it here.
    func remember(_ reply: SessionMultiplexer.Reply, for entry: NearbyTable.Entry) {
        if case .summary(let summary) = reply { discovery.remember(summary, opensWith: openingApplication(summary), for: entry) }
    }
}

extension NearbyItem {
    /// What a description adds to an item, with the offer it is of.
    fileprivate var described: [String?] { [device, String(sequence), app, activityType, title, opensWith] }
}

extension UInt64 {
    /// `self - other`, or 0 when `other` is larger.
    func subtractingSaturated(_ other: UInt64) -> UInt64 {
        self > other ? self - other : 0
    }
}
