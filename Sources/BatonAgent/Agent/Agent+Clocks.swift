import BatonProtocol
import Logging
import NIOCore

/// Devices whose clocks disagree (issue 25 item 9). Adverts carry the sender's time and are refused outside a 30 s
/// window, against replays; judged against this device's clock, a laptop ten minutes off was never seen. Each side of
/// a session now sends its clock (`clock`), and the receiver judges that device's adverts against it. A device heard
/// only by adverts, all stale, is dialled (at most every ``clockProbeInterval``): the session that opens teaches the
/// offset both ways, and the next advert is heard.
extension Agent {
    /// How often a device whose adverts are all stale is dialled to learn its clock, at most.
    static let clockProbeInterval: UInt64 = 30_000

    func peerClock(_ milliseconds: UInt64, on link: PeerLink) {
        let now = clock.wall()
        // The dialling side spoke first (once per link); the answer is this side's clock, once.
        if !link.dialedByMe { link.send(.clock(milliseconds: now)) }
        // Said when the difference first exceeds the window, or moves by more than it (a clock that was set).
        guard let offset = discovery.learnClock(of: link.peer, theirs: milliseconds, now: now) else { return }
        let seconds = offset.magnitude / 1000
        let name = state.withLockedValue { $0.roster.members[link.peer]?.name } ?? link.peer.short
        logger.notice(
            "\(name)'s clock is \(seconds) s \(offset > 0 ? "ahead of" : "behind") this device's; its adverts are judged by its own clock (set both with NTP: timedatectl set-ntp true)",
            metadata: ["peer": "\(link.peer.short)"]
        )
    }

    /// An authenticated advert from a member, outside the window by this device's idea of its clock: dial it, so
    /// the session tells both sides the other's clock. Not more than every ``clockProbeInterval`` per device, and
    /// only for active members, so a replayed advert costs at most that one connection attempt.
    func probeClock(of advert: Advert, from source: SocketAddress) {
        guard let host = source.hostText, advert.sessionPort > 0 else { return }
        let now = clock.wall()
        guard discovery.clockProbeDue(advert.device, now: now, interval: Self.clockProbeInterval) else { return }
        sessions.start { [self] in
            _ = try? await links.connectReusing(host: host, port: Int(advert.sessionPort))
        }
    }
}
