import BatonCore
import Logging
import ServiceLifecycle

/// Advertising the current activity and discovering others' (issue 26 item 1): re-advertising the current activity
/// every interval, expiring silent nearby entries, following network changes, and at shutdown the goodbye (A9) and
/// closing the advert socket.
///
/// It owns discovery's state through its ``Discovery`` (the socket, the receiver, the nearby table, the activity
/// advertised, the doorbell its loop sleeps on), the one handle the agent keeps; it holds no agent. What it needs
/// beyond that comes in as narrow values: the interval, the time to live, the logger, and what the shutdown stops
/// first (the agent's broker, whose goodbye goes out through ``Discovery/advertise(_:isCurrent:)`` while the socket
/// is still open). Time comes from the discovery's injected clock.
struct DiscoveryService: Service, CustomStringConvertible {
    let discovery: Discovery
    /// Milliseconds between adverts of the current activity.
    let advertInterval: UInt64
    /// Seconds a nearby entry lives without an advert (for the log line of an expiry; the table keeps it too).
    let timeToLive: Double
    let logger: Logger
    /// Called at shutdown before the socket closes: stops the broker, whose goodbye goes out and whose waiters fail.
    let stop: @Sendable () async -> Void

    var description: String { "advertising" }

    func run() async {
        await cancelWhenGracefulShutdown { await advertLoop() }
        await stop()
        discovery.socket?.close()
    }

    /// Re-advertises the current activity every `advertInterval`, expires silent nearby entries, and re-advertises
    /// at once when the multicast memberships changed with the interfaces (the advert socket hears of that from the
    /// kernel, issue 26 item 6; checked every round while sends fail). Sleeps until the earliest of those is due;
    /// with nothing current and nothing nearby, nothing wakes it (issue 11 part 8) but an interface change, or,
    /// where the kernel's word cannot be had, the interface check every ``Agent/membershipCheckInterval``.
    private func advertLoop() async {
        let clock = discovery.clock
        let adverts = discovery.socket
        let multicast = adverts?.multicastIsOn == true
        var nextMembershipCheck = clock.uptime() + Agent.membershipCheckInterval
        adverts?.whenInterfacesChange { [bell = discovery.bell] in bell.ring() }
        while !Task.isCancelled {
            let now = clock.uptime()
            // A timer only where the kernel does not say: each wake of this task on a timer started a thread.
            let polling = multicast && adverts?.watchesInterfaces != true
            var deadlines: [UInt64] = []
            if let lastAdvert = discovery.readvertArmed(at: clock.wall()) { deadlines.append(lastAdvert + advertInterval) }
            if let oldest = discovery.oldestLastSeen {
                deadlines.append(now + (oldest + UInt64(timeToLive * 1000)).subtractingSaturated(clock.wall()) + 1)
            }
            if polling { deadlines.append(nextMembershipCheck) }
            let wait = deadlines.min().map { Duration.milliseconds(Int64($0.subtractingSaturated(now))) }
            await discovery.bell.wait(timeout: wait, clock: clock)
            guard !Task.isCancelled else { return }
            var networkChanged = false
            // While sends fail (a link down, say), the interfaces are checked every round, not every 10 s: the
            // moment the link is back its groups are joined and the advert goes out (issue 25 item 1).
            if multicast, (polling && clock.uptime() >= nextMembershipCheck) || adverts?.isFailing == true {
                nextMembershipCheck = clock.uptime() + Agent.membershipCheckInterval
                networkChanged = adverts?.refreshMemberships(log: { [logger] line in logger.info("\(line)") }) ?? false
            }
            if adverts?.takeInterfacesChanged() == true { networkChanged = true }
            if networkChanged { logger.info("network interfaces changed: advertising again") }
            if let (current, lastAdvert) = discovery.offered(at: clock.wall()),
                networkChanged || clock.uptime() >= lastAdvert + advertInterval
            {
                discovery.advertise(current, isCurrent: true)
            }
            for entry in discovery.expire(now: clock.wall()) {
                logger.info("nearby: \(entry.advert.device.short) expired (no advert for \(PeerLink.format(timeToLive)))")
            }
        }
    }
}
