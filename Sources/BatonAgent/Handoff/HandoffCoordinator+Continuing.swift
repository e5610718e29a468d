import BatonCore
import BatonNotifications
import BatonRegistry
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// The continuing side (C3–C8, G2): the broker picks the way (launch, `willContinue`, fetch, deliver, or why not),
/// the coordinator does the I/O and reports what has begun and how it ended, deciding nothing.
extension HandoffCoordinator {
    /// Continues an activity by `route` (the offer `entry`, nil for a search result: G2, whose state is in the
    /// route), with the router's `reason`, asked for at uptime `started` (nanoseconds). A continuation still running
    /// is cancelled first (C6). Called from a task: it hops onto the loop, and its cancellation is the broker's.
    func continueActivity(
        entry: NearbyTable.Entry?,
        reason: String,
        started: UInt64,
        route: HandoffBroker.Route
    ) async -> ContinuationOutcome {
        let id = HandoffBroker.ContinuationID(nextRequest.wrappingAdd(1, ordering: .relaxed).oldValue)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { waiter in
                onLoop { [self] in
                    // The app's connection is looked up here, on the loop, where it is kept.
                    let route = running(route)
                    let actions = withState { state in
                        state.records[id] = Record(entry: entry, reason: reason, started: started, waiter: waiter)
                        return state.broker.continueAsked(id, route: route)
                    }
                    perform(actions)
                }
            }
        } onCancel: {
            onLoop { [self] in broker { $0.cancel(id) } }
        }
    }

    /// `route` with the app it names as running when its connection is open now.
    private func running(_ route: HandoffBroker.Route) -> HandoffBroker.Route {
        switch route {
        case .app(let bundle, let type, nil):
            return .app(bundle: bundle, activityType: type, running: runningApp(bundle))
        case .saved(let bundle, let type, nil, let payload):
            return .saved(bundle: bundle, activityType: type, running: runningApp(bundle), payload: payload)
        default:
            return route
        }
    }

    /// Launches `bundle` for continuation `id` unless it is already starting; the broker hears when its process runs
    /// (it times the hello from then), and when it connects or why not.
    func launch(_ id: HandoffBroker.ContinuationID, bundle: String) {
        guard bundle != BuiltInBrowser.bundleIdentifier else {
            // Issue 14: the built-in browser is the `baton` binary, not something to launch.
            return broker { $0.launchFailed(id, message: "the browser extension's host disconnected; open the page again") }
        }
        guard let app = host?.installedApp(bundle), app.isDBusActivatable || Launcher.command(for: app) != nil else {
            return broker { $0.launchFailed(id, message: "\(bundle) is not running and has no executable to launch") }
        }
        let alreadyLaunched = withState { $0.launched[bundle].map(Launcher.isRunning) ?? false }
        if !alreadyLaunched {
            var environment = ProcessInfo.processInfo.environment
            environment["BATON_AGENT_SOCKET"] = socketPath
            environment["BATON_BUNDLE_IDENTIFIER"] = bundle
            environment["BATON_LAUNCHED"] = "1"
            // Issue 28: a program started here talks to the bus the agent serves apps on (a test's bus, or the session's).
            if let sessionBus { environment["DBUS_SESSION_BUS_ADDRESS"] = sessionBus }
            if app.isDBusActivatable, let address = sessionBus {
                // Issue 28 item 4: the session bus starts it, which blocks until the app owns its name: off the loop, on
                // a connection of its own, for at most the launch deadline (C5) the broker times from now.
                let timeout = withState { $0.broker.deadlines.launchMilliseconds } * 1000
                DispatchQueue.global().async { [self, environment] in
                    let started = Launcher.start(app, environment: environment, busAddress: address, timeoutMicroseconds: timeout)
                    onLoop { [self] in launched(id, bundle: bundle, started) }
                }
            } else {
                launched(id, bundle: bundle, Launcher.start(app, environment: environment, busAddress: nil, timeoutMicroseconds: 0))
            }
        }
        broker { $0.launchStarted(id, now: clock.uptime()) }
    }

    /// What starting `bundle` for continuation `id` gave: a child is kept (and reaped) as the agent's, a failure ends
    /// the continuation naming it (C8).
    private func launched(_ id: HandoffBroker.ContinuationID, bundle: String, _ started: Launcher.Started) {
        switch started {
        case .activated:
            log("the session bus started \(bundle) (D-Bus activation)")
        case .spawned(let pid, let note):
            if let note { log(note) }
            withState { $0.launched[bundle] = pid }
            childrenChanged()
            // An app that ends at once can be reaped before it is recorded above, its SIGCHLD spent: look again,
            // so the broker hears "ended before it connected" now, not at the launch deadline.
            appWork.childStarted()
            log("launched \(bundle) (pid \(pid))")
        case .failed(let message):
            log("cannot launch \(bundle): \(message)")
            broker { $0.launchFailed(id, message: message) }
        }
    }

    /// Fetches the state of continuation `id` from its device (C4); the broker hears the answer. No task: over a
    /// link already open the request goes out from here, and a new one (TCP, TLS handshake) is made and then asked
    /// on the loop; the reply is handled there (issue 11).
    func startFetch(_ id: HandoffBroker.ContinuationID) {
        guard let entry = withState({ $0.records[id]?.entry }) else { return }
        if let link = links.existing(entry.advert.device) {
            return record(requestFetch(id, entry, on: link), for: id)
        }
        // Whether the fetch was stopped while the link was being made, and the request once sent: on the loop.
        let stopped = NIOLoopBoundBox.makeBoxSendingValue(false, eventLoop: loop)
        let request = NIOLoopBoundBox<PeerLink.Cancel?>.makeBoxSendingValue(nil, eventLoop: loop)
        links.linking(to: entry.advert.device, host: entry.host, port: Int(entry.advert.sessionPort)).whenComplete { [self] result in
            onLoop { [self] in
                switch result {
                case .success(let link):
                    guard !stopped.value else { return }
                    request.value = requestFetch(id, entry, on: link)
                case .failure(let error as BatonAgentError):
                    fetched(id, .failure(Agent.FetchError(reason: error.code == .peerRefused ? .refused : .peerGone, message: error.message)))
                case .failure(let error):
                    fetched(id, .failure(Agent.FetchError(reason: .peerGone, message: "\(error)")))
                }
            }
        }
        record({ [self] in
            onLoop {
                stopped.value = true
                request.value?()
            }
        }, for: id)
    }

    /// Records what stops continuation `id`'s fetch; stops it at once when the continuation has ended meanwhile.
    func record(_ cancel: @escaping PeerLink.Cancel, for id: HandoffBroker.ContinuationID) {
        let running = withState { state -> Bool in
            guard state.records[id] != nil else { return false }
            state.records[id]?.work = cancel
            return true
        }
        if !running { cancel() }
    }

    /// Sends the fetch of continuation `id` on `link`; its reply goes to the broker, which times it from now. The
    /// originating app gets the save deadline; the broker's fetch deadline adds the network's share.
    func requestFetch(_ id: HandoffBroker.ContinuationID, _ entry: NearbyTable.Entry, on link: PeerLink) -> PeerLink.Cancel {
        let (save, fetch) = withState { ($0.broker.saveDeadlineMilliseconds, $0.broker.fetchMilliseconds) }
        // `confirms`: this agent tells the originating device when the state has reached the app (finish(_:_:)), and
        // only then is the originating app told `continued` (A8; issue 25 item 4).
        let request = SessionMultiplexer.Request.fetch(sequence: entry.advert.sequence, deadlineMilliseconds: save, confirms: true)
        broker { $0.fetchSent(id, to: link.peerName, now: clock.uptime()) }
        // The link's own bound only frees its waiter if nothing else does: the broker's deadline comes first, and
        // the continuation's ending stops the request (finish(_:_:) calls its cancel, which tells the peer).
        return link.request(request, timeout: Double(fetch) / 1000 + Agent.linkBackstop) { [self] reply in
            onLoop { [self] in
                switch reply {
                case .payload(let data):
                    fetched(id, .success(data))
                case .failed(let reason, let text):
                    fetched(id, .failure(Agent.FetchError(reason: reason, message: text)))
                default:
                    fetched(id, .failure(Agent.FetchError(reason: .protocolViolation, message: "the peer answered a fetch with something else")))
                }
            }
        }
    }

    /// The fetch of continuation `id` ended: the state goes to the broker, or why not.
    func fetched(_ id: HandoffBroker.ContinuationID, _ result: Result<Data, Agent.FetchError>) {
        switch result {
        case .success(let payload):
            guard toldAppIsTrusted(id) else { return }
            // C9: URLs in synced folders become this device's; a document not synced yet is waited for.
            guard let host else { return broker { $0.fetchFailed(id, reason: .notCurrent, message: "the agent has stopped") } }
            switch host.arriving(payload) {
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

    /// Looks whether every file at `paths` is here now, and tells the broker what it found: it decides whether to
    /// look again (every 100 ms, up to ``AgentConfiguration/syncWait``) or that the continuation fails (issue 26 item
    /// 2). A look is a few `stat`s, on the loop.
    func lookForDocuments(_ id: HandoffBroker.ContinuationID, paths: [String]) {
        let found = host?.documents(at: paths) ?? .refused(message: "the agent has stopped")
        // The wait was long enough for the app's process to change: checked again before the state goes to it.
        if found == .present, !toldAppIsTrusted(id) { return }
        broker { $0.documentsChecked(id, found, now: clock.uptime()) }
    }

    /// Whether the app told about continuation `id` (if any) is still the process that said hello (ISSUE 10 item
    /// 4: the state goes only to it). When it is not, the broker hears so (`notPermitted`) and the process is refused.
    func toldAppIsTrusted(_ id: HandoffBroker.ContinuationID) -> Bool {
        let told = withState { state in
            state.broker.told(id).flatMap { told in state.appConnections[told.app].map { (told, $0) } }
        }
        guard let (told, connection) = told, host?.isStillTheApp(connection) == false else { return true }
        let message = "process \(connection.process.pid) is no longer the app that connected; its state goes nowhere"
        log("\(id): \(message)")
        broker { $0.appDistrusted(told.app, message: message) }
        connection.refuse(.notPermitted, "this process is no longer the app that connected")
        return false
    }

    /// Continuation `id` was delivered to `app` (C7): where its state came from is remembered for its streams (F2).
    func recordDelivered(_ id: HandoffBroker.ContinuationID, to app: HandoffBroker.AppID) {
        guard let entry = withState({ $0.records[id]?.entry }), let connection = connection(for: app),
            case .app(let bundle, _) = connection.identity.withLockedValue({ $0 })
        else { return }
        recordStreamDelivery(id, bundle: bundle, entry: entry)
    }

    /// The continuation `id` ended: its caller gets the outcome, and nothing of it is left behind.
    func finish(_ id: HandoffBroker.ContinuationID, _ outcome: HandoffBroker.Outcome) {
        guard let record = withState({ $0.records.removeValue(forKey: id) }) else { return }
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
}
