import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The only coordinator of a continuation (issue 26 items 1 and 2): it drives the agent's ``HandoffBroker`` and owns
/// everything a continuation's I/O needs beside it, on one event loop, the agent's ``Agent/loop``, with no lock.
///
/// It owns the broker (the one record of the current activity, its saves and fetches and of every continuation, with
/// their deadlines: C4–C8, A7–A9), the apps connected (by bundle and by the broker's ``HandoffBroker/AppID``), the
/// fetches from other devices waiting for the broker's reply, the timers the broker asked for (scheduled through
/// the agent's ``AgentClock``, so a virtual clock fires them), the I/O context of each continuation the broker runs
/// (``Record``, keyed by the broker's id: it decides nothing), the programs it launched for them, the command lines
/// watching the nearby list, and the continuation streams' tables (F1–F3, HandoffCoordinator+Streams). Events go to
/// the broker, actions come out and are performed here (issue 11 part 1); the broker decides every deadline.
///
/// Confined to ``loop``: its state is a ``NIOLoopBoundBox``, read and written only there. What arrives on the loop
/// (an app's message, a peer's request, a reply, a timer) runs at once; what comes from a task (continuing an offer
/// or a search result, the shutdown, the reaper) hops onto the loop. The rest of the agent reaches it only through
/// the methods here, with typed values; it reaches the rest of the agent only through its ``HandoffHost``, held
/// weakly (``attach(_:)``).
final class HandoffCoordinator: Sendable {
    /// The loop its state lives on: the agent's, which all its sockets run on (app socket, adverts, sessions).
    let loop: EventLoop
    let clock: AgentClock
    let links: PeerLinks
    /// Where the broker's adverts and goodbyes go (A9).
    let discovery: Discovery
    let logger: Logger
    let refusals: RefusalLog
    /// Starts the command lines' work and wakes the reaper when a program is started.
    let appWork: AppSocketService.Work
    /// The app socket a launched app is told to connect to.
    let socketPath: String
    /// The session bus the agent serves apps on (issue 28): where a `DBusActivatable` app is started, and the bus a
    /// launched app is given; nil when the agent has none.
    let sessionBus: String?
    /// How the default browser is run for a page no app continues (E1).
    let browserCommand: [String]
    /// This device's name, for what peers and apps are told.
    let deviceName: String
    /// What a stream's end is welcomed with on its app connection: this device (F2, F3).
    let welcome: IPCMessage
    /// How long a stream's end is held after its stream ended before it is released (issue 25 item 3).
    let streamRelease: TimeAmount
    /// Whether streams may take the direct path (issue 30): ``AgentConfiguration/streamPath`` and a TCP transport.
    let directStreams: Bool
    private let state: NIOLoopBoundBox<State>
    /// The next continuation's id: taken by callers on any thread (a task continuing an offer), before they hop.
    let nextRequest = Atomic<UInt64>(1)
    /// Whether a program started here may still run, for the reaper's task (``childrenMayRun``); written on the loop.
    private let childrenRunning = Atomic<Bool>(false)

    struct State {
        /// The originating side's decisions and the continuing side's: the current activity, the fetches of it, and
        /// every continuation (``HandoffBroker``).
        var broker: HandoffBroker
        /// The apps connected, by bundle and by the broker's id for them.
        var apps: [String: IPCConnection] = [:]
        var appConnections: [HandoffBroker.AppID: IPCConnection] = [:]
        /// The apps whose hello said they read `notCurrent` (issue 27 item 3); an older library would close its
        /// connection at it.
        var readNotCurrent: Set<HandoffBroker.AppID> = []
        /// The command lines watching the nearby list.
        var watchers: [ObjectIdentifier: IPCConnection] = [:]
        /// Fetches from other devices waiting for the broker's reply.
        var fetchWaiters: [HandoffBroker.FetchID: @Sendable (SessionMultiplexer.Reply) -> Void] = [:]
        /// The timers the broker asked for, scheduled through the clock on ``loop``.
        var timers: [HandoffBroker.TimerID: AgentClock.Timer] = [:]
        var nextFetch: UInt64 = 1
        /// The I/O context of each continuation the broker runs, by the broker's id.
        var records: [HandoffBroker.ContinuationID: Record] = [:]
        /// Apps this agent started, by bundle, and other programs (the browser), until they end and are reaped.
        var launched: [String: pid_t] = [:]
        var spawned: Set<pid_t> = []
        /// Continuation streams (F1–F3): activities of this device others continued, by sequence; continuations
        /// delivered here, by number; streams announced to apps, by token; stream ends held per app.
        var streamOrigins: [UInt64: StreamOrigin] = [:]
        var streamDeliveries: [UInt64: StreamDelivery] = [:]
        var incomingStreams: [Data: IncomingStream] = [:]
        var streamsPerBundle: [String: Int] = [:]
        /// Direct streams (issue 30) waiting for the continuing agent's connection, by its preamble's token; and the
        /// direct streams open with each device (for ``StreamLimits/perSession``).
        var pendingDirect: [Data: PendingDirect] = [:]
        var directStreamsPerPeer: [DeviceID: Int] = [:]
        /// The rest of the agent, weakly: nil before ``attach(_:)`` and once the agent is gone.
        var host = WeakHost()
    }

    init(
        broker: HandoffBroker,
        loop: EventLoop,
        clock: AgentClock,
        links: PeerLinks,
        discovery: Discovery,
        appWork: AppSocketService.Work,
        socketPath: String,
        sessionBus: String? = nil,
        browserCommand: [String],
        device: DeviceID,
        streamRelease: TimeAmount,
        directStreams: Bool = false,
        logger: Logger,
        refusals: RefusalLog
    ) {
        self.loop = loop
        self.clock = clock
        self.links = links
        self.discovery = discovery
        self.appWork = appWork
        self.socketPath = socketPath
        self.sessionBus = sessionBus
        self.browserCommand = browserCommand
        deviceName = broker.deviceName
        welcome = .welcome(device: device.description, deviceName: broker.deviceName)
        self.streamRelease = streamRelease
        self.directStreams = directStreams
        self.logger = logger
        self.refusals = refusals
        state = NIOLoopBoundBox.makeBoxSendingValue(State(broker: broker), eventLoop: loop)
    }

    /// Gives the coordinator the rest of the agent, weakly. Called once, before anything reaches the loop (the loop
    /// runs what it is given in order, so this comes before any app's or peer's message).
    func attach(_ host: any HandoffHost) {
        onLoop { [self, weak host] in withState { $0.host = WeakHost(host: host) } }
    }

    /// The rest of the agent; nil once it is gone.
    var host: (any HandoffHost)? { withState(\.host.host) }

    /// The state, on the loop (a precondition: off it is a bug). Never call out while inside `body`.
    func withState<Result>(_ body: (inout State) -> Result) -> Result {
        body(&state.value)
    }

    /// Runs `body` on the loop: now when called there, else next.
    func onLoop(_ body: @escaping @Sendable () -> Void) {
        if loop.inEventLoop { body() } else { loop.execute(body) }
    }

    func log(_ line: String) {
        logger.info("\(Agent.logLine(line))")
    }

    // MARK: Driving the broker

    /// Feeds one event to the broker and performs what it decides.
    func broker(_ event: (inout HandoffBroker) -> [HandoffBroker.Action]) {
        perform(withState { event(&$0.broker) })
    }

    /// Performs the broker's actions, in order.
    func perform(_ actions: [HandoffBroker.Action]) {
        for action in actions {
            switch action {
            case .advertise(let current):
                discovery.advertise(current, isCurrent: true)
            case .goodbye(let current):
                discovery.advertise(current, isCurrent: false)
            case .askSave(let app, let save, let activity, let deadline):
                // The deadline is armed before the app is asked, so whoever sees the question (a test moving a virtual
                // clock at once) finds it armed. An app gone already is asked nothing: its appClosed fails the fetch,
                // the deadline is the backstop.
                broker { $0.saveAsked(save, now: clock.uptime()) }
                connection(for: app)?.send(.save(request: save, activity: activity, deadlineMilliseconds: deadline))
            case .startTimer(let timer, let milliseconds):
                startTimer(timer, after: milliseconds)
            case .cancelTimer(let timer):
                withState { $0.timers.removeValue(forKey: timer) }?.cancel()
            case .reply(let fetch, let reply):
                withState { $0.fetchWaiters.removeValue(forKey: fetch) }?(reply)
            case .tellContinued(let app, let activity):
                connection(for: app)?.send(.continued(activity: activity))
            case .tellNotCurrent(let app, let activity):
                // Who wins (A9; issue 27 item 3): the superseded app stops treating the activity as current.
                guard withState({ $0.readNotCurrent.contains(app) }) else { break }
                connection(for: app)?.send(.notCurrent(activity: activity))
            case .launch(let id, let bundle):
                launch(id, bundle: bundle)
            case .fetch(let id):
                startFetch(id)
            case .route(let id, let payload):
                let route = routePayload(id, payload)
                broker { $0.payloadRouted(id, route) }
            case .awaitDocuments(let id, let paths):
                lookForDocuments(id, paths: paths)
            case .tellWillContinue(let app, let id, let type):
                connection(for: app)?.send(.willContinue(continuation: id.value, activityType: type))
            case .deliver(let app, let id, let payload):
                recordDelivered(id, to: app)
                connection(for: app)?.send(.deliver(continuation: id.value, payload: payload))
            case .tellFailed(let app, let id, let type, let reason, let message):
                connection(for: app)?.send(.failed(continuation: id.value, activityType: type, reason: reason, message: message))
            case .stopWork(let id):
                withState { $0.records[id]?.work }?()
            case .finished(let id, let outcome):
                finish(id, outcome)
            }
        }
    }

    /// Schedules the broker's timer `timer` through the clock on the loop; its firing goes back to the broker with
    /// the time. Timers are started, cancelled and fired on the loop alone.
    func startTimer(_ timer: HandoffBroker.TimerID, after milliseconds: UInt64) {
        let scheduled = clock.schedule(after: milliseconds, on: loop) { [self] in
            let actions = withState { state in
                state.timers[timer] = nil
                return state.broker.timerFired(timer, now: clock.uptime())
            }
            perform(actions)
        }
        withState { $0.timers.updateValue(scheduled, forKey: timer) }?.cancel()
    }

    /// The broker stops: the current activity's goodbye goes out and everything waiting fails (advertising's
    /// shutdown, the first of the services'). Returns once that is done, on the loop.
    func stop() async {
        try? await loop.submit { [self] in broker { $0.stop() } }.get()
    }

    // MARK: What apps send (on the loop)

    /// An app's main connection said hello as `bundle`: it is recorded, unless another live process has the app
    /// connected (returned then, and nothing changes). A live app is never silently replaced by a second connection:
    /// only by the same process reconnecting, or once the first process has gone.
    func claim(_ bundle: String, for connection: IPCConnection, readsNotCurrent: Bool = false) -> IPCConnection? {
        withState { state in
            if let previous = state.apps[bundle], previous !== connection, previous.conduit.isActive,
                previous.process.pid != connection.process.pid, previous.process.isAlive
            {
                return previous
            }
            state.apps[bundle] = connection
            state.appConnections[connection.appID] = connection
            if readsNotCurrent { state.readNotCurrent.insert(connection.appID) }
            return nil
        }
    }

    /// The app claimed has been welcomed: continuations waiting for its launch go on.
    func appConnected(_ app: HandoffBroker.AppID, bundle: String) {
        broker { $0.appConnected(app, bundle: bundle) }
    }

    /// A connection closed (`bundle` when it was an app's main connection): it watches no more, an app's activities
    /// take no streams and those announced to it fail, and its fetches fail and its current activity goes (A9):
    /// nobody can give their state any more.
    func appClosed(_ connection: IPCConnection, bundle: String?) {
        streamAppGone(connection.appID, bundle: bundle)
        let actions = withState { state in
            state.watchers[ObjectIdentifier(connection)] = nil
            state.appConnections[connection.appID] = nil
            state.readNotCurrent.remove(connection.appID)
            if let bundle, state.apps[bundle] === connection { state.apps[bundle] = nil }
            return state.broker.appGone(connection.appID)
        }
        perform(actions)
    }

    /// The app connected with the broker's id `app`, if it is.
    func connection(for app: HandoffBroker.AppID) -> IPCConnection? {
        withState { $0.appConnections[app] }
    }

    /// The broker's id of `bundle`'s app while its connection is open; nil when it does not run.
    func runningApp(_ bundle: String) -> HandoffBroker.AppID? {
        withState { $0.apps[bundle] }.flatMap { $0.conduit.isActive ? $0.appID : nil }
    }

    /// An app made `activity` current (A7), or changed it (`isUpdate`: applied only while it is current).
    func becomeCurrent(app: HandoffBroker.AppID, bundle: String, team: String, activity: UInt64, notice: ActivityNotice, isUpdate: Bool = false) {
        broker { $0.becomeCurrent(app: app, bundle: bundle, team: team, activity: activity, notice: notice, isUpdate: isUpdate, now: clock.wall()) }
    }

    /// An app resigned or invalidated `activity`.
    func resign(app: HandoffBroker.AppID, activity: UInt64) {
        broker { $0.resign(app: app, activity: activity) }
    }

    /// An app answered save `request` with its state (C4).
    func saved(_ request: UInt64, from app: HandoffBroker.AppID, payload: Data) {
        broker { $0.saveAnswered(save: request, from: app, payload: payload) }
    }

    /// An app could not save for `request`.
    func saveFailed(_ request: UInt64, from app: HandoffBroker.AppID, text: String) {
        broker { $0.saveFailed(save: request, from: app, text: text) }
    }

    /// An app launched here (or about to connect) cannot be: the continuations waiting for it fail now, with
    /// `message`, not at their launch deadline.
    func launchedAppEnded(_ bundle: String, message: String) {
        broker { $0.launchedAppEnded(bundle, message: message) }
    }

    // MARK: What peers ask (on the loop)

    /// Type and title of our activity advertised with `sequence` while it is current (C3).
    func summary(sequence: UInt64) -> ActivitySummary? {
        withState { $0.broker.summary(sequence: sequence) }
    }

    /// The peer `asker`'s app has the state of our activity advertised with `sequence`: our app hears `continued`
    /// now (A8; issue 25 item 4).
    func peerContinued(asker: DeviceID, sequence: UInt64) {
        broker { $0.peerContinued(asker: "\(asker)", sequence: sequence) }
    }

    /// A fetch from another device (C4): the broker asks the app and answers exactly once (the state, or why not),
    /// and tells the app `continued` (A8) when `peer`, which `confirms`, says its app has the state (issue 25 item 4),
    /// through `reply`. Returns what the link calls when the other device gives up (C6 there).
    func answerFetch(
        sequence: UInt64,
        deadlineMilliseconds: UInt64,
        for peer: DeviceID?,
        confirms: Bool,
        reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> PeerLink.Cancel {
        // C9: the state leaves with file URLs in synced folders in travel form (Agent+Folders), and its web URLs
        // without their user and password (issue 25 item 7; A5: OfferedURLs).
        let reply: @Sendable (SessionMultiplexer.Reply) -> Void = { [self] answer in
            guard case .payload(let data) = answer else { return reply(answer) }
            reply(.payload(OfferedURLs.withoutCredentials(travelling(data))))
        }
        let (fetch, actions) = withState { state -> (HandoffBroker.FetchID, [HandoffBroker.Action]) in
            let fetch = HandoffBroker.FetchID(state.nextFetch)
            state.nextFetch += 1
            // F1: the device given the state may then ask for streams to the activity, while its app runs it.
            if let peer, let current = state.broker.current, current.sequence == sequence {
                state.fetchWaiters[fetch] = { [self] answer in
                    if case .payload = answer { recordContinued(current, by: peer) }
                    reply(answer)
                }
            } else {
                state.fetchWaiters[fetch] = reply
            }
            let asker = confirms ? peer.map { "\($0)" } : nil
            return (
                fetch,
                state.broker.fetchAsked(fetch, sequence: sequence, deadlineMilliseconds: deadlineMilliseconds, now: clock.wall(), confirmingAsker: asker)
            )
        }
        perform(actions)
        // The other device gave up (C6 there): the broker forgets the save and answers the waiter.
        return { [self] in onLoop { [self] in broker { $0.fetchCancelled(fetch) } } }
    }

    /// `data` as it leaves for another device (C9); as it is when the agent is gone.
    private func travelling(_ data: Data) -> Data {
        host?.travelling(data) ?? data
    }

    // MARK: Launched programs (from the app socket service's reaper, a task)

    /// Whether a program started here may still run (an app launched, the browser), as last recorded on the loop:
    /// read by the reaper's task, without a hop, to decide whether to back SIGCHLD up.
    var childrenMayRun: Bool { childrenRunning.load(ordering: .relaxed) }

    /// Records the programs started here that may still run (on the loop, after a change of them).
    func childrenChanged() {
        childrenRunning.store(withState { !$0.launched.isEmpty || !$0.spawned.isEmpty }, ordering: .relaxed)
    }

    /// Reaps the programs this agent started that have ended, so none is left a zombie, on the loop. An app launched
    /// to continue an activity that ended before it connected is reported to the broker at once, saying how it
    /// ended (its continuations fail now, not at their launch deadline).
    func reapChildren() {
        onLoop { [self] in
            let ended = withState { state -> [(bundle: String, how: String)] in
                var ended: [(bundle: String, how: String)] = []
                for (bundle, pid) in state.launched.sorted(by: { $0.key < $1.key }) {
                    if let how = Launcher.ending(pid) { ended.append((bundle, how)) }
                }
                for (bundle, _) in ended { state.launched[bundle] = nil }
                state.spawned = state.spawned.filter(Launcher.isRunning)
                return ended
            }
            childrenChanged()
            for (bundle, how) in ended {
                launchedAppEnded(bundle, message: "\(bundle) \(how) before it connected")
            }
        }
    }

    // MARK: Command lines watching the nearby list

    /// `connection` (a command line's) watches the nearby list until it closes.
    func watch(_ connection: IPCConnection) {
        withState { $0.watchers[ObjectIdentifier(connection)] = connection }
    }

    /// Calls `body` on the loop with the command lines watching the nearby list, unless there are none: at once when
    /// called on the loop (an advert that arrived), else next (an expiry).
    func withWatchers(_ body: @escaping @Sendable ([IPCConnection]) -> Void) {
        onLoop { [self] in
            let watchers = withState { Array($0.watchers.values) }
            if !watchers.isEmpty { body(watchers) }
        }
    }
}
