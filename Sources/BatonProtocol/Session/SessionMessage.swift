import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why a fetch or describe failed, as one device tells another (SEMANTICS C8). The continuing app sees it in its
/// `didFailToContinueUserActivity` error.
public enum FetchFailure: String, Sendable, Hashable, CaseIterable {
    /// The activity is no longer current on the originating device (resigned, invalidated, replaced, expired).
    case notCurrent
    /// The owning app did not give its state within the deadline.
    case appNotAnswering
    /// The owning app went away before it answered.
    case appGone
    /// The owning app answered that it cannot give its state (its delegate threw, or the activity is gone there):
    /// at once, not a timeout (issue 25 item 4). Older readers see `protocolViolation`.
    case saveFailed
    /// The activity may not be handed off (`isEligibleForHandoff` is false).
    case notEligible
    /// The payload exceeds the hard limit (A11).
    case tooLarge
    /// The continuing side gave up (a newer continuation started, C6).
    case cancelled
    /// The originating device cannot be reached, or the session with it ended (local only: never sent).
    case peerGone
    /// The originating device did not answer in time (local only: never sent).
    case timedOut
    /// The originating device refused this device (not a member any more).
    case refused
    /// Something unreadable came back.
    case protocolViolation
    /// The other device does not know this kind of request (it runs an older protocol): the session stays up.
    case unsupported
    /// The activity does not support continuation streams (its app did not set `supportsContinuationStreams`, or
    /// declined the stream) (F1).
    case noStreams
    /// A stream was asked for an activity the asking device did not continue (F1: streams follow a continuation).
    case notContinued
    /// More continuation streams than allowed are open between the two devices, or for the app (docs/PROTOCOL.md §8).
    case tooManyStreams
}

/// What the originating device tells about its current activity when asked (C3: app, title, device).
public struct ActivitySummary: Sendable, Hashable {
    /// The activity type.
    public var activityType: String
    /// The title, if the app set one.
    public var title: String?
    /// The originating app's bundle identifier.
    public var bundleIdentifier: String
    /// Its team identifier.
    public var team: String
    /// The web page equivalent's host, when there is one.
    public var webpageHost: String?
    /// The application it was used in there (a desktop file id) and its document's MIME type, when its app said
    /// (``ActivityNotice/desktopEntry``; issue 27 item 3): what names the application that will open it here. Absent
    /// from an older device.
    public var desktopEntry: String?
    public var mimeType: String?

    /// A summary.
    public init(
        activityType: String, title: String?, bundleIdentifier: String, team: String, webpageHost: String?, desktopEntry: String? = nil,
        mimeType: String? = nil
    ) {
        self.activityType = activityType
        self.title = title
        self.bundleIdentifier = bundleIdentifier
        self.team = team
        self.webpageHost = webpageHost
        self.desktopEntry = desktopEntry
        self.mimeType = mimeType
    }

    var fields: [String: PropertyList?] {
        [
            "type": .string(activityType), "title": title.map { .string(bounded($0, 1_024)) }, "bundle": .string(bundleIdentifier),
            "team": .string(team), "host": webpageHost.map(PropertyList.string),
            "desktop": ActivityNotice.hint(desktopEntry), "mime": ActivityNotice.hint(mimeType),
        ]
    }

    init(_ fields: MessageFields) throws {
        self.init(
            activityType: try fields.string("type", maximumLength: ActivityPayload.maximumActivityTypeLength),
            title: try fields.optionalString("title", maximumLength: 1_024),
            bundleIdentifier: try fields.string("bundle", maximumLength: 255),
            team: try fields.string("team", maximumLength: 64),
            webpageHost: try fields.optionalString("host", maximumLength: 255),
            desktopEntry: try fields.optionalString("desktop", maximumLength: ActivityNotice.maximumApplicationHintLength),
            mimeType: try fields.optionalString("mime", maximumLength: ActivityNotice.maximumApplicationHintLength)
        )
    }
}

/// One message on a session between two agents (docs/PROTOCOL.md §6). Requests carry an id chosen by the side that
/// asks; the reply names it, so several requests share one connection in either direction.
public enum SessionMessage: Sendable, Hashable {
    /// Roster exchange. With an id it is a multiplexed request (answered by ``synced``); without one it is the
    /// one-shot exchange of `baton sync`, answered by another `sync` without an id.
    case sync(id: UInt64?, roster: Data, agentPort: Int?)
    /// The answer to a multiplexed `sync`.
    case synced(id: UInt64, roster: Data, agentPort: Int?)
    /// Asks for the state of the activity with this sequence number (C4); the answer may take `deadline`
    /// milliseconds, which the originating device spends asking its app (B2, B3, A7). `confirms` (the `confirm`
    /// field, left out when false): the asker will send ``continued(sequence:)`` once its app has the state, and
    /// the originating app is told `continued` (A8) only then; without it, as soon as the state is sent (issue 25
    /// item 4, docs/PROTOCOL.md §6).
    case fetch(id: UInt64, sequence: UInt64, deadlineMilliseconds: UInt64, confirms: Bool = false)
    /// A notice (no id, no answer): the app on the sender's device now has the state of the activity with this
    /// sequence, fetched with `confirm` (A8: the originating app is told `continued` now; issue 25 item 4). An older
    /// reader ignores it, as every notice it does not know.
    case continued(sequence: UInt64)
    /// A notice (no id, no answer), sent by each side once its session is up: the sender's wall clock, milliseconds
    /// since 1970, as it sent this. The receiver judges the sender's adverts against that clock, so two devices whose
    /// clocks are minutes apart still see each other (issue 25 item 9, docs/PROTOCOL.md §5). Older readers ignore it.
    case clock(milliseconds: UInt64)
    /// Asks what the activity with this sequence number is (app, type, title), for showing it (C3).
    case describe(id: UInt64, sequence: UInt64)
    /// The asking side no longer wants the answer to `id` (C6).
    case cancel(id: UInt64)
    /// The answer to a fetch: an encoded ``ActivityPayload``.
    case payload(id: UInt64, payload: Data)
    /// The answer to a describe.
    case summary(id: UInt64, ActivitySummary)
    /// A request failed.
    case failure(id: UInt64, reason: FetchFailure, message: String)
    /// The whole session is refused (kept from the account flows' `error` message).
    case error(message: String)
    /// Asks to open a continuation stream to the app whose activity had sequence `sequence` and was continued by the
    /// asking device (F1, F2); the asker may at once receive up to `window` bytes on it (docs/PROTOCOL.md §8). The
    /// request's id is the stream's id. `direct`: the asker offers the direct path (issue 30): the apps then talk
    /// over a TCP connection of their own, and an answer without `direct` keeps the stream on the session (relayed).
    case openStream(id: UInt64, sequence: UInt64, window: UInt64, direct: DirectStreamOffer? = nil)
    /// The stream asked for by request `id` is open; the asker may send up to `window` bytes on it (F3). `direct`:
    /// the answerer took the direct path, and this is its app end's certificate fingerprint.
    case streamOpened(id: UInt64, window: UInt64, direct: Data? = nil)
    /// The receiver of a stream's data may now be sent `bytes` more (credit-based flow control). `opener`: whether
    /// the sender of this message opened the stream.
    case credit(stream: UInt64, opener: Bool, bytes: UInt64)
    /// The sender sends no more data on the stream (a half-close); the other direction goes on.
    case endOfStream(stream: UInt64, opener: Bool)
    /// The stream is over in both directions, abnormally: why, for the apps at both ends.
    case resetStream(stream: UInt64, opener: Bool, reason: FetchFailure, message: String)
    /// Is the other device still there? Answered by ``pong(id:)`` (an older device answers `fail`/`unsupported`,
    /// which says as much). Sent while streams are open and the link has been quiet (a dead peer, F3).
    case ping(id: UInt64)
    /// The answer to a ``ping(id:)``.
    case pong(id: UInt64)
    /// A well-formed message of a type this version does not know (a newer peer's). With an id it is a request,
    /// answered by ``failure(id:reason:message:)`` with ``FetchFailure/unsupported``; without one it is ignored.
    /// Either way the session goes on: that is what lets a later version add requests (docs/PROTOCOL.md §6).
    case unknown(type: String, id: UInt64?)

    /// The request id the message belongs to, if any.
    public var id: UInt64? {
        switch self {
        case .sync(let id, _, _): id
        case .synced(let id, _, _), .fetch(let id, _, _, _), .describe(let id, _), .cancel(let id), .payload(let id, _),
            .summary(let id, _), .failure(let id, _, _):
            id
        case .error, .credit, .endOfStream, .resetStream, .continued, .clock: nil
        case .openStream(let id, _, _, _), .streamOpened(let id, _, _), .ping(let id), .pong(let id): id
        case .unknown(_, let id): id
        }
    }

    /// The message as a property list, ready to frame.
    public var propertyList: PropertyList {
        switch self {
        case .sync(let id, let roster, let port):
            makeMessage("sync", ["id": id.map(PropertyList.number), "roster": .data(roster), "agentPort": port.map { .integer(Int64($0)) }])
        case .synced(let id, let roster, let port):
            makeMessage("synced", ["id": .number(id), "roster": .data(roster), "agentPort": port.map { .integer(Int64($0)) }])
        case .fetch(let id, let sequence, let deadline, let confirms):
            makeMessage("fetch", ["id": .number(id), "seq": .number(sequence), "deadline": .number(deadline), "confirm": confirms ? .bool(true) : nil])
        case .continued(let sequence):
            makeMessage("continued", ["seq": .number(sequence)])
        case .clock(let milliseconds):
            makeMessage("clock", ["now": .number(milliseconds)])
        case .describe(let id, let sequence):
            makeMessage("describe", ["id": .number(id), "seq": .number(sequence)])
        case .cancel(let id):
            makeMessage("cancel", ["id": .number(id)])
        case .payload(let id, let payload):
            makeMessage("payload", ["id": .number(id), "payload": .data(payload)])
        case .summary(let id, let summary):
            makeMessage("summary", summary.fields.merging(["id": .number(id)]) { $1 })
        case .failure(let id, let reason, let message):
            makeMessage("fail", ["id": .number(id), "reason": .string(reason.rawValue), "message": .string(bounded(message, 4_096))])
        case .error(let message):
            makeMessage("error", ["message": .string(bounded(message, 4_096))])
        case .unknown(let type, let id):
            makeMessage(type, ["id": id.map(PropertyList.number)])
        case .openStream(let id, let sequence, let window, let direct):
            makeMessage(
                "stream",
                ["id": .number(id), "seq": .number(sequence), "window": .number(window), "direct": direct.map { .data($0.token) }, "cert": direct.map { .data($0.fingerprint) }]
            )
        case .streamOpened(let id, let window, let direct):
            makeMessage("opened", ["id": .number(id), "window": .number(window), "cert": direct.map(PropertyList.data)])
        case .credit(let stream, let opener, let bytes):
            makeMessage("credit", ["stream": .number(stream), "opener": .bool(opener), "bytes": .number(bytes)])
        case .endOfStream(let stream, let opener):
            makeMessage("eof", ["stream": .number(stream), "opener": .bool(opener)])
        case .resetStream(let stream, let opener, let reason, let message):
            makeMessage(
                "reset",
                ["stream": .number(stream), "opener": .bool(opener), "reason": .string(reason.rawValue), "message": .string(bounded(message, 4_096))]
            )
        case .ping(let id):
            makeMessage("ping", ["id": .number(id)])
        case .pong(let id):
            makeMessage("pong", ["id": .number(id)])
        }
    }

    /// Reads a message.
    /// - Throws: ``BatonProtocolError`` `malformedMessage` naming the type or field that is wrong.
    public init(_ plist: PropertyList) throws {
        let fields = try MessageFields(plist)
        switch fields.type {
        case "sync": self = .sync(id: try fields.optionalNumber("id"), roster: try fields.data("roster"), agentPort: try fields.port("agentPort"))
        case "synced": self = .synced(id: try fields.number("id"), roster: try fields.data("roster"), agentPort: try fields.port("agentPort"))
        case "fetch":
            self = .fetch(
                id: try fields.number("id"),
                sequence: try fields.number("seq"),
                deadlineMilliseconds: try fields.number("deadline"),
                confirms: try fields.optionalBool("confirm") ?? false
            )
        case "continued": self = .continued(sequence: try fields.number("seq"))
        case "clock": self = .clock(milliseconds: try fields.number("now"))
        case "describe": self = .describe(id: try fields.number("id"), sequence: try fields.number("seq"))
        case "cancel": self = .cancel(id: try fields.number("id"))
        case "payload": self = .payload(id: try fields.number("id"), payload: try fields.data("payload"))
        case "summary": self = .summary(id: try fields.number("id"), try ActivitySummary(fields))
        case "fail":
            let reason = try fields.string("reason", maximumLength: 64)
            self = .failure(
                id: try fields.number("id"),
                reason: FetchFailure(rawValue: reason) ?? .protocolViolation,
                message: try fields.string("message")
            )
        case "error": self = .error(message: try fields.string("message"))
        case "stream":
            self = .openStream(
                id: try fields.number("id"),
                sequence: try fields.number("seq"),
                window: try fields.window("window"),
                direct: try DirectStreamOffer(fields)
            )
        case "opened":
            self = .streamOpened(
                id: try fields.number("id"),
                window: try fields.window("window"),
                direct: fields.fields["cert"] == nil ? nil : try fields.data("cert", count: DirectStreamOffer.fingerprintLength)
            )
        case "credit":
            self = .credit(stream: try fields.number("stream"), opener: try fields.bool("opener"), bytes: try fields.window("bytes"))
        case "eof": self = .endOfStream(stream: try fields.number("stream"), opener: try fields.bool("opener"))
        case "reset":
            let reason = try fields.string("reason", maximumLength: 64)
            self = .resetStream(
                stream: try fields.number("stream"),
                opener: try fields.bool("opener"),
                reason: FetchFailure(rawValue: reason) ?? .protocolViolation,
                message: try fields.string("message")
            )
        case "ping": self = .ping(id: try fields.number("id"))
        case "pong": self = .pong(id: try fields.number("id"))
        default:
            guard (1...64).contains(fields.type.utf8.count) else { throw fields.unexpected() }
            self = .unknown(type: fields.type, id: try fields.optionalNumber("id"))
        }
    }
}
