import BatonCore
import BatonRegistry
import Foundation
import NIOCore

extension Agent: PeerLinkResponder {
    /// The originating side (C4, A7, A8): what another device of the account asks over a session.
    func respond(to request: SessionMultiplexer.Request, on link: PeerLink) async -> SessionMultiplexer.Reply {
        switch request {
        case .sync(let roster, let agentPort):
            do {
                _ = try AccountFlows.absorbSync(
                    roster: roster,
                    agentPort: agentPort,
                    from: link.peer,
                    host: link.channel.remoteAddress?.hostText,
                    dialed: nil,
                    store: store,
                    log: configuration.log
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
        case .describe(let sequence):
            guard let summary = state.withLockedValue({ $0.broker.summary(sequence: sequence) }) else {
                return .failed(.notCurrent, "that activity is no longer current on \(identity.name)")
            }
            return .summary(summary)
        case .fetch(let sequence, let deadlineMilliseconds):
            return await answerFetch(sequence: sequence, deadlineMilliseconds: deadlineMilliseconds)
        }
    }

    func linkClosed(_ link: PeerLink) {
        links.remove(link)
    }

    // MARK: The continuing side

    /// Continues the activity offered by `device` (an id, a prefix of one, or a name; the newest offer when nil):
    /// picks the app, launches it if needed, tells it at once (`willContinue`), fetches the state from the
    /// originating device and delivers it, or tells it why not (C3–C8). A continuation still running is cancelled
    /// first (C6).
    public func continueNearby(device selector: String?) async -> ContinuationOutcome {
        let started = DispatchTime.now().uptimeNanoseconds
        let outcome: @Sendable (String, String, String?, String) -> ContinuationOutcome = { app, reason, failure, message in
            ContinuationOutcome(app: app, reason: reason, failure: failure, message: message, microseconds: (DispatchTime.now().uptimeNanoseconds - started) / 1000)
        }
        guard let entry = nearbyEntry(matching: selector) else {
            let what = selector.map { "nothing nearby from a device matching \"\($0)\"" } ?? "nothing nearby to continue"
            return outcome("", "", "notFound", what)
        }
        let routed = state.withLockedValue { appFor(entry.advert, state: $0) }
        let id = state.withLockedValue { state -> UInt64 in
            defer { state.nextRequest += 1 }
            return state.nextRequest
        }
        cancelContinuations()
        state.withLockedValue { $0.continuations[id] = PendingContinuation(activityType: "") }

        let task = Task<ContinuationOutcome, Never> { [self] in
            let result: ContinuationOutcome
            if let routed, let app = registry.app(bundleIdentifier: routed.bundle) {
                result = await continueRouted(entry, app: app, routed: routed, id: id, outcome: outcome)
            } else {
                // No app here claims the advertised hash: the state itself says whether a web page takes it (E1-E3).
                result = await continueByPayload(entry, id: id, outcome: outcome)
            }
            settle(id, result)
            return result
        }
        state.withLockedValue { $0.continuations[id]?.cancel = { task.cancel() } }
        return await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
    }

    /// An app here claims the advertised type (D1): launch it, tell it at once, fetch the state, deliver (C4, C5).
    func continueRouted(
        _ entry: NearbyTable.Entry,
        app: AppRecord,
        routed: (bundle: String, team: String, type: String, decision: RouteDecision),
        id: UInt64,
        outcome: @Sendable (String, String, String?, String) -> ContinuationOutcome
    ) async -> ContinuationOutcome {
        let type = routed.decision.deliveredActivityType ?? routed.type
        let connection: IPCConnection
        switch await ensureRunning(app) {
        case .success(let running): connection = running
        case .failure(let failure): return outcome(app.bundleIdentifier, routed.decision.reason, failure.reason, failure.message)
        }
        guard beginContinuation(id, type: type, connection: connection) else {
            return outcome(app.bundleIdentifier, routed.decision.reason, FetchFailure.cancelled.rawValue, "a newer continuation replaced this one (C6)")
        }
        switch await fetch(entry) {
        case .success(let payload):
            if let (reason, message) = deliver(id, payload, to: connection, type: type) {
                return outcome(app.bundleIdentifier, routed.decision.reason, reason, message)
            }
            return outcome(app.bundleIdentifier, routed.decision.reason, nil, "continued in \(app.bundleIdentifier) (\(payload.count) bytes of state)")
        case .failure(let failure):
            _ = endContinuation(id, with: .failed(continuation: id, activityType: type, reason: failure.reason, message: failure.message))
            return outcome(app.bundleIdentifier, routed.decision.reason, failure.reason, failure.message)
        }
    }

    /// C5 as a guarantee, whatever path continuation `id` took: forgets it, and if an app was told `willContinue`
    /// and has heard no ending (a path that returned without one), tells it `failed` with the outcome's reason.
    func settle(_ id: UInt64, _ result: ContinuationOutcome) {
        let type = state.withLockedValue { $0.continuations[id]?.activityType } ?? ""
        let reason = result.failure ?? FetchFailure.protocolViolation.rawValue
        _ = endContinuation(id, with: .failed(continuation: id, activityType: type, reason: reason, message: result.message))
    }

    /// No app claims the advertised type: fetch the state and route by what it says (web pages: E1, E2, E3).
    func continueByPayload(_ entry: NearbyTable.Entry, id: UInt64, outcome: @Sendable (String, String, String?, String) -> ContinuationOutcome) async -> ContinuationOutcome {
        let payload: ActivityPayload
        switch await fetch(entry) {
        case .success(let data):
            do {
                payload = try ActivityPayload(decoding: data)
            } catch {
                return outcome("", "", "protocolViolation", "the state cannot be read: \(error)")
            }
        case .failure(let failure):
            return outcome("", "", failure.reason, failure.message)
        }
        let decision = router.route(RouteRequest(activityType: payload.activityType, teamIdentifier: nil, webpageURL: payload.webpageURL))
        switch decision.target {
        case .nothing:
            return outcome("", decision.reason, "noApp", "no app on this device continues \(payload.activityType) (D1, D3)")
        case .browser(let browser, let url):
            if let browser { return outcome(browser, decision.reason, "noApp", "the default browser app is not connected") }
            do {
                let command = configuration.browserCommand
                let pid = try Launcher.spawn("/usr/bin/env", arguments: command + [url.absoluteString], environment: ProcessInfo.processInfo.environment)
                state.withLockedValue { _ = $0.spawned.insert(pid) }
            } catch {
                return outcome("browser", decision.reason, "launchFailed", "cannot open \(url.absoluteString): \(error)")
            }
            return outcome("browser", decision.reason, nil, "opened \(url.absoluteString) in the browser (E1)")
        case .app(let bundle):
            guard let app = registry.app(bundleIdentifier: bundle) else { return outcome(bundle, decision.reason, "noApp", "\(bundle) vanished") }
            let type = decision.deliveredActivityType ?? payload.activityType
            let connection: IPCConnection
            switch await ensureRunning(app) {
            case .success(let running): connection = running
            case .failure(let failure): return outcome(bundle, decision.reason, failure.reason, failure.message)
            }
            guard beginContinuation(id, type: type, connection: connection) else {
                return outcome(bundle, decision.reason, FetchFailure.cancelled.rawValue, "a newer continuation replaced this one (C6)")
            }
            var delivered = payload
            if decision.emptiesUserInfo, let url = payload.webpageURL, var web = try? ActivityPayload(activityType: type) {
                // E3: the app receives the page, not the browser's state.
                try? web.setWebpageURL(url)
                web.title = payload.title
                delivered = web
            }
            guard let data = try? delivered.encoded() else {
                // settle() tells the app, which was told willContinue.
                return outcome(bundle, decision.reason, FetchFailure.protocolViolation.rawValue, "the state cannot be encoded again for \(bundle)")
            }
            if let (reason, message) = deliver(id, data, to: connection, type: type) {
                return outcome(bundle, decision.reason, reason, message)
            }
            return outcome(bundle, decision.reason, nil, "continued in \(bundle)")
        }
    }

    /// The state of `entry`'s activity from its device over the (reused) session (C4).
    func fetch(_ entry: NearbyTable.Entry) async -> Result<Data, ContinuationFailure> {
        let link: PeerLink
        do {
            link = try await links.link(to: entry.advert.device, host: entry.host, port: Int(entry.advert.sessionPort))
        } catch let error as BatonAgentError {
            let reason = error.code == .peerRefused ? FetchFailure.refused : .peerGone
            return .failure(ContinuationFailure(reason.rawValue, error.message))
        } catch {
            return .failure(ContinuationFailure(FetchFailure.peerGone.rawValue, "\(error)"))
        }
        // The originating app gets the save deadline; the network a little more on top.
        let deadline = configuration.saveDeadline
        let reply = await link.request(.fetch(sequence: entry.advert.sequence, deadlineMilliseconds: UInt64(deadline * 1000)), timeout: deadline + 1)
        switch reply {
        case .payload(let data):
            return .success(data)
        case .failed(let reason, let text):
            return .failure(ContinuationFailure(reason.rawValue, text))
        default:
            return .failure(ContinuationFailure(FetchFailure.protocolViolation.rawValue, "the peer answered a fetch with something else"))
        }
    }

    /// Sends `willContinue` (C5: at once, before the state arrives) for continuation `id`. False when it was
    /// cancelled meanwhile (C6), in which case the app hears nothing of it.
    func beginContinuation(_ id: UInt64, type: String, connection: IPCConnection) -> Bool {
        let open = state.withLockedValue { state -> Bool in
            guard !state.stopped, state.continuations[id] != nil else { return false }
            state.continuations[id]?.activityType = type
            state.continuations[id]?.connection = connection
            return true
        }
        guard open else { return false }
        connection.send(.willContinue(continuation: id, activityType: type))
        return true
    }

    /// Delivers the state of continuation `id` to the app told `willContinue` (C5), after checking that the process
    /// is still the app that said hello (ISSUE 10 item 4). Returns the failure (reason, message) when not delivered.
    func deliver(_ id: UInt64, _ payload: Data, to connection: IPCConnection, type: String) -> (String, String)? {
        guard isStillTheApp(connection) else {
            let message = "process \(connection.process.pid) is no longer the app that connected; its state goes nowhere"
            log("continuation \(id): \(message)")
            _ = endContinuation(id, with: .failed(continuation: id, activityType: type, reason: "notPermitted", message: message))
            connection.refuse("notPermitted", "this process is no longer the app that connected")
            return ("notPermitted", message)
        }
        guard endContinuation(id, with: .deliver(continuation: id, payload: payload)) else {
            return (FetchFailure.cancelled.rawValue, "a newer continuation replaced this one (C6)")
        }
        return nil
    }

    /// Sends the one message that ends continuation `id` (C5: exactly one of deliver or failed after
    /// `willContinue`), unless it already ended (cancelled by a newer one). Returns whether it sent.
    func endContinuation(_ id: UInt64, with message: IPCMessage) -> Bool {
        let pending = state.withLockedValue { $0.continuations.removeValue(forKey: id) }
        guard let connection = pending?.connection else { return false }
        connection.send(message)
        return true
    }

    /// C6: every continuation still running fails with `cancelled`, at once, before the new one begins. An app
    /// that was told `willContinue` is told `failed`; one that was not (still launching) hears nothing.
    func cancelContinuations() {
        let cancelled = state.withLockedValue { state -> [(UInt64, PendingContinuation)] in
            defer { state.continuations = [:] }
            return Array(state.continuations)
        }
        for (oldID, pending) in cancelled {
            pending.connection?.send(
                .failed(
                    continuation: oldID,
                    activityType: pending.activityType,
                    reason: FetchFailure.cancelled.rawValue,
                    message: "a newer continuation started (C6)"
                )
            )
            pending.cancel?()
        }
    }

    /// The nearby entry `selector` names: a device id or a prefix of one, or a device name.
    func nearbyEntry(matching selector: String?) -> NearbyTable.Entry? {
        state.withLockedValue { state in
            let entries = state.nearby.entries.values.sorted { $0.lastSeen > $1.lastSeen }
            guard let selector, !selector.isEmpty else { return entries.first }
            guard let device = state.roster.member(named: selector)?.id else { return nil }
            return state.nearby.entries[device]
        }
    }
}
