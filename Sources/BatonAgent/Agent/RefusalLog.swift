import Dispatch
import Logging
import NIOConcurrencyHelpers

/// What the agent refused from outside (a device not in the roster, a replayed advert, a process of another user),
/// said in its log once per kind, not once per packet (issue 25 item 12).
///
/// An attacker decides how often a refusal happens: a flood of forged datagrams is thousands a second. The first
/// refusal of each kind is logged at once, with what was refused and why, and its kind in brackets (`[advertReplayed]`,
/// the name `grep` and the security suite look for); later ones of that kind are only counted, and the first one
/// after ``quietPeriod`` is logged with how many came between, so a sustained attack costs a line every ten minutes
/// per kind. The kinds are a closed set, so this holds no more than a few counters whatever arrives.
final class RefusalLog: Sendable {
    /// What was refused, each named as the log says it (its case name). Not `String`-backed: such an enum hashes its
    /// name's characters, and ``RefusalLog/refused(_:_:now:)`` runs for every datagram of a flood.
    enum Kind: Sendable, CaseIterable {
        /// A TLS session from a device that is no member of the account (unpaired).
        case unknownDevice
        /// A TLS session from a device removed from the account.
        case revokedDevice
        /// A TLS session whose handshake failed before a certificate could be judged: none presented, not TLS 1.3,
        /// garbage, a client that gave up, or too slow.
        case handshakeFailed
        /// A device this agent dialled presented a certificate it does not accept there (not the pinned device).
        case certificateRefused
        /// An advert not sealed under the account's current key: forged, another account's, or sealed before a key
        /// rotation (``AdvertReceiver/Outcome/notForUs``).
        case advertNotForUs
        /// An advert outside the replay window (``AdvertReceiver/Outcome/stale``).
        case advertStale
        /// An advert whose nonce was seen within the window (``AdvertReceiver/Outcome/replayed``).
        case advertReplayed
        /// An advert sealed by a device that is no active member (``AdvertReceiver/Outcome/notMember(_:)``).
        case advertNotMember
        /// More valid adverts from one member than its allowance (``AdvertReceiver/Outcome/rateLimited``).
        case advertRateLimited
        /// A continued state naming a document in a synced folder wrongly (a `baton-folder:` URL that is malformed or
        /// leaves its folder): the other device broke the protocol (C9).
        case documentURLInvalid
        /// A local process refused on the app socket: another user's, an impostor of an app, an unknown app.
        case appNotPermitted
        /// A local client that broke the app socket's protocol: an unreadable or oversize frame, a message not
        /// allowed for it, an unsupported version.
        case appMalformed

        /// The name in brackets in the log (`advertReplayed`).
        var name: String { "\(self)" }
    }

    /// How long after a kind was last logged its refusals are only counted.
    static let quietPeriod: UInt64 = 600 * 1_000_000_000

    struct Counter {
        /// Uptime (ns) of the last line logged for the kind.
        var loggedAt: UInt64
        /// Refusals of the kind since then, not logged.
        var unlogged = 0
    }

    let logger: Logger
    /// The agent's clock: its uptime times the quiet periods.
    let clock: AgentClock
    let counters = NIOLockedValueBox([Kind: Counter]())

    init(logger: Logger, clock: AgentClock = .system) {
        self.logger = logger
        self.clock = clock
    }

    /// Records a refusal of `kind`; `what` (what was refused, from whom, and why) is only built when a line is due.
    func refused(_ kind: Kind, _ what: () -> String, now: UInt64? = nil) {
        let now = now ?? clock.uptimeNanoseconds()
        let due: Int? = counters.withLockedValue { counters in
            guard let counter = counters[kind], now < counter.loggedAt + Self.quietPeriod else {
                // The first of its kind, or the first since the quiet period: logged, with how many came between.
                let between = counters[kind]?.unlogged ?? 0
                counters[kind] = Counter(loggedAt: now)
                return between
            }
            counters[kind]?.unlogged += 1
            return nil
        }
        guard let due else { return }
        let line = due == 0
            ? "refused \(what()) [\(kind.name)]; more of these are counted, and summed up at most every 10 min"
            : "refused \(what()) [\(kind.name)], and \(due) more of these since the last such line (10 min or more ago)"
        logger.notice("\(Agent.logLine(line))")
    }
}

/// A session refused in its TLS handshake (``PeerLinks/refused``): where it came from or went, the device whose
/// certificate was refused (nil when none was judged: none presented, or the handshake failed first), which side
/// dialled, and the handshake's error.
struct SessionRefusal: Sendable {
    let address: String
    let device: DeviceID?
    let dialled: Bool
    let error: any Error
}

extension Agent {
    /// Logs a session refused in its TLS handshake, once per kind: a device not in the roster (unpaired), one removed
    /// from it, a certificate not the one expected where this agent dialled, or a handshake that failed before any
    /// certificate was judged.
    func sessionRefused(_ refusal: SessionRefusal) {
        let error = "\(refusal.error)"
        guard let device = refusal.device else {
            return refusals.refused(.handshakeFailed) { "a TLS session from \(refusal.address): \(error)" }
        }
        if refusal.dialled {
            return refusals.refused(.certificateRefused) {
                "the device at \(refusal.address): it presented the certificate of \(device.short), not that of a device this agent accepts there"
            }
        }
        let revoked = state.withLockedValue { $0.roster.revocations[device] != nil }
        if revoked {
            refusals.refused(.revokedDevice) { "a TLS session from \(refusal.address): device \(device.short) was removed from this account" }
        } else {
            refusals.refused(.unknownDevice) { "a TLS session from \(refusal.address): device \(device.short) is not a member of this account (not paired)" }
        }
    }
}

extension Agent {
    /// Logs a local process refused on the app socket or the session bus, once per kind: another user's process, an
    /// impostor of an app or an unknown app (`notPermitted`, `unknownApp`), or a client breaking the protocol (an
    /// unreadable or oversize frame, a message not allowed for it, an unknown version). Refusals that are an app's
    /// ordinary answers (a stream that expired, too many streams, an app already connected) are not logged here.
    func ipcRefused(_ connection: IPCConnection, code: IPCRefusal, message: String) {
        let kind: RefusalLog.Kind
        switch code {
        case .notPermitted, .unknownApp: kind = .appNotPermitted
        case .malformedMessage, .protocolViolation, .unsupportedVersion: kind = .appMalformed
        default: return
        }
        let credentials = connection.credentials
        // Issue 28: the same checks refuse callers on the session bus; the line says which way the client came.
        let way = connection.conduit is DBusAppConduit || connection.conduit is DBusStreamConduit ? "on the session bus" : "on the app socket"
        refusals.refused(kind) { "a client \(way) (pid \(credentials.pid), uid \(credentials.uid)): \(message) [\(code)]" }
    }
}
