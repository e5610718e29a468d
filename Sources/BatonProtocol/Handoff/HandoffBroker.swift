import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The device's handoff decisions as a pure state machine (issue 11 part 1): no sockets, no clocks, no tasks. The
/// agent feeds it events (an app made an activity current, a peer asked for it, the app answered, a timer fired)
/// with the time, and performs the actions it returns (advertise, ask the app, answer the peer, start a timer).
/// Every deadline is the broker's (issue 26 item 2): it says when a timer starts and stops, and what its firing
/// means (`HandoffBroker+Deadlines.swift`); the agent only schedules it and reports it.
///
/// The originating side: the device's one current activity (A9, C2) and every fetch another device makes of it
/// (C4), with the save deadline (A7), `continued` (A8), expiry and eligibility (A10), the size limit (A11) and the
/// typed failures the other device reports (C8). Each fetch is in one state, `saving`, from the moment it is asked
/// until exactly one reply is sent; then it is gone. The continuing side, every continuation started here, is in
/// `HandoffBroker+Continuations.swift`.
public struct HandoffBroker: Sendable {
    /// An app's connection to the agent, as the agent numbers them.
    public struct AppID: Hashable, Sendable, CustomStringConvertible {
        /// The number.
        public let value: UInt64

        /// An app id.
        public init(_ value: UInt64) { self.value = value }

        public var description: String { "app \(value)" }
    }

    /// A fetch another device asked for, as the agent numbers them.
    public struct FetchID: Hashable, Sendable, CustomStringConvertible {
        /// The number.
        public let value: UInt64

        /// A fetch id.
        public init(_ value: UInt64) { self.value = value }

        public var description: String { "fetch \(value)" }
    }

    /// The device's current activity (A9): which app offers it, and what other devices are told.
    public struct CurrentActivity: Sendable, Hashable {
        /// The app that made it current.
        public var app: AppID
        /// That app's bundle and team.
        public var bundle: String
        public var team: String
        /// The app's own number for the activity.
        public var activity: UInt64
        /// The number adverts carry: it only grows, across restarts too.
        public var sequence: UInt64
        /// What the app said about it.
        public var notice: ActivityNotice
        /// How many times the app changed what it said about it, modulo 16: adverts carry it, so other devices ask
        /// again for a new title (C3) while the sequence, and any fetch under it, stays.
        public var revision: UInt8 = 0

        /// Whether it is advertised at `now` (milliseconds since 1970): eligible for handoff and not expired (A10).
        public func isOffered(at now: UInt64) -> Bool {
            notice.isEligibleForHandoff && !HandoffBroker.hasExpired(notice, at: now)
        }
    }

    /// What the agent does next.
    public enum Action: Sendable, Equatable {
        /// Advertise the activity as current, now (C2).
        case advertise(CurrentActivity)
        /// Send the activity's goodbye, now (A9): it disappears from every device.
        case goodbye(CurrentActivity)
        /// Ask `app` for the state of `activity` (A7), telling it the deadline, then call
        /// ``HandoffBroker/saveAsked(_:now:)``: the deadline runs from then.
        case askSave(app: AppID, save: UInt64, activity: UInt64, deadlineMilliseconds: UInt64)
        /// Start the timer `timer`, to fire once after `afterMilliseconds` with ``HandoffBroker/timerFired(_:now:)``.
        case startTimer(TimerID, afterMilliseconds: UInt64)
        /// What the timer `timer` was timing has ended: it is no longer needed.
        case cancelTimer(TimerID)
        /// Answer another device's fetch: exactly one reply per fetch.
        case reply(FetchID, SessionMultiplexer.Reply)
        /// Tell `app` that `activity` was continued on another device (A8).
        case tellContinued(app: AppID, activity: UInt64)
        /// Tell `app` that `activity` is no longer the device's current one: another app's activity took over (A9;
        /// issue 27 item 3, "Who wins"). Its later updates do not take current back; only a person's action does.
        case tellNotCurrent(app: AppID, activity: UInt64)

        /// Launch the app `bundle` for continuation `id`: call ``HandoffBroker/launchStarted(_:now:)`` once its
        /// process runs (its hello is timed from then), ``HandoffBroker/appConnected(_:bundle:)`` when it connects,
        /// or ``HandoffBroker/launchFailed(_:message:)`` when it cannot start.
        case launch(ContinuationID, bundle: String)
        /// Fetch the state of continuation `id` from its originating device (C4): call
        /// ``HandoffBroker/fetchSent(_:to:now:)`` as the request goes out (its answer is timed from then), then
        /// ``HandoffBroker/fetchReplied(_:payload:awaiting:)`` or ``HandoffBroker/fetchFailed(_:reason:message:)``.
        case fetch(ContinuationID)
        /// Decide where the state of continuation `id` goes (E1-E3), and call ``HandoffBroker/payloadRouted(_:_:)``.
        case route(ContinuationID, payload: Data)
        /// The state of continuation `id` waits for the files at `paths` (documents in synced folders still
        /// syncing, C9): look whether they are here now and answer ``HandoffBroker/documentsChecked(_:_:now:)``.
        /// The broker asks again after its poll interval, until its bound.
        case awaitDocuments(ContinuationID, paths: [String])
        /// Tell `app` that continuation `id` of `activityType` is coming (C5: at once, before the state).
        case tellWillContinue(app: AppID, ContinuationID, activityType: String)
        /// Give `app` the state of continuation `id` (C5, C7).
        case deliver(app: AppID, ContinuationID, payload: Data)
        /// Tell `app` that continuation `id` failed, and why (C5, C6, C8).
        case tellFailed(app: AppID, ContinuationID, activityType: String, reason: ContinuationFailure, message: String)
        /// Stop the fetch under way for continuation `id`: it has ended.
        case stopWork(ContinuationID)
        /// Continuation `id` ended: answer whoever asked for it.
        case finished(ContinuationID, Outcome)

        /// The save request `save` ended before its deadline: its timer is no longer needed.
        public static func cancelTimer(save: UInt64) -> Action { .cancelTimer(.save(save)) }
    }

    /// A fetch waiting for the app's state.
    struct Save: Sendable, Hashable {
        var fetch: FetchID
        var app: AppID
        var bundle: String
        var activity: UInt64
        var deadlineMilliseconds: UInt64
        /// The device that asked, when it will confirm that its app has the state (A8; issue 25 item 4).
        var confirmingAsker: String? = nil
        var sequence: UInt64 = 0
        /// When the deadline passes, on the timers' clock, once the app has been asked (``saveAsked(_:now:)``).
        var due: UInt64? = nil
    }

    /// A state sent to a device that will confirm when its app has it: the activity's app hears `continued` (A8)
    /// only then.
    struct HandedOff: Sendable, Hashable {
        var fetch: FetchID
        var app: AppID
        var activity: UInt64
    }

    /// Which device and which advert a confirmation names.
    struct HandoffKey: Sendable, Hashable {
        var asker: String
        var sequence: UInt64
    }

    /// The most states kept waiting for their confirmation: a device that fetched and then failed (its app went
    /// away, a document did not sync) never confirms, and what it leaves here is dropped, oldest first.
    public static let maximumUnconfirmed = 32

    /// This device's name, for the reasons other devices are given.
    public let deviceName: String
    /// The most an app is given to answer a save, whatever the other device asks (ISSUE 5 part 4: 1 s).
    public let saveDeadlineMilliseconds: UInt64
    /// The deadlines of continuations on this device.
    public let deadlines: Deadlines
    /// The current activity, if any.
    public private(set) var current: CurrentActivity?
    var lastSequence: UInt64 = 0
    var nextSave: UInt64 = 1
    /// Every fetch in progress, by its save request number.
    var saves: [UInt64: Save] = [:]
    /// States sent and not yet confirmed as continued, by who asked and for which advert.
    var handedOff: [HandoffKey: HandedOff] = [:]
    /// Every continuation in progress on this device: the one record of each (issue 26 item 2).
    var ongoing: [ContinuationID: Continuation] = [:]

    /// A broker for the device `deviceName`, giving apps `saveDeadlineMilliseconds` to answer a save, and its
    /// continuations `deadlines`.
    public init(deviceName: String, saveDeadlineMilliseconds: UInt64 = 1_000, deadlines: Deadlines = Deadlines()) {
        self.deviceName = deviceName
        self.saveDeadlineMilliseconds = saveDeadlineMilliseconds
        self.deadlines = deadlines
    }

    /// Fetches waiting for their app now.
    public var savesInProgress: Int { saves.count }

    /// States sent whose continuation is not confirmed yet (bounded by ``maximumUnconfirmed``).
    public var unconfirmedHandoffs: Int { handedOff.count }

    static func hasExpired(_ notice: ActivityNotice, at now: UInt64) -> Bool {
        guard let expiry = notice.expirationDate else { return false }
        return UInt64(max(0, expiry.timeIntervalSince1970 * 1000)) <= now
    }

    // MARK: The apps on this device

    /// `app` makes `activity` the device's current activity (A9, C2); any other stops being current. The same
    /// activity again (a new title, say) keeps its sequence and moves its revision on, so other devices ask again what
    /// it is rather than replace it. When another app's activity was current, that app is told it no longer is
    /// (``Action/tellNotCurrent(app:activity:)``: docs/ARCHITECTURE.md, "Who wins"). With `isUpdate` (the app only
    /// changed what it shows, a new title: nothing the person did) it changes the activity if it is current and is
    /// ignored otherwise: an update never takes current back, even one sent before the app heard it was superseded.
    public mutating func becomeCurrent(
        app: AppID,
        bundle: String,
        team: String,
        activity: UInt64,
        notice: ActivityNotice,
        isUpdate: Bool = false,
        now: UInt64
    ) -> [Action] {
        if isUpdate, current.map({ $0.app != app || $0.activity != activity }) ?? true { return [] }
        let next: CurrentActivity
        if var same = current, same.app == app, same.activity == activity {
            if same.notice != notice { same.revision = (same.revision &+ 1) & 0x0F }
            same.notice = notice
            next = same
        } else {
            // Sequences only grow, across restarts too (milliseconds since 1970 as a floor), so a receiver never
            // mistakes a new activity for an old one.
            lastSequence = max(lastSequence + 1, now)
            next = CurrentActivity(app: app, bundle: bundle, team: team, activity: activity, sequence: lastSequence, notice: notice)
        }
        let superseded = current.flatMap { $0.app != app ? Action.tellNotCurrent(app: $0.app, activity: $0.activity) : nil }
        current = next
        return [next.isOffered(at: now) ? .advertise(next) : .goodbye(next)] + (superseded.map { [$0] } ?? [])
    }

    /// `app` resigns or invalidates `activity` (A9): if it is current, it stops being so, with a goodbye. Fetches
    /// already waiting for its state go on: the app may still answer them.
    public mutating func resign(app: AppID, activity: UInt64) -> [Action] {
        guard let ended = current, ended.app == app, ended.activity == activity else { return [] }
        current = nil
        return [.goodbye(ended)]
    }

    /// `app`'s connection ended: its fetches fail (`appGone`), and its current activity goes, since nobody can
    /// give its state any more (A9).
    public mutating func appGone(_ app: AppID) -> [Action] {
        handedOff = handedOff.filter { $0.value.app != app }
        var actions: [Action] = []
        for (save, waiting) in saves.sorted(by: { $0.key < $1.key }) where waiting.app == app {
            saves[save] = nil
            actions.append(.cancelTimer(save: save))
            actions.append(.reply(waiting.fetch, .failed(.appGone, "\(waiting.bundle) went away before giving its state")))
        }
        if let ended = current, ended.app == app {
            current = nil
            actions.append(.goodbye(ended))
        }
        return actions + continuationsGone(with: app)
    }

    /// The agent is stopping: the goodbye goes out, every fetch fails (`appGone`), every continuation ends
    /// (`cancelled`).
    public mutating func stop() -> [Action] {
        var actions = endAll(failure: .fetch(.cancelled), message: "the agent on \(deviceName) is stopping")
        for (save, waiting) in saves.sorted(by: { $0.key < $1.key }) {
            actions.append(.cancelTimer(save: save))
            actions.append(.reply(waiting.fetch, .failed(.appGone, "the agent on \(deviceName) is stopping")))
        }
        saves = [:]
        handedOff = [:]
        if let ended = current {
            current = nil
            actions.append(.goodbye(ended))
        }
        return actions
    }

    // MARK: Other devices

    /// What the current activity is, if it is the one advertised under `sequence` (C3: type and title, asked over
    /// the authenticated session, never on air).
    public func summary(sequence: UInt64) -> ActivitySummary? {
        guard let current, current.sequence == sequence else { return nil }
        return ActivitySummary(
            activityType: current.notice.activityType,
            title: current.notice.title,
            bundleIdentifier: current.bundle,
            team: current.team,
            webpageHost: current.notice.webpageHost,
            desktopEntry: current.notice.desktopEntry,
            mimeType: current.notice.mimeType
        )
    }

    /// Another device asks for the state of the activity advertised under `sequence` (C4), giving the app at most
    /// `deadlineMilliseconds` (and never more than this device allows). `confirmingAsker` names the device when it
    /// will confirm that its app has the state (``peerContinued(asker:sequence:)``): the app then hears `continued`
    /// (A8) on that confirmation, not when the state leaves (issue 25 item 4); nil for an older device, which does
    /// not confirm.
    public mutating func fetchAsked(
        _ fetch: FetchID,
        sequence: UInt64,
        deadlineMilliseconds: UInt64,
        now: UInt64,
        confirmingAsker: String? = nil
    ) -> [Action] {
        guard let current, current.sequence == sequence else {
            return [.reply(fetch, .failed(.notCurrent, "that activity is no longer current on \(deviceName)"))]
        }
        guard current.notice.isEligibleForHandoff else {
            return [.reply(fetch, .failed(.notEligible, "\(current.bundle) does not allow this activity to be handed off"))]
        }
        guard !Self.hasExpired(current.notice, at: now) else {
            return [.reply(fetch, .failed(.notCurrent, "the activity expired (A10)"))]
        }
        let deadline = min(saveDeadlineMilliseconds, deadlineMilliseconds)
        let save = nextSave
        nextSave += 1
        saves[save] = Save(
            fetch: fetch,
            app: current.app,
            bundle: current.bundle,
            activity: current.activity,
            deadlineMilliseconds: deadline,
            confirmingAsker: confirmingAsker,
            sequence: sequence
        )
        return [.askSave(app: current.app, save: save, activity: current.activity, deadlineMilliseconds: deadline)]
    }

    /// `app` answers save request `save` with the payload (A7, B2, B3). An answer after the deadline, to a
    /// cancelled fetch, or from another app is ignored: that fetch has had its one reply.
    public mutating func saveAnswered(save: UInt64, from app: AppID, payload: Data) -> [Action] {
        guard let waiting = saves[save], waiting.app == app else { return [] }
        saves[save] = nil
        guard payload.count <= ActivityPayload.maximumEncodedSize else {
            return [
                .cancelTimer(save: save),
                .reply(
                    waiting.fetch,
                    .failed(.tooLarge, "the state is \(payload.count) bytes, the limit is \(ActivityPayload.maximumEncodedSize) (A11)")
                ),
            ]
        }
        guard let asker = waiting.confirmingAsker else {
            // A8 with an older device, which never confirms: the app learns that its activity went elsewhere as
            // the state leaves.
            return [.cancelTimer(save: save), .tellContinued(app: app, activity: waiting.activity), .reply(waiting.fetch, .payload(payload))]
        }
        // A8: told only once the other device's app has it (issue 25 item 4); kept until then, bounded.
        handedOff[HandoffKey(asker: asker, sequence: waiting.sequence)] = HandedOff(fetch: waiting.fetch, app: app, activity: waiting.activity)
        while handedOff.count > Self.maximumUnconfirmed, let oldest = handedOff.min(by: { $0.value.fetch.value < $1.value.fetch.value }) {
            handedOff[oldest.key] = nil
        }
        return [.cancelTimer(save: save), .reply(waiting.fetch, .payload(payload))]
    }

    /// The device `asker` confirms that its app has the state it fetched of the activity advertised under
    /// `sequence`: that activity's app hears `continued` now (A8), once. A confirmation for nothing sent (or already
    /// confirmed, or dropped) does nothing.
    public mutating func peerContinued(asker: String, sequence: UInt64) -> [Action] {
        guard let handed = handedOff.removeValue(forKey: HandoffKey(asker: asker, sequence: sequence)) else { return [] }
        return [.tellContinued(app: handed.app, activity: handed.activity)]
    }

    /// `app` answered `save` that it cannot give its state (its delegate threw, or the activity is gone there):
    /// `saveFailed`, not `appNotAnswering`, since it did answer, and at once (issue 25 item 4). Nothing was
    /// continued, so the app is not told `continued` (A8).
    public mutating func saveFailed(save: UInt64, from app: AppID, text: String) -> [Action] {
        guard let waiting = saves[save], waiting.app == app else { return [] }
        saves[save] = nil
        let why = text.isEmpty ? "" : ": \(text)"
        return [.cancelTimer(save: save), .reply(waiting.fetch, .failed(.saveFailed, "\(waiting.bundle) on \(deviceName) could not give its state\(why)"))]
    }

    /// The deadline of `save` passed before its app answered (C8: `appNotAnswering`, never a hang); its timer's
    /// firing (``timerFired(_:now:)``) comes here.
    public mutating func deadlinePassed(save: UInt64) -> [Action] {
        guard let waiting = saves.removeValue(forKey: save) else { return [] }
        return [
            .reply(
                waiting.fetch,
                .failed(.appNotAnswering, "\(waiting.bundle) did not give its state within \(waiting.deadlineMilliseconds) ms")
            )
        ]
    }

    /// The other device gave up on `fetch` (C6 there): its save is forgotten, a late answer ignored, and the fetch
    /// answered `cancelled` (which the session does not send on: the peer asked to stop).
    public mutating func fetchCancelled(_ fetch: FetchID) -> [Action] {
        guard let (save, _) = saves.first(where: { $0.value.fetch == fetch }) else { return [] }
        saves[save] = nil
        return [.cancelTimer(save: save), .reply(fetch, .failed(.cancelled, "the other device gave up on this fetch"))]
    }
}
