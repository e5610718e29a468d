import BatonCore
import BatonDBus
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One app on the session bus as the agent serves it (issue 28 item 1; docs/PROTOCOL.md §11), as a pure machine: no
/// I/O, no locks, no clock. A method call the app made, a message the agent sends the app (``IPCMessage``, what the
/// Unix socket would carry), or the app's answer to a call the agent made goes in; what to tell the agent, what to
/// answer the app and which of the app's methods to call come out.
///
/// It is what turns D-Bus into §7's messages and back, so a bus client is one more app connection of the agent: the
/// agent holds its activities (the app creates them and sets their properties by call, A1–A4, A10), sends `current`
/// from the properties held (A9, C2), answers `save` at once with the state held unless `needsSave` is set (A6, A7:
/// then it asks the app's `Save` first), and turns `deliver` into `Continue` with the activity as an `a{sv}` (C5, C7).
struct DBusAppSession: Sendable {
    /// A call the app made, by a number the bus adapter gives it (it keeps the message until it is answered).
    typealias CallID = UInt64
    /// A call the agent makes on the app and waits for the answer of, by a number this machine gives it.
    typealias OutgoingID = UInt64

    enum Input: Sendable {
        /// The app called `member` of `org.baton.Agent1` with `arguments` (of the member's signature: the adapter
        /// refused others).
        case call(CallID, member: String, arguments: [DBusValue])
        /// The agent sent the app `message`.
        case agent(IPCMessage)
        /// The app answered the call `OutgoingID` with `values`, or an error (its name and message; no answer in time
        /// is the bus's own error).
        case answered(OutgoingID, values: [DBusValue])
        case answerFailed(OutgoingID, name: String, message: String)
        /// The connection is over (the app left the bus, or the agent closed it).
        case closed
    }

    enum Action: Sendable, Equatable {
        /// Hand `message` to the agent, as if the app had sent it on the socket.
        case toAgent(IPCMessage)
        /// Answer the app's call.
        case reply(CallID, [DBusValue])
        case error(CallID, name: String, message: String)
        /// Call `member` of `org.baton.App1` on the app; `expecting` an answer (within `timeoutMilliseconds`) under that
        /// number, or none (NO_REPLY_EXPECTED).
        case callApp(member: String, arguments: [DBusValue], expecting: OutgoingID?, timeoutMilliseconds: UInt64)
        /// Open a stream for the app's `OpenStream` call (F2) and answer it (``DBusAppConduit/openBusStream(call:continuation:)``).
        case openStream(CallID, continuation: UInt64)
        /// Offer the app the stream announced with `token` (F3): `AcceptStream`, its answer expected as `expecting`.
        case offerStream(activity: UInt64, token: Data, expecting: OutgoingID)
        /// The app answered `AcceptStream` for the stream offered under `token`: take it, or decline it with `message`.
        case streamAnswered(token: Data, accepted: Bool, message: String)
    }

    /// What the agent holds of one activity the app created.
    struct Held: Sendable, Equatable {
        var payload: ActivityPayload
        /// A6: the app's state is stale; the agent calls `Save` before the state is next needed.
        var needsSave = false
    }

    /// A call the agent made on the app and waits for: which `save` it answers.
    enum Waiting: Sendable, Equatable {
        case save(request: UInt64, activity: UInt64)
        /// `Continue`'s `handled`, which nothing waits on: the answer is dropped.
        case continued
        /// `AcceptStream` for the stream announced with `token` (F3).
        case acceptStream(token: Data)
    }

    /// The most activities an app may hold at once: each may hold a payload of up to 1 MiB (A11).
    static let maximumActivities = 64
    /// How long the app may take to answer `Continue`.
    static let continueTimeoutMilliseconds: UInt64 = 10_000

    let mapping: DBusPropertyListMapping
    /// The `Register` waiting for the agent's `welcome` or `refused`.
    private(set) var registering: CallID?
    private(set) var registered = false
    private(set) var activities: [UInt64: Held] = [:]
    /// The next activity number: from 1, never reused, so an invalidated number is never valid again.
    private var nextActivity: UInt64 = 1
    /// The activity the app made current, until it resigns it, invalidates it or another app's takes over.
    private(set) var current: UInt64?
    /// Continuations told `WillContinue`, by number, with their type: each gets `Continue` or `DidFail` once (C5).
    private(set) var continuing: [UInt64: String] = [:]
    private(set) var waiting: [OutgoingID: Waiting] = [:]
    private var nextOutgoing: OutgoingID = 1

    init(mapping: DBusPropertyListMapping = DBusPropertyListMapping()) {
        self.mapping = mapping
    }

    mutating func handle(_ input: Input) -> [Action] {
        switch input {
        case .call(let call, let member, let arguments): return called(call, member, arguments)
        case .agent(let message): return told(message)
        case .answered(let outgoing, let values): return answered(outgoing, .success(values))
        case .answerFailed(let outgoing, let name, let message): return answered(outgoing, .failure(.init(name: name, message: message)))
        case .closed:
            waiting = [:]
            continuing = [:]
            defer { registering = nil }
            return registering.map { [.error($0, name: DBusAppInterface.Error.failed, message: "the agent closed this app's connection")] } ?? []
        }
    }

    // MARK: The app's calls

    private mutating func called(_ call: CallID, _ member: String, _ arguments: [DBusValue]) -> [Action] {
        if member == "Register" {
            guard case .string(let app) = arguments.first else { return invalid(call, "Register takes (s app_id, a{sv} options)") }
            guard !registered, registering == nil else {
                return [.error(call, name: DBusAppInterface.Error.alreadyConnected, message: "this connection is registered already (or registering): register once")]
            }
            registering = call
            // The hello (§7): the agent's checks run unchanged. This connection reads `notCurrent` (NotCurrent).
            return [.toAgent(.hello(bundleIdentifier: app, version: IPCMessage.version, readsNotCurrent: true))]
        }
        guard registered else {
            return [.error(call, name: DBusAppInterface.Error.accessDenied, message: "call Register first: \(member) is for a registered app only")]
        }
        do {
            switch (member, arguments.first, arguments.dropFirst().first) {
            case ("CreateActivity", .string(let type)?, let properties?):
                return try create(call, type: type, properties: properties)
            case ("UpdateActivity", .uint64(let activity)?, let properties?):
                return try update(call, activity: activity, properties: properties)
            case ("BecomeCurrent", .uint64(let activity)?, nil):
                let held = try self.held(activity)
                current = activity
                var actions: [Action] = [.toAgent(.becomeCurrent(activity: activity, Self.notice(held.payload)))]
                // G1, as the Swift library does: the state held is the search index's too.
                if held.payload.isEligibleForSearch, let payload = try? held.payload.encoded() {
                    actions.append(.toAgent(.index(activity: activity, payload: payload)))
                }
                return actions + [.reply(call, [])]
            case ("ResignCurrent", .uint64(let activity)?, nil):
                _ = try held(activity)
                if current == activity { current = nil }
                return [.toAgent(.resignCurrent(activity: activity)), .reply(call, [])]
            case ("Invalidate", .uint64(let activity)?, nil):
                _ = try held(activity)
                activities[activity] = nil
                if current == activity { current = nil }
                return [.toAgent(.invalidate(activity: activity)), .reply(call, [])]
            case ("SetNeedsSave", .uint64(let activity)?, nil):
                _ = try held(activity)
                activities[activity]?.needsSave = true
                return [.reply(call, [])]
            case ("OpenStream", .uint64(let continuation)?, nil):
                return openStream(call, continuation: continuation)
            default:
                return [.error(call, name: DBusAppInterface.Error.unknownMethod, message: "org.baton.Agent1 has no method \(member) taking these arguments")]
            }
        } catch {
            return [.error(call, name: error.name, message: error.message)]
        }
    }

    private mutating func create(_ call: CallID, type: String, properties: DBusValue) throws(Refusal) -> [Action] {
        guard activities.count < Self.maximumActivities else {
            throw Refusal(
                DBusAppInterface.Error.tooManyActivities,
                "this app holds \(Self.maximumActivities) activities already: invalidate those it no longer shows"
            )
        }
        var payload: ActivityPayload
        do {
            payload = try ActivityPayload(activityType: type)
        } catch {
            throw Refusal(DBusAppInterface.Error.invalidArgs, "activity_type: \(error)")
        }
        var needsSave = false
        try apply(properties, to: &payload, needsSave: &needsSave)
        let activity = nextActivity
        nextActivity += 1
        activities[activity] = Held(payload: payload, needsSave: needsSave)
        return [.reply(call, [.uint64(activity)])]
    }

    private mutating func update(_ call: CallID, activity: UInt64, properties: DBusValue) throws(Refusal) -> [Action] {
        var held = try self.held(activity)
        let before = Self.notice(held.payload)
        try apply(properties, to: &held.payload, needsSave: &held.needsSave)
        activities[activity] = held
        var actions: [Action] = []
        // What other devices are shown changed: sent on as an update, which never takes current back (issue 27 item 3).
        let notice = Self.notice(held.payload)
        if current == activity, notice != before { actions.append(.toAgent(.becomeCurrent(activity: activity, notice, isUpdate: true))) }
        return actions + [.reply(call, [])]
    }

    /// The app's `OpenStream` (F2): the stream is opened outside the machine (its pipes, the agent's checks).
    private func openStream(_ call: CallID, continuation: UInt64) -> [Action] {
        [.openStream(call, continuation: continuation)]
    }

    /// The app's `properties` (an `a{sv}`) applied to `payload` as §11's table says, or nothing changed.
    private func apply(_ properties: DBusValue, to payload: inout ActivityPayload, needsSave: inout Bool) throws(Refusal) {
        let values: [String: PropertyList]
        do {
            values = try mapping.userInfo(from: properties, root: "properties")
        } catch {
            throw Refusal(DBusAppInterface.Error.invalidArgs, "\(error)")
        }
        var changed = payload
        var saves = needsSave
        try DBusActivityProperties.apply(values, to: &changed, needsSave: &saves)
        try DBusActivityProperties.checkSize(changed)
        payload = changed
        needsSave = saves
    }

    private func held(_ activity: UInt64) throws(Refusal) -> Held {
        guard let held = activities[activity] else {
            throw Refusal(
                DBusAppInterface.Error.invalidArgs,
                "activity: this app has no activity \(activity) (CreateActivity makes one; an invalidated one is gone for good)"
            )
        }
        return held
    }

    private func invalid(_ call: CallID, _ message: String) -> [Action] {
        [.error(call, name: DBusAppInterface.Error.invalidArgs, message: message)]
    }

    // MARK: What the agent tells the app

    private mutating func told(_ message: IPCMessage) -> [Action] {
        switch message {
        case .welcome(let device, let name):
            guard let call = registering else { return [] }
            registering = nil
            registered = true
            return [.reply(call, [.string(device), .string(name)])]
        case .refused(let code, let text):
            // The agent closes the connection after this; a later Register makes a new one.
            guard let call = registering else { return [] }
            registering = nil
            return [.error(call, name: DBusAppInterface.errorName(for: code.rawValue), message: text)]
        case .save(let request, let activity, let deadline):
            return save(request: request, activity: activity, deadline: deadline)
        case .continued(let activity):
            return [call("WasContinued", [.uint64(activity)])]
        case .notCurrent(let activity):
            if current == activity { current = nil }
            return [call("NotCurrent", [.uint64(activity)])]
        case .willContinue(let continuation, let type):
            continuing[continuation] = type
            return [call("WillContinue", [.uint64(continuation), .string(type)])]
        case .deliver(let continuation, let data):
            guard let type = continuing.removeValue(forKey: continuation) else { return [] }
            do {
                let activity = try DBusActivityProperties.dbusValue(of: ActivityPayload(decoding: data), mapping: mapping)
                let outgoing = expect(.continued)
                return [
                    .callApp(member: "Continue", arguments: [.uint64(continuation), activity], expecting: outgoing,
                             timeoutMilliseconds: Self.continueTimeoutMilliseconds)
                ]
            } catch {
                return [call("DidFail", [.uint64(continuation), .string(type), .string(DBusAppInterface.Error.unreadable), .string("the state cannot be used: \(error)")])]
            }
        case .failed(let continuation, let type, let reason, let text):
            guard continuing.removeValue(forKey: continuation) != nil else { return [] }
            return [call("DidFail", [.uint64(continuation), .string(type), .string(DBusAppInterface.errorName(for: reason.rawValue)), .string(text)])]
        case .incomingStream(let activity, let token):
            return incomingStream(activity: activity, token: token)
        default:
            return []
        }
    }

    /// Another device's app asks for a stream to `activity` (F3): offered to the app with `AcceptStream`.
    private mutating func incomingStream(activity: UInt64, token: Data) -> [Action] {
        [.offerStream(activity: activity, token: token, expecting: expect(.acceptStream(token: token)))]
    }

    /// A7: the state of `activity` now: what is held, unless the app must be asked first (`needsSave`, A6).
    private mutating func save(request: UInt64, activity: UInt64, deadline: UInt64) -> [Action] {
        guard let held = activities[activity] else {
            return [.toAgent(.saveFailed(request: request, message: "the activity no longer exists"))]
        }
        guard held.needsSave else { return saved(request: request, activity: activity, held.payload) }
        let outgoing = expect(.save(request: request, activity: activity))
        return [.callApp(member: "Save", arguments: [.uint64(activity), .uint64(deadline)], expecting: outgoing, timeoutMilliseconds: deadline)]
    }

    /// `saved` with `payload` encoded, and `index` when it is eligible for search (G1, as the Swift library sends).
    private func saved(request: UInt64, activity: UInt64, _ payload: ActivityPayload) -> [Action] {
        do {
            let data = try payload.encoded()
            var actions: [Action] = [.toAgent(.saved(request: request, payload: data))]
            if payload.isEligibleForSearch { actions.append(.toAgent(.index(activity: activity, payload: data))) }
            return actions
        } catch {
            return [.toAgent(.saveFailed(request: request, message: "\(error)"))]
        }
    }

    private mutating func answered(_ outgoing: OutgoingID, _ result: Result<[DBusValue], Refusal>) -> [Action] {
        guard let what = waiting.removeValue(forKey: outgoing) else { return [] }
        if case .acceptStream(let token) = what {
            // F3: any answer takes the stream; an error (or none in time) declines it.
            switch result {
            case .success: return [.streamAnswered(token: token, accepted: true, message: "")]
            case .failure(let error): return [.streamAnswered(token: token, accepted: false, message: "\(error.name): \(error.message)")]
            }
        }
        guard case .save(let request, let activity) = what else { return [] }
        guard var held = activities[activity] else {
            return [.toAgent(.saveFailed(request: request, message: "the activity was invalidated while it was saved"))]
        }
        switch result {
        case .failure(let error):
            return [.toAgent(.saveFailed(request: request, message: "the app's Save failed: \(error.name): \(error.message)"))]
        case .success(let values):
            guard values.count == 1, let properties = values.first else {
                return [.toAgent(.saveFailed(request: request, message: "the app's Save answered \(values.count) values, not one a{sv}"))]
            }
            // B2: the userInfo is emptied first; the app's answer holds the whole state.
            var payload = held.payload
            payload.userInfo = [:]
            var needsSave = false
            do {
                try apply(properties, to: &payload, needsSave: &needsSave)
            } catch {
                return [.toAgent(.saveFailed(request: request, message: "the app's Save answered what cannot be used: \(error.message)"))]
            }
            // A7: saved, so no longer stale.
            held.payload = payload
            held.needsSave = false
            activities[activity] = held
            return saved(request: request, activity: activity, payload)
        }
    }

    // MARK: Helpers

    private mutating func expect(_ what: Waiting) -> OutgoingID {
        let outgoing = nextOutgoing
        nextOutgoing += 1
        waiting[outgoing] = what
        return outgoing
    }

    /// A call on the app that expects no answer.
    private func call(_ member: String, _ arguments: [DBusValue]) -> Action {
        .callApp(member: member, arguments: arguments, expecting: nil, timeoutMilliseconds: 0)
    }

    /// What other devices are shown of an activity (as the Swift library's `notice`).
    static func notice(_ payload: ActivityPayload) -> ActivityNotice {
        ActivityNotice(
            activityType: payload.activityType,
            title: payload.title,
            webpageHost: payload.webpageURL?.host,
            supportsStreams: payload.supportsContinuationStreams,
            isEligibleForHandoff: payload.isEligibleForHandoff,
            expirationDate: payload.expirationDate
        )
    }

    /// A refusal of a call: its D-Bus error name and message.
    struct Refusal: Error, Sendable, Equatable {
        var name: String
        var message: String

        init(_ name: String, _ message: String) {
            self.name = name
            self.message = message
        }

        init(name: String, message: String) {
            self.init(name, message)
        }
    }
}
