import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// What peers ask of this agent over its links, through its ``AgentForwarder`` (a stream's opening goes to the
/// handoff coordinator, which keeps the streams).
extension Agent {
    /// The originating side (C4, A7, A8): what another device of the account asks over a session. A fetch and a
    /// describe are answered from the link's event loop and the thread that has the app's save, with no task between
    /// them (issue 11); a sync reads and writes the state folder, so it runs in the session service's work.
    func respond(
        to request: SessionMultiplexer.Request,
        on link: PeerLink,
        reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> PeerLink.Cancel {
        switch request {
        case .sync(let roster, let agentPort):
            let work = sessions.start { [self] in reply(answerSync(roster: roster, agentPort: agentPort, on: link)) }
            return { work.cancel() }
        case .describe(let sequence):
            guard let summary = handoff.summary(sequence: sequence) else {
                reply(.failed(.notCurrent, "that activity is no longer current on \(identity.name)"))
                return {}
            }
            reply(.summary(summary))
            return {}
        case .fetch(let sequence, let deadlineMilliseconds, let confirms):
            return handoff.answerFetch(sequence: sequence, deadlineMilliseconds: deadlineMilliseconds, for: link.peer, confirms: confirms, reply: reply)
        case .openStream:
            // PeerLink hands stream requests to respondToStream(id:...), which needs the request's id.
            reply(.failed(.protocolViolation, "a stream request without its id"))
            return {}
        case .ping:
            reply(.pong)
            return {}
        }
    }

    /// The peer's app has the state of our activity advertised with `sequence` (its `continued` notice): our app
    /// hears `continued` now (A8; issue 25 item 4).
    func peerContinued(sequence: UInt64, on link: PeerLink) {
        handoff.peerContinued(asker: link.peer, sequence: sequence)
    }

    /// A peer's roster sync: merged into the state folder, answered with the roster as merged.
    func answerSync(roster: Data, agentPort: Int?, on link: PeerLink) -> SessionMultiplexer.Reply {
        do {
            _ = try AccountFlows.absorbSync(
                roster: roster,
                agentPort: agentPort,
                from: link.peer,
                host: link.channel.remoteAddress?.hostText,
                dialed: nil,
                store: store,
                log: { [logger] line in logger.info("\(Agent.logLine(line))", metadata: ["peer": "\(link.peer.short)"]) }
            )
            rosterChanged()
            return .synced(roster: try store.roster().encoded(), agentPort: port)
        } catch let error as BatonAgentError where error.code == .peerRefused || error.code == .protocolViolation {
            return .failed(.refused, error.message)
        } catch {
            // The reason names files on this device: it stays in this device's log (ISSUE 10 item 8).
            log("sync from \(link.peer.short) failed: \(error)")
            return .failed(.refused, "\(identity.name) cannot merge rosters now (its account state cannot be read or written; its log says why)")
        }
    }

    func linkClosed(_ link: PeerLink) {
        links.remove(link)
    }

    func linkOpened(_ link: PeerLink) {
        sessions.linksChanged()
        // A peer not synced over this session yet is synced, once the request that opened the link has had its
        // answer: a sync reads and writes the state folder on both devices (fsyncs), and racing a cold
        // continuation's fetch it doubled that continuation's time (issue 11).
        // On the agent's clock (issue 26 item 3): a virtual clock starts it by advancing.
        _ = clock.schedule(in: Self.syncAfterLinkOpened, on: link.channel.eventLoop) { [syncTrigger] in syncTrigger.ring() }
    }

    /// How long after a link opens its roster sync starts.
    static let syncAfterLinkOpened = Duration.milliseconds(100)

    // MARK: The continuing side

    /// Continues the activity offered by `device` (an id, a prefix of one, or a name; the newest offer when nil):
    /// the agent names the app by the advert's keyed type hash, and its ``handoff`` coordinator does the rest (the
    /// broker picks the way: launch, `willContinue`, fetch, deliver, or why not: C3-C8). A continuation still running
    /// is cancelled first (C6).
    public func continueNearby(device selector: String?) async -> ContinuationOutcome {
        let started = clock.uptimeNanoseconds()
        guard let entry = nearbyEntry(matching: selector) else {
            let what = selector.map { "nothing nearby from a device matching \"\($0)\"" } ?? "nothing nearby to continue"
            return ContinuationOutcome(app: "", reason: "", failure: .notFound, message: what, microseconds: 0)
        }
        // D1, D3: the keyed hash of team + type names the app before any state moves.
        var route = HandoffBroker.Route.byPayload
        var reason = ""
        if let routed = state.withLockedValue({ appFor(entry.advert, state: $0) }), registry.app(bundleIdentifier: routed.bundle) != nil {
            // Whether the app runs is looked up by the coordinator, on its loop.
            route = .app(bundle: routed.bundle, activityType: routed.decision.deliveredActivityType ?? routed.type, running: nil)
            reason = routed.decision.reason
        } else if !entry.advert.flags.contains(.hasWebpageURL) {
            // Issue 25 item 4: no app claims the hash and there is no web page to fall back on (E1-E3), so no state
            // could go anywhere: fail now, before the originating app is asked for it.
            let summary = discovery.summary(of: entry.advert)
            let what = summary.map { "\($0.activityType) (from \($0.bundleIdentifier))" } ?? "the activity advertised"
            reason = "no app here claims the advertised type hash, and the activity has no web page (D1, D3)"
            route = .noApp(message: "no app on this device continues \(what) (D1, D3)")
        }
        return await handoff.continueActivity(entry: entry, reason: reason, started: started, route: route)
    }

    /// How long after the broker's fetch deadline a link gives up on the request by itself, in seconds.
    static let linkBackstop = 5.0

    /// The nearby entry `selector` names: a device id or a prefix of one, or a device name.
    func nearbyEntry(matching selector: String?) -> NearbyTable.Entry? {
        discovery.entry(matching: selector)
    }
}

