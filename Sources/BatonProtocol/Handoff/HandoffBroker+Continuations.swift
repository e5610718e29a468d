#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The continuing side of the broker (C5-C8): every continuation this device starts, from the person's choice to
/// its one ending.
///
/// Each continuation is in one ``ContinuationState``. The app is told `willContinue` at once when it runs (or once
/// it has connected after a launch), and from then on exactly one of `deliver` or `failed` reaches it (C5), whatever
/// happens: a newer continuation (C6, `cancelled`), a failed fetch (C8), a deadline, the app going away. A
/// continuation whose app no claim names is fetched first and routed by what its state says (web pages: E1-E3).
/// Each is one ``Continuation`` record: its state, and the deadline it waits on (`HandoffBroker+Deadlines.swift`).
extension HandoffBroker {
    /// A continuation, as the agent numbers them (the number apps see in `willContinue`).
    public struct ContinuationID: Hashable, Sendable, Comparable, CustomStringConvertible {
        /// The number.
        public let value: UInt64

        /// A continuation id.
        public init(_ value: UInt64) { self.value = value }

        public var description: String { "continuation \(value)" }

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.value < rhs.value }
    }

    /// Which app continues, as far as the advert tells (D1, D3): the agent routes by the keyed type hash.
    public enum Route: Sendable, Hashable {
        /// An app here claims it: `bundle`, delivered as `activityType`; `running` when it is connected now.
        case app(bundle: String, activityType: String, running: AppID?)
        /// No app claims the advertised hash, but the activity has a web page (the advert's `hasWebpageURL`): fetch
        /// the state, then route by what it says (E1-E3).
        case byPayload
        /// No app here continues the advertised activity and it has no web page to fall back on: it fails `noApp`
        /// with `message` before anything is fetched, so the originating app is never asked for its state nor told it
        /// was continued (A8, D1, D3; issue 25 item 4).
        case noApp(message: String)
        /// A search result (G2): the state is here already, saved by `bundle`; nothing is fetched. The app is told
        /// `willContinue` and then given the state, launched first when it does not run (C5).
        case saved(bundle: String, activityType: String, running: AppID?, payload: Data)
    }

    /// Where a fetched state goes, decided by the agent from the payload (E1-E3).
    public enum PayloadRoute: Sendable, Hashable {
        /// To `bundle` as `activityType`, with `payload` (E3: rewritten to the page alone).
        case app(bundle: String, activityType: String, running: AppID?, payload: Data)
        /// The agent opened it in the web browser (E1); `message` says so.
        case opened(app: String, message: String)
        /// Nowhere: `reason` and why.
        case failed(app: String, reason: ContinuationFailure, message: String)
    }

    /// How a continuation ended, for whoever asked for it.
    public struct Outcome: Sendable, Hashable {
        /// The app chosen, "browser", or "" when none was.
        public var app: String
        /// The failure, or nil.
        public var failure: ContinuationFailure?
        /// What happened, for a person.
        public var message: String

        /// An outcome.
        public init(app: String, failure: ContinuationFailure?, message: String) {
            self.app = app
            self.failure = failure
            self.message = message
        }
    }

    /// The app told `willContinue`.
    public struct Told: Sendable, Hashable {
        public var app: AppID
        public var bundle: String
        public var activityType: String
    }

    /// Where one continuation is.
    public enum ContinuationState: Sendable, Hashable {
        /// Its app is being launched; it is told once it connects.
        case launching(bundle: String, activityType: String)
        /// Its state is being fetched from the originating device; `told` is the app waiting for it, or nil when
        /// no app is chosen yet (routing by the payload).
        case fetching(told: Told?)
        /// Its state arrived and names documents in synced folders that are not here yet (C9): `payload` waits
        /// for them; `told` as in ``fetching(told:)``.
        case awaitingDocuments(told: Told?, payload: Data)
        /// Its state arrived and the agent is deciding where it goes (E1-E3).
        case routing
        /// Routed by its state to an app that is being launched; the state waits here.
        case launchingWithState(bundle: String, activityType: String, payload: Data)

        /// The app told `willContinue`, while one waits for the state.
        var told: Told? {
            switch self {
            case .fetching(let told), .awaitingDocuments(let told, _): told
            case .launching, .routing, .launchingWithState: nil
            }
        }
    }

    /// The broker's one record of a continuation in progress (issue 26 item 2): where it is, and what it waits on.
    struct Continuation: Sendable, Hashable {
        var state: ContinuationState
        /// The timer started for its present step (its launch, its fetch, the next look for its documents), if any.
        var armed: Armed? = nil
        /// The device its state is fetched from, once the request went out (named when it does not answer).
        var peer: String? = nil
        /// The documents its state waits for (C9), and when the wait gives up (set at the first look).
        var documents: [String] = []
        var documentsDue: UInt64? = nil
    }

    /// The continuations in progress and their states.
    public var continuations: [ContinuationID: ContinuationState] { ongoing.mapValues(\.state) }

    // MARK: Events

    /// The person continues an activity here (C3, C4); `route` is what the advert's type hash names. Every
    /// continuation still in progress fails first with `cancelled` (C6).
    public mutating func continueAsked(_ id: ContinuationID, route: Route) -> [Action] {
        var actions = endAll(failure: .fetch(.cancelled), message: "a newer continuation started (C6)")
        switch route {
        case .app(let bundle, let type, let running?):
            let told = Told(app: running, bundle: bundle, activityType: type)
            ongoing[id] = Continuation(state: .fetching(told: told))
            actions += [.tellWillContinue(app: running, id, activityType: type), .fetch(id)]
        case .app(let bundle, let type, nil):
            ongoing[id] = Continuation(state: .launching(bundle: bundle, activityType: type))
            actions.append(.launch(id, bundle: bundle))
        case .byPayload:
            ongoing[id] = Continuation(state: .fetching(told: nil))
            actions.append(.fetch(id))
        case .noApp(let message):
            actions.append(.finished(id, Outcome(app: "", failure: .noApp, message: message)))
        case .saved(let bundle, let type, let running?, let payload):
            actions.append(.tellWillContinue(app: running, id, activityType: type))
            actions += deliver(id, to: running, bundle: bundle, payload: payload)
        case .saved(let bundle, let type, nil, let payload):
            ongoing[id] = Continuation(state: .launchingWithState(bundle: bundle, activityType: type, payload: payload))
            actions.append(.launch(id, bundle: bundle))
        }
        return actions
    }

    /// `app` connected as `bundle`: continuations waiting for its launch go on (C5: `willContinue` at once).
    public mutating func appConnected(_ app: AppID, bundle: String) -> [Action] {
        var actions: [Action] = []
        for (id, record) in ongoing.sorted(by: { $0.key < $1.key }) {
            switch record.state {
            case .launching(bundle, let type):
                actions += enter(id, .fetching(told: Told(app: app, bundle: bundle, activityType: type)))
                actions += [.tellWillContinue(app: app, id, activityType: type), .fetch(id)]
            case .launchingWithState(bundle, let type, let payload):
                actions += remove(id)
                actions += [.tellWillContinue(app: app, id, activityType: type)]
                actions += deliver(id, to: app, bundle: bundle, payload: payload)
            case .launching, .launchingWithState, .fetching, .awaitingDocuments, .routing:
                continue
            }
        }
        return actions
    }

    /// The launch for `id` failed, or its app did not connect in time (its launch timer, ``timerFired(_:now:)``).
    public mutating func launchFailed(_ id: ContinuationID, message: String) -> [Action] {
        switch ongoing[id]?.state {
        case .launching(let bundle, _), .launchingWithState(let bundle, _, _):
            return remove(id) + [.finished(id, Outcome(app: bundle, failure: .launchFailed, message: message))]
        case .fetching, .awaitingDocuments, .routing, nil:
            return []
        }
    }

    /// The process launched for `bundle` ended before it connected (it crashed, or is not a Baton app): every
    /// continuation waiting for it fails now with `launchFailed`, rather than at its launch deadline. Continuations
    /// past their launch (the app said hello) are not touched.
    public mutating func launchedAppEnded(_ bundle: String, message: String) -> [Action] {
        var actions: [Action] = []
        for id in ongoing.keys.sorted() {
            switch ongoing[id]?.state {
            case .launching(let launching, _) where launching == bundle,
                .launchingWithState(let launching, _, _) where launching == bundle:
                actions += launchFailed(id, message: message)
            default:
                continue
            }
        }
        return actions
    }

    /// The originating device sent the state of `id` (C4), with its URLs already made this device's (C9).
    /// `documents` are the files in synced folders it names that do not exist here yet: the state waits for them
    /// (``documentsArrived(_:)``, ``documentsMissing(_:message:)``).
    public mutating func fetchReplied(_ id: ContinuationID, payload: Data, awaiting documents: [String] = []) -> [Action] {
        guard case .fetching(let told) = ongoing[id]?.state else { return [] }
        guard documents.isEmpty else {
            let stopped = enter(id, .awaitingDocuments(told: told, payload: payload))
            ongoing[id]?.documents = documents
            return stopped + [.awaitDocuments(id, paths: documents)]
        }
        return arrived(id, told: told, payload: payload)
    }

    /// The documents continuation `id` waited for exist now (C9): its state goes on as if it had just arrived.
    public mutating func documentsArrived(_ id: ContinuationID) -> [Action] {
        guard case .awaitingDocuments(let told, let payload) = ongoing[id]?.state else { return [] }
        return arrived(id, told: told, payload: payload)
    }

    /// A document continuation `id` names is not on this device (C9): its folder is not set up here, or it did not
    /// sync within the agent's bound. The app told `willContinue` hears `documentNotSynced` (C5). Valid while the
    /// state is fetched (the agent finds an unknown folder as it arrives) or waits for documents.
    public mutating func documentsMissing(_ id: ContinuationID, message: String) -> [Action] {
        switch ongoing[id]?.state {
        case .fetching(let told), .awaitingDocuments(let told, _):
            var actions = remove(id)
            if let told {
                actions.append(.tellFailed(app: told.app, id, activityType: told.activityType, reason: .documentNotSynced, message: message))
            }
            return actions + [.stopWork(id), .finished(id, Outcome(app: told?.bundle ?? "", failure: .documentNotSynced, message: message))]
        case .launching, .launchingWithState, .routing, nil:
            return []
        }
    }

    /// The state of `id` is here and complete: to the app told, or routed by what it says.
    mutating func arrived(_ id: ContinuationID, told: Told?, payload: Data) -> [Action] {
        guard let told else {
            return enter(id, .routing) + [.route(id, payload: payload)]
        }
        return remove(id) + deliver(id, to: told.app, bundle: told.bundle, payload: payload, bytes: true)
    }

    /// The fetch of `id` failed (C8): the app told `willContinue` hears why.
    public mutating func fetchFailed(_ id: ContinuationID, reason: FetchFailure, message: String) -> [Action] {
        guard case .fetching(let told) = ongoing[id]?.state else { return [] }
        var actions = remove(id)
        if let told {
            actions.append(.tellFailed(app: told.app, id, activityType: told.activityType, reason: .fetch(reason), message: message))
        }
        actions.append(.finished(id, Outcome(app: told?.bundle ?? "", failure: .fetch(reason), message: message)))
        return actions
    }

    /// Where the state of `id`, fetched without a route, goes (E1-E3).
    public mutating func payloadRouted(_ id: ContinuationID, _ route: PayloadRoute) -> [Action] {
        guard case .routing = ongoing[id]?.state else { return [] }
        ongoing[id] = nil
        switch route {
        case .app(let bundle, let type, let running?, let payload):
            return [.tellWillContinue(app: running, id, activityType: type)] + deliver(id, to: running, bundle: bundle, payload: payload)
        case .app(let bundle, let type, nil, let payload):
            ongoing[id] = Continuation(state: .launchingWithState(bundle: bundle, activityType: type, payload: payload))
            return [.launch(id, bundle: bundle)]
        case .opened(let app, let message):
            return [.finished(id, Outcome(app: app, failure: nil, message: message))]
        case .failed(let app, let reason, let message):
            return [.finished(id, Outcome(app: app, failure: reason, message: message))]
        }
    }

    /// The process behind `app` is no longer the app that connected (ISSUE 10 item 4): what it was told it would
    /// get, it does not; it hears `failed` (`notPermitted`) and the continuation ends.
    public mutating func appDistrusted(_ app: AppID, message: String) -> [Action] {
        var actions: [Action] = []
        for (id, told) in toldContinuations(of: app) {
            actions += remove(id)
            actions += [
                .tellFailed(app: app, id, activityType: told.activityType, reason: .notPermitted, message: message),
                .stopWork(id),
                .finished(id, Outcome(app: told.bundle, failure: .notPermitted, message: message)),
            ]
        }
        return actions
    }

    /// Whoever asked for continuation `id` gave up: it ends with `cancelled`, and its app, if told, hears it.
    public mutating func cancel(_ id: ContinuationID) -> [Action] {
        end(id, failure: .fetch(.cancelled), message: "the continuation was cancelled")
    }

    /// The app told about a continuation now, if any (the agent checks it before a delivery).
    public func told(_ id: ContinuationID) -> Told? {
        ongoing[id]?.state.told
    }

    // MARK: Helpers

    /// Continuations told to `app` and not ended.
    func toldContinuations(of app: AppID) -> [(ContinuationID, Told)] {
        ongoing.sorted(by: { $0.key < $1.key }).compactMap { id, record in
            guard let told = record.state.told, told.app == app else { return nil }
            return (id, told)
        }
    }

    /// The app going away ends what it was told (nobody is left to tell).
    mutating func continuationsGone(with app: AppID) -> [Action] {
        toldContinuations(of: app).flatMap { id, told -> [Action] in
            remove(id) + [.stopWork(id), .finished(id, Outcome(app: told.bundle, failure: .fetch(.appGone), message: "\(told.bundle) went away"))]
        }
    }

    /// Ends every continuation in progress with `failure`: apps told `willContinue` hear it (C5, C6).
    mutating func endAll(failure: ContinuationFailure, message: String) -> [Action] {
        ongoing.keys.sorted().flatMap { end($0, failure: failure, message: message) }
    }

    /// Ends continuation `id` with `failure`; its app hears it if it was told `willContinue` (C5).
    mutating func end(_ id: ContinuationID, failure: ContinuationFailure, message: String) -> [Action] {
        guard let state = ongoing[id]?.state else { return [] }
        var actions = remove(id)
        var app = ""
        switch state {
        case .fetching(let told?), .awaitingDocuments(let told?, _):
            app = told.bundle
            actions.append(.tellFailed(app: told.app, id, activityType: told.activityType, reason: failure, message: message))
        case .launching(let bundle, _), .launchingWithState(let bundle, _, _):
            app = bundle
        case .fetching(nil), .awaitingDocuments(nil, _), .routing:
            break
        }
        return actions + [.stopWork(id), .finished(id, Outcome(app: app, failure: failure, message: message))]
    }

    /// Moves continuation `id` to `state`: the timer of the step it leaves is cancelled (the actions returned).
    mutating func enter(_ id: ContinuationID, _ state: ContinuationState) -> [Action] {
        let stopped = disarm(id)
        ongoing[id]?.state = state
        return stopped
    }

    /// Continuation `id` ends: its record goes, and the timer of its last step is cancelled (the actions returned).
    mutating func remove(_ id: ContinuationID) -> [Action] {
        let stopped = disarm(id)
        ongoing[id] = nil
        return stopped
    }

    func deliver(_ id: ContinuationID, to app: AppID, bundle: String, payload: Data, bytes: Bool = false) -> [Action] {
        let message = bytes ? "continued in \(bundle) (\(payload.count) bytes of state)" : "continued in \(bundle)"
        return [.deliver(app: app, id, payload: payload), .finished(id, Outcome(app: bundle, failure: nil, message: message))]
    }
}
