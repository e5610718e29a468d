import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import NIOConcurrencyHelpers
import NIOCore

extension Agent: PeerLinkResponder {
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
            guard let summary = state.withLockedValue({ $0.broker.summary(sequence: sequence) }) else {
                reply(.failed(.notCurrent, "that activity is no longer current on \(identity.name)"))
                return {}
            }
            reply(.summary(summary))
            return {}
        case .fetch(let sequence, let deadlineMilliseconds, let confirms):
            return answerFetch(sequence: sequence, deadlineMilliseconds: deadlineMilliseconds, for: link.peer, confirms: confirms, reply: reply)
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
        broker { $0.peerContinued(asker: "\(link.peer)", sequence: sequence) }
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
        link.channel.eventLoop.scheduleTask(in: Self.syncAfterLinkOpened) { [syncTrigger] in syncTrigger.ring() }
    }

    /// How long after a link opens its roster sync starts.
    static let syncAfterLinkOpened = TimeAmount.milliseconds(100)

    // MARK: The continuing side

    /// Continues the activity offered by `device` (an id, a prefix of one, or a name; the newest offer when nil):
    /// the broker picks the way (launch, `willContinue`, fetch, deliver, or why not: C3-C8), this agent does the
    /// I/O. A continuation still running is cancelled first (C6).
    public func continueNearby(device selector: String?) async -> ContinuationOutcome {
        let started = clock.uptimeNanoseconds()
        guard let entry = nearbyEntry(matching: selector) else {
            let what = selector.map { "nothing nearby from a device matching \"\($0)\"" } ?? "nothing nearby to continue"
            return ContinuationOutcome(app: "", reason: "", failure: .notFound, message: what, microseconds: 0)
        }
        let id = state.withLockedValue { state in
            defer { state.nextRequest += 1 }
            return HandoffBroker.ContinuationID(state.nextRequest)
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { waiter in
                let actions = state.withLockedValue { state -> [HandoffBroker.Action] in
                    // D1, D3: the keyed hash of team + type names the app before any state moves.
                    var route = HandoffBroker.Route.byPayload
                    var reason = ""
                    if let routed = appFor(entry.advert, state: state), registry.app(bundleIdentifier: routed.bundle) != nil {
                        let running = state.apps[routed.bundle].flatMap { $0.channel.isActive ? $0.appID : nil }
                        route = .app(bundle: routed.bundle, activityType: routed.decision.deliveredActivityType ?? routed.type, running: running)
                        reason = routed.decision.reason
                    } else if !entry.advert.flags.contains(.hasWebpageURL) {
                        // Issue 25 item 4: no app claims the hash and there is no web page to fall back on (E1-E3),
                        // so no state could go anywhere: fail now, before the originating app is asked for it.
                        let summary = discovery.summary(of: entry.advert)
                        let what = summary.map { "\($0.activityType) (from \($0.bundleIdentifier))" } ?? "the activity advertised"
                        reason = "no app here claims the advertised type hash, and the activity has no web page (D1, D3)"
                        route = .noApp(message: "no app on this device continues \(what) (D1, D3)")
                    }
                    state.continuationRecords[id] = ContinuationRecord(entry: entry, reason: reason, started: started, waiter: waiter)
                    return state.broker.continueAsked(id, route: route)
                }
                perform(actions)
            }
        } onCancel: {
            broker { $0.cancel(id) }
        }
    }

    /// Launches `bundle` for continuation `id` unless it is already starting; the broker hears when its process runs
    /// (it times the hello from then), and when it connects or why not.
    func launch(_ id: HandoffBroker.ContinuationID, bundle: String) {
        guard bundle != BuiltInBrowser.bundleIdentifier else {
            // Issue 14: the built-in browser is the `baton` binary, not something to launch.
            return broker { $0.launchFailed(id, message: "the browser extension's host disconnected; open the page again") }
        }
        guard let app = registry.app(bundleIdentifier: bundle), let executable = app.executableURL,
            FileManager.default.isExecutableFile(atPath: executable.path)
        else {
            return broker { $0.launchFailed(id, message: "\(bundle) is not running and has no executable to launch") }
        }
        let alreadyLaunched = state.withLockedValue { $0.launched[bundle].map(Launcher.isRunning) ?? false }
        if !alreadyLaunched {
            var environment = ProcessInfo.processInfo.environment
            environment["BATON_AGENT_SOCKET"] = socketPath
            environment["BATON_BUNDLE_IDENTIFIER"] = bundle
            environment["BATON_LAUNCHED"] = "1"
            do {
                let pid = try Launcher.spawn(executable.path, environment: environment)
                state.withLockedValue { $0.launched[bundle] = pid }
                // An app that ends at once can be reaped before it is recorded above, its SIGCHLD spent: look again,
                // so the broker hears "ended before it connected" now, not at the launch deadline.
                appWork.childStarted()
                log("launched \(bundle) (pid \(pid))")
            } catch {
                log("cannot launch \(bundle): \(error)")
                return broker { $0.launchFailed(id, message: (error as? BatonAgentError)?.message ?? "\(error)") }
            }
        }
        broker { $0.launchStarted(id, now: clock.uptime()) }
    }

    /// Fetches the state of continuation `id` from its device (C4); the broker hears the answer. No task: over a
    /// link already open the request goes out from here, and a new one (TCP, TLS handshake) is made and then asked
    /// on its event loop; the reply is handled there (issue 11).
    func startFetch(_ id: HandoffBroker.ContinuationID) {
        guard let entry = state.withLockedValue({ $0.continuationRecords[id]?.entry }) else { return }
        if let link = links.existing(entry.advert.device) {
            return record(requestFetch(id, entry, on: link), for: id)
        }
        let stopped = NIOLockedValueBox(false)
        let request = NIOLockedValueBox<PeerLink.Cancel?>(nil)
        links.linking(to: entry.advert.device, host: entry.host, port: Int(entry.advert.sessionPort)).whenComplete { [self] result in
            switch result {
            case .success(let link):
                guard !stopped.withLockedValue({ $0 }) else { return }
                let cancel = requestFetch(id, entry, on: link)
                request.withLockedValue { $0 = cancel }
                if stopped.withLockedValue({ $0 }) { cancel() }
            case .failure(let error as BatonAgentError):
                fetched(id, .failure(FetchError(reason: error.code == .peerRefused ? .refused : .peerGone, message: error.message)))
            case .failure(let error):
                fetched(id, .failure(FetchError(reason: .peerGone, message: "\(error)")))
            }
        }
        record({
            stopped.withLockedValue { $0 = true }
            request.withLockedValue { $0 }?()
        }, for: id)
    }

    /// Records what stops continuation `id`'s fetch; stops it at once when the continuation has ended meanwhile.
    func record(_ cancel: @escaping PeerLink.Cancel, for id: HandoffBroker.ContinuationID) {
        let running = state.withLockedValue { state -> Bool in
            guard state.continuationRecords[id] != nil else { return false }
            state.continuationRecords[id]?.work = cancel
            return true
        }
        if !running { cancel() }
    }

    /// Sends the fetch of continuation `id` on `link`; its reply goes to the broker, which times it from now. The
    /// originating app gets the save deadline; the broker's fetch deadline adds the network's share.
    func requestFetch(_ id: HandoffBroker.ContinuationID, _ entry: NearbyTable.Entry, on link: PeerLink) -> PeerLink.Cancel {
        let (save, fetch) = state.withLockedValue { ($0.broker.saveDeadlineMilliseconds, $0.broker.fetchMilliseconds) }
        // `confirms`: this agent tells the originating device when the state has reached the app (finish(_:_:)), and
        // only then is the originating app told `continued` (A8; issue 25 item 4).
        let request = SessionMultiplexer.Request.fetch(sequence: entry.advert.sequence, deadlineMilliseconds: save, confirms: true)
        broker { $0.fetchSent(id, to: link.peerName, now: clock.uptime()) }
        // The link's own bound only frees its waiter if nothing else does: the broker's deadline comes first, and
        // the continuation's ending stops the request (finish(_:_:) calls its cancel, which tells the peer).
        return link.request(request, timeout: Double(fetch) / 1000 + Self.linkBackstop) { [self] reply in
            switch reply {
            case .payload(let data):
                fetched(id, .success(data))
            case .failed(let reason, let text):
                fetched(id, .failure(FetchError(reason: reason, message: text)))
            default:
                fetched(id, .failure(FetchError(reason: .protocolViolation, message: "the peer answered a fetch with something else")))
            }
        }
    }

    /// How long after the broker's fetch deadline a link gives up on the request by itself, in seconds.
    static let linkBackstop = 5.0

    /// The fetch of continuation `id` ended: the state goes to the broker, or why not.
    func fetched(_ id: HandoffBroker.ContinuationID, _ result: Result<Data, FetchError>) {
        switch result {
        case .success(let payload):
            guard toldAppIsTrusted(id) else { return }
            // C9: URLs in synced folders become this device's; a document not synced yet is waited for.
            switch arriving(payload) {
            case .ready(let payload, let missing):
                broker { $0.fetchReplied(id, payload: payload, awaiting: missing) }
            case .unavailable(let message):
                broker { $0.documentsMissing(id, message: message) }
            case .invalid(let message):
                refusals.refused(.documentURLInvalid) { "the state of \(id) from another device: \(message)" }
                broker { $0.fetchFailed(id, reason: .protocolViolation, message: message) }
            }
        case .failure(let failure):
            broker { $0.fetchFailed(id, reason: failure.reason, message: failure.message) }
        }
    }

    /// Whether the app told about continuation `id` (if any) is still the process that said hello (ISSUE 10 item
    /// 4: the state goes only to it). When it is not, the broker hears so (`notPermitted`) and the process is refused.
    func toldAppIsTrusted(_ id: HandoffBroker.ContinuationID) -> Bool {
        let told = state.withLockedValue { state in
            state.broker.told(id).flatMap { told in state.appConnections[told.app].map { (told, $0) } }
        }
        guard let (told, connection) = told, !isStillTheApp(connection) else { return true }
        let message = "process \(connection.process.pid) is no longer the app that connected; its state goes nowhere"
        log("\(id): \(message)")
        broker { $0.appDistrusted(told.app, message: message) }
        connection.refuse(.notPermitted, "this process is no longer the app that connected")
        return false
    }

    /// Where a state fetched without a route goes, by what it says (E1-E3).
    func routePayload(_ id: HandoffBroker.ContinuationID, _ data: Data) -> HandoffBroker.PayloadRoute {
        let payload: ActivityPayload
        do {
            payload = try ActivityPayload(decoding: data)
        } catch {
            return .failed(app: "", reason: .fetch(.protocolViolation), message: "the state cannot be read: \(error)")
        }
        // The team is known only as part of the advert's keyed hash, which named no app here (else the continuation
        // would have been routed by it): say that, not that the activity has no team (issue 24 part 7).
        let decision = router.route(
            RouteRequest(activityType: payload.activityType, teamIdentifier: nil, webpageURL: payload.webpageURL, teamMatchedNoApp: true)
        )
        state.withLockedValue { $0.continuationRecords[id]?.reason = decision.reason }
        switch decision.target {
        case .nothing:
            return .failed(app: "", reason: .noApp, message: "no app on this device continues \(payload.activityType) (D1, D3)")
        case .browser(let browser?, _):
            return .failed(app: browser, reason: .noApp, message: "the default browser app is not connected")
        case .browser(nil, let url):
            return openPage(id, url, title: payload.title)
        case .app(BuiltInBrowser.bundleIdentifier):
            // The built-in browser is never launched (it is the `baton` binary): it gets the page only while its
            // host is connected, as in the case above.
            guard let url = payload.webpageURL else {
                return .failed(app: BuiltInBrowser.bundleIdentifier, reason: .noApp, message: "a web page without its URL")
            }
            return openPage(id, url, title: payload.title)
        case .app(let bundle):
            let type = decision.deliveredActivityType ?? payload.activityType
            var delivered = payload
            if decision.emptiesUserInfo, let url = payload.webpageURL, var web = try? ActivityPayload(activityType: type) {
                // E3: the app receives the page, not the browser's state.
                try? web.setWebpageURL(url)
                web.title = payload.title
                delivered = web
            }
            guard let data = try? delivered.encoded() else {
                return .failed(app: bundle, reason: .fetch(.protocolViolation), message: "the state cannot be encoded again for \(bundle)")
            }
            let running = state.withLockedValue { $0.apps[bundle].flatMap { $0.channel.isActive ? $0.appID : nil } }
            return .app(bundle: bundle, activityType: type, running: running, payload: data)
        }
    }

    /// E1, E2 (issue 14): a page no app here continues opens as a new tab in the running browser when the browser
    /// extension's host (the built-in app `org.baton.browser`) is connected to this agent, else through the default
    /// browser (`browserCommand`, xdg-open). The continuation's route says which.
    func openPage(_ id: HandoffBroker.ContinuationID, _ url: URL, title: String?) -> HandoffBroker.PayloadRoute {
        let host = state.withLockedValue { $0.apps[BuiltInBrowser.bundleIdentifier].flatMap { $0.channel.isActive ? $0.appID : nil } }
        if let host, var page = try? ActivityPayload(activityType: AppRecord.browsingWebActivityType) {
            // Only the page travels on, as E3 gives an app: the URL and the title, no userInfo.
            try? page.setWebpageURL(url)
            page.title = title
            if let data = try? page.encoded() {
                state.withLockedValue { $0.continuationRecords[id]?.reason += "; the browser extension is connected: a new tab in the running browser (E2)" }
                return .app(bundle: BuiltInBrowser.bundleIdentifier, activityType: AppRecord.browsingWebActivityType, running: host, payload: data)
            }
        }
        do {
            let pid = try Launcher.spawn("/usr/bin/env", arguments: configuration.browserCommand + [url.absoluteString], environment: ProcessInfo.processInfo.environment)
            state.withLockedValue {
                _ = $0.spawned.insert(pid)
                $0.continuationRecords[id]?.reason += "; no browser extension is connected: the default browser (E1)"
            }
        } catch {
            return .failed(app: "browser", reason: .launchFailed, message: "cannot open \(url.absoluteString): \(error)")
        }
        return .opened(app: "browser", message: "opened \(url.absoluteString) in the browser (E1)")
    }

    /// The continuation `id` ended: its caller gets the outcome, and nothing of it is left behind.
    func finish(_ id: HandoffBroker.ContinuationID, _ outcome: HandoffBroker.Outcome) {
        guard let record = state.withLockedValue({ $0.continuationRecords.removeValue(forKey: id) }) else { return }
        // A fetch still running stops (the peer is told). The link answers its waiter with a bare `cancelled`, which
        // reaches a broker that has ended the continuation already and ignores it: why it ended (C6's "a newer
        // continuation started", a deadline) is the broker's outcome, below, and what the app was told.
        record.work?()
        if outcome.failure == .documentNotSynced {
            // The person sees the app's error; which file, and why, is in this log too.
            log("\(id): \(outcome.message)")
        }
        if outcome.failure == nil, let entry = record.entry {
            // A8 (issue 25 item 4): the state reached the app (the broker ends a continuation without a failure only
            // after its `deliver`, or once the browser has the page): now the originating app may hear `continued`.
            // Over the link the state came by, or, if it closed since (a launch after routing by the state), a new
            // one; if none can be made, the originating app is not told.
            links.linking(to: entry.advert.device, host: entry.host, port: Int(entry.advert.sessionPort)).whenSuccess { link in
                link.tellContinued(sequence: entry.advert.sequence)
            }
        }
        record.waiter.resume(
            returning: ContinuationOutcome(
                app: outcome.app,
                reason: record.reason,
                failure: outcome.failure.map(ContinuationOutcome.Failure.init),
                message: outcome.message,
                microseconds: (clock.uptimeNanoseconds() - record.started) / 1000
            )
        )
    }

    /// The nearby entry `selector` names: a device id or a prefix of one, or a device name.
    func nearbyEntry(matching selector: String?) -> NearbyTable.Entry? {
        discovery.entry(matching: selector)
    }
}

