/// The session service's decisions about idle links, pure (issue 26 item 1; ISSUE 10 items 1 and 7): which links
/// this side closes, when the next one could be due, and when the memory a burst of connections left is given back.
///
/// No I/O, no clock: the time is passed in as uptime nanoseconds (the clock ``PeerLink`` stamps its activity with),
/// each link as the few facts the sweep judges it by. ``SessionService`` gathers those from its ``PeerLinks``, waits
/// as long as ``wait(for:peak:now:)`` says, and closes what ``closes(_:now:)`` names.
struct LinkSweep: Sendable, Equatable {
    /// What the sweep knows of one link.
    struct Link: Sendable, Equatable {
        /// This side opened it: an idle link is closed by the side that opened it.
        var dialedByMe: Bool
        /// Another link to the same device is kept instead (ISSUE 10 item 1): closed as soon as nothing is in flight
        /// on it by the side that opened it, after ``LinkSweep/retiredGrace`` by the other.
        var retired: Bool
        /// Uptime nanoseconds since nothing has been in flight in either direction; nil while something is.
        var idleSince: UInt64?
    }

    /// Seconds without a request in either direction before the side that dialled a link closes it.
    var idleTimeout: Double = 120
    /// Seconds a retired link the peer opened may stay open, idle, before this side closes it.
    var retiredGrace: Double = 10
    /// Connections open at once past which the memory they leave is given back when they have gone.
    var burst = PeerLinks.burst
    /// How often a burst is looked at again until its memory is given back.
    static let burstCheck = Duration.seconds(5)

    /// Whether this side closes `link` at `now`: a link it dialled, idle for ``idleTimeout``; a retired one it
    /// dialled, as soon as it is idle; a retired one the peer dialled, idle for ``retiredGrace``. A link in use,
    /// not retired, that the peer dialled is the peer's to close.
    func closes(_ link: Link, now: UInt64) -> Bool {
        guard let since = link.idleSince else { return false }
        let idle = now > since ? Double(now - since) / 1e9 : nil
        if link.retired { return link.dialedByMe || idle.map { $0 >= retiredGrace } == true }
        return link.dialedByMe && idle.map { $0 >= idleTimeout } == true
    }

    /// How long until ``closes(_:now:)`` could close one of `links`, or the memory of a burst could be given back
    /// (`peak`: the most connections open at once since it was last given back): nil while nothing could be done
    /// (no link this side must close). A link in use now cannot be due before a whole timeout from now; a burst is
    /// looked at every ``burstCheck``. A millisecond late, so the link is due when the sweep looks.
    func wait(for links: [Link], peak: Int, now: UInt64) -> Duration? {
        if peak >= burst { return Self.burstCheck }
        var due: [UInt64] = []
        for link in links {
            if link.retired {
                due.append((link.idleSince ?? now) + (link.dialedByMe ? 0 : UInt64(retiredGrace * 1e9)))
            } else if link.dialedByMe {
                due.append((link.idleSince ?? now) + UInt64(idleTimeout * 1e9))
            }
        }
        guard let next = due.min() else { return nil }
        return .nanoseconds(Int64(next > now ? next - now : 0) + 1_000_000)
    }

    /// Whether the allocator gives its free memory back now: `burst` connections or more have closed since the most
    /// open at once (ISSUE 10 item 7: glibc keeps freed memory in its arenas; 2,000 connections left 60 MB).
    func givesMemoryBack(peak: Int, open: Int) -> Bool {
        peak - open >= burst
    }
}
