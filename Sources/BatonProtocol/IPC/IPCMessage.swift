import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an app tells its agent about its current activity (A9, C2): enough to advertise it and to show it, never
/// its `userInfo` (the agent asks for that only when another device continues it).
public struct ActivityNotice: Sendable, Hashable {
    /// The activity type.
    public var activityType: String
    /// The title.
    public var title: String?
    /// The host of the webpage URL, when there is one (E1, E3).
    public var webpageHost: String?
    /// Whether the activity supports continuation streams (F1).
    public var supportsStreams: Bool
    /// Whether it may be handed off at all (A10).
    public var isEligibleForHandoff: Bool
    /// After this it is neither handed off nor shown (A10).
    public var expirationDate: Date?
    /// For an activity of the agent's own sources (media, recent documents; issue 27 item 3): the desktop file id of
    /// the application it was used in here (`mpv`, `libreoffice-writer`) and the document's MIME type, so that another
    /// device can show which application will open it there (the same lookup it opens it with).
    public var desktopEntry: String?
    public var mimeType: String?

    /// The longest desktop file id or MIME type carried.
    public static let maximumApplicationHintLength = 255

    /// A desktop file id or MIME type as written: left out when longer than ``maximumApplicationHintLength`` (cut, it
    /// would name another application; readers refuse longer ones).
    static func hint(_ text: String?) -> PropertyList? {
        guard let text, text.utf8.count <= maximumApplicationHintLength else { return nil }
        return .string(text)
    }

    /// A notice.
    public init(
        activityType: String,
        title: String? = nil,
        webpageHost: String? = nil,
        supportsStreams: Bool = false,
        isEligibleForHandoff: Bool = true,
        expirationDate: Date? = nil,
        desktopEntry: String? = nil,
        mimeType: String? = nil
    ) {
        self.activityType = activityType
        self.title = title
        self.webpageHost = webpageHost
        self.supportsStreams = supportsStreams
        self.isEligibleForHandoff = isEligibleForHandoff
        self.expirationDate = expirationDate
        self.desktopEntry = desktopEntry
        self.mimeType = mimeType
    }
}

/// One activity another device offers, as the agent shows it (C3).
public struct NearbyItem: Sendable, Hashable {
    /// The originating device's id and name.
    public var device: String
    public var deviceName: String
    /// The activity's sequence number there.
    public var sequence: UInt64
    /// How long it has been offered, in milliseconds.
    public var ageMilliseconds: UInt64
    /// The app here that would continue it, if one does ("" when none).
    public var app: String
    /// Type and title as the originating device described them, when it answered.
    public var activityType: String?
    public var title: String?
    /// The name of the application that will open it here, when `app` is the agent's own media or documents app
    /// (issue 27 item 3: "mpv", "LibreOffice Writer", from its desktop file); nil for any other app, which opens it
    /// itself, and from an older agent.
    public var opensWith: String?

    /// An item.
    public init(
        device: String, deviceName: String, sequence: UInt64, ageMilliseconds: UInt64, app: String, activityType: String?, title: String?,
        opensWith: String? = nil
    ) {
        self.device = device
        self.deviceName = deviceName
        self.sequence = sequence
        self.ageMilliseconds = ageMilliseconds
        self.app = app
        self.activityType = activityType
        self.title = title
        self.opensWith = opensWith
    }

    var propertyList: PropertyList {
        makeMessage(
            "item",
            [
                "device": .string(device), "name": .string(deviceName), "seq": .number(sequence), "age": .number(ageMilliseconds),
                "app": .string(app), "type": activityType.map(PropertyList.string), "title": title.map(PropertyList.string),
                "opens": opensWith.map { .string(bounded($0, 1_024)) },
            ]
        )
    }

    init(_ plist: PropertyList) throws {
        let fields = try MessageFields(plist)
        self.init(
            device: try fields.string("device", maximumLength: 128),
            deviceName: try fields.string("name", maximumLength: 1_024),
            sequence: try fields.number("seq"),
            ageMilliseconds: try fields.number("age"),
            app: try fields.string("app", maximumLength: 255),
            activityType: try fields.optionalString("type", maximumLength: ActivityPayload.maximumActivityTypeLength),
            title: try fields.optionalString("title", maximumLength: 1_024),
            opensWith: try fields.optionalString("opens", maximumLength: 1_024)
        )
    }
}

/// One installed app as the running agent sees it (`baton apps list --agent`; issue 11 part 7).
public struct AppListing: Sendable, Hashable {
    /// Its bundle identifier and name.
    public var bundle: String
    public var name: String
    /// Its team, when its identity is resolved.
    public var team: String?
    /// The activity types it continues, sorted.
    public var activityTypes: [String]
    /// What is wrong with it (unresolved identity, no executable), or "" when nothing is.
    public var problem: String
    /// How it is registered: `bundle`, `desktop-file` (issue 28 item 2) or `built-in`; "" from an agent older than
    /// issue 28, which registered bundles only.
    public var kind: String

    /// A listing.
    public init(bundle: String, name: String, team: String?, activityTypes: [String], problem: String, kind: String = "bundle") {
        self.bundle = bundle
        self.name = name
        self.team = team
        self.activityTypes = activityTypes
        self.problem = problem
        self.kind = kind
    }

    /// At most this many types per app cross the socket.
    public static let maximumActivityTypes = 1_024

    var propertyList: PropertyList {
        makeMessage(
            "app",
            [
                "bundle": .string(bundle), "name": .string(name), "team": team.map(PropertyList.string),
                "types": .array(activityTypes.map(PropertyList.string)), "problem": .string(problem),
                "kind": kind.isEmpty ? nil : .string(kind),
            ]
        )
    }

    init(_ plist: PropertyList) throws {
        let fields = try MessageFields(plist)
        let types = try fields.array("types")
        guard types.count <= Self.maximumActivityTypes else { throw fields.missing("types", "at most 1,024 types") }
        self.init(
            bundle: try fields.string("bundle", maximumLength: 255),
            name: try fields.string("name", maximumLength: 1_024),
            team: try fields.optionalString("team", maximumLength: 64),
            activityTypes: try types.map { item in
                guard let type = item.stringValue, type.utf8.count <= ActivityPayload.maximumActivityTypeLength else {
                    throw fields.missing("types", "activity types as strings")
                }
                return type
            },
            problem: try fields.string("problem", maximumLength: 4_096),
            kind: try fields.optionalString("kind", maximumLength: 32) ?? ""
        )
    }
}

/// What a running agent does, as it says when asked (`baton doctor`; issue 24 part 7): how it finds other devices
/// and where it reads apps from, so the command line reports the agent's own settings rather than guessing them.
public struct AgentStatus: Sendable, Hashable {
    /// Whether it sends and hears adverts by multicast on the LAN now; when not, it advertises by unicast to the known
    /// peers and each `--peer` only.
    public var multicast: Bool
    /// Whether multicast was turned off (`baton agent --no-multicast`), rather than unavailable here.
    public var multicastDisabled: Bool
    /// The folders it reads app bundles from, in order (its `--apps`, else BATON_APPS_PATH and the XDG data
    /// folders); empty when its apps are fixed (an embedded agent).
    public var appFolders: [String]
    /// How its continuation streams go (issue 30), a ``StreamPath``'s raw value: `direct` where both ends can, or
    /// `relayed` all (`baton agent --relay-streams`); kept as said, so a path a newer agent names reads as itself.
    /// Nil from an agent older than direct streams, which relays them all.
    public var streamPath: String?

    /// A status.
    public init(multicast: Bool, multicastDisabled: Bool, appFolders: [String], streamPath: String? = nil) {
        self.multicast = multicast
        self.multicastDisabled = multicastDisabled
        self.appFolders = appFolders
        self.streamPath = streamPath
    }

    /// At most this many folders cross the socket.
    public static let maximumAppFolders = 256
}

/// How a continuation ended, for the command line (`baton continue`).
public struct ContinuationOutcome: Sendable, Hashable {
    /// The app chosen, or "" when none was.
    public var app: String
    /// Why it was chosen (the router's reason, citing the requirement).
    public var reason: String
    /// The failure, or nil when the app received the activity.
    public var failure: Failure?
    /// What happened, for a person.
    public var message: String
    /// From the request to the delivery (or failure), in microseconds.
    public var microseconds: UInt64

    /// An outcome.
    public init(app: String, reason: String, failure: Failure?, message: String, microseconds: UInt64) {
        self.app = app
        self.reason = reason
        self.failure = failure
        self.message = message
        self.microseconds = microseconds
    }
}


extension ContinuationOutcome {
    /// Why a continuation failed, as `baton continue` is told (issue 26 item 4: not a bare string): the broker's
    /// ``ContinuationFailure``, or that nothing nearby or saved matched. A struct of named codes, so that a code a newer
    /// agent adds still arrives, with its message.
    public struct Failure: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// The broker's failure (C5, C8).
        public init(_ failure: ContinuationFailure) {
            rawValue = failure.rawValue
        }

        public var description: String { rawValue }

        /// No device nearby, or no saved activity, matched what was asked for.
        public static let notFound = Failure(rawValue: "notFound")
        /// The search index could not be read (G2).
        public static let searchFailed = Failure(rawValue: "searchFailed")

        /// The broker's failure this is, when it is one.
        public var continuationFailure: ContinuationFailure? { ContinuationFailure(rawValue: rawValue) }
    }
}

/// One message between an app (or the command line) and its device's agent over the agent's Unix socket
/// (docs/PROTOCOL.md §7). Framed like session messages: 4-byte length, binary property list.
public enum IPCMessage: Sendable, Hashable {
    // App or command line → agent.

    /// The first message: which app this is (checked against the process's executable), or a control client.
    /// `readsNotCurrent`: the client reads ``notCurrent(activity:)`` (a library from before issue 27 item 3 closes
    /// its connection at a message type it does not know, so the agent sends it only to those that say so).
    case hello(bundleIdentifier: String?, version: Int, readsNotCurrent: Bool = false)
    /// The app's activity `activity` (an id the app chooses) becomes the device's current one (A9, C2). With
    /// `isUpdate`, it is only what the app shows of it that changed (a new title), not something the person did: the
    /// agent applies it if the activity is current, and otherwise does not make it current again (issue 27 item 3).
    case becomeCurrent(activity: UInt64, ActivityNotice, isUpdate: Bool = false)
    /// The activity stops being current (A9).
    case resignCurrent(activity: UInt64)
    /// The activity ends for good (A9).
    case invalidate(activity: UInt64)
    /// The fresh state the agent asked for with `save`: an encoded ``ActivityPayload``.
    case saved(request: UInt64, payload: Data)
    /// The app could not give its state.
    case saveFailed(request: UInt64, message: String)
    /// Control: the nearby activities.
    case listNearby(request: UInt64)
    /// Control: continue the activity of `device` (an id, a prefix of one, or a name), or the newest when nil.
    case continueNearby(request: UInt64, device: String?)
    /// Control: send `nearbyChanged` whenever the list changes.
    case watchNearby
    /// The command line asks which apps the agent sees now.
    case listApps(request: UInt64)
    /// The command line asks what the agent does (multicast or not, its app folders): `baton doctor`.
    case getStatus(request: UInt64)
    /// The app's activity `activity` is eligible for search and this is its state now: an encoded ``ActivityPayload``
    /// for the device's search index (G1), sent when it becomes current and whenever its state is saved. No answer.
    case index(activity: UInt64, payload: Data)
    /// Deletes what this app saved for search with these persistent identifiers, or everything it saved when nil
    /// (G3); answered with ``deletedSaved(request:count:failure:)``. At most ``maximumDeletedIdentifiers`` at once.
    case deleteSaved(request: UInt64, persistentIdentifiers: [String]?)
    /// Control: continue the search result `id` here, as a handoff is continued (G2, C5): `baton search --continue`.
    case continueSaved(request: UInt64, id: Int64)
    /// The first message of a continuation stream's own connection, from the continuing app: open a stream to the
    /// originating app of continuation `continuation`, delivered here to this app (F2, docs/PROTOCOL.md §8).
    /// `direct`: the app can take the stream's own TCP socket (``directStream(_:)``, issue 30); without it, or from
    /// an agent that cannot give one, the answer is `welcome` and the stream is relayed.
    case openStream(bundleIdentifier: String, version: Int, continuation: UInt64, direct: Bool = false)
    /// The first message of a continuation stream's own connection, from the originating app: take the stream the
    /// agent announced with ``incomingStream(activity:token:)`` (F3). `direct` as for ``openStream``.
    case acceptStream(bundleIdentifier: String, version: Int, token: Data, direct: Bool = false)
    /// The originating app will not take the stream announced with `token` (its activity has no delegate for it).
    case declineStream(token: Data, message: String)
    /// On a stream's connection, either way: no more data from this side (a half-close).
    case endOfStream
    /// On a stream's connection, from the agent: the stream is over, abnormally, and why (a ``FetchFailure`` raw
    /// value: `appGone`, `peerGone`, ...); the agent closes the connection after it.
    case resetStream(reason: String, message: String)

    // Agent → app or command line.

    /// The hello was accepted.
    case welcome(device: String, deviceName: String)
    /// The hello (or a later message) was refused; the agent closes the connection after it.
    case refused(code: IPCRefusal, message: String)
    /// The agent needs the state of `activity` now (A7, B2, B3), within `deadline` milliseconds.
    case save(request: UInt64, activity: UInt64, deadlineMilliseconds: UInt64)
    /// The activity was continued on another device (A8).
    case continued(activity: UInt64)
    /// The activity is no longer the device's current one: another app's activity took over (A9; issue 27 item 3).
    /// An update of it (a new title) does not make it current again; the app's own `becomeCurrent` does.
    case notCurrent(activity: UInt64)
    /// A continuation for this app starts: the state is on its way (C5).
    case willContinue(continuation: UInt64, activityType: String)
    /// The state arrived: an encoded ``ActivityPayload`` (C5, C7).
    case deliver(continuation: UInt64, payload: Data)
    /// The continuation failed (C5, C6, C8), and why: on the wire the reason's raw value.
    case failed(continuation: UInt64, activityType: String, reason: ContinuationFailure, message: String)
    /// Control: the nearby activities.
    case nearby(request: UInt64, [NearbyItem])
    /// Control: how a continuation ended.
    case continueResult(request: UInt64, ContinuationOutcome)
    /// Control: the nearby list changed (after `watchNearby`).
    case nearbyChanged([NearbyItem])
    /// The answer to `listApps`.
    case apps(request: UInt64, [AppListing])
    /// The answer to `getStatus`.
    case status(request: UInt64, AgentStatus)
    /// The answer to `deleteSaved`: how many entries went, or why none could (the search index's error, typed).
    case deletedSaved(request: UInt64, count: UInt64, failure: SearchIndexFailure?)
    /// Another device's app asks for a continuation stream to `activity` (F3): connect again and say
    /// ``acceptStream(bundleIdentifier:version:token:)`` with `token` (16 bytes), or ``declineStream(token:message:)``.
    case incomingStream(activity: UInt64, token: Data)

    /// The answer to a stream's hello that said `direct`, on the direct path (issue 30): the stream's TCP socket is
    /// passed with it (`SCM_RIGHTS`), and this is what the app's TLS needs: its end's own key and certificate, made
    /// for this stream, and the other end's certificate fingerprint. Never a device key.
    case directStream(DirectStreamEnd)

    /// The length of a stream token.
    public static let streamTokenLength = 16

    /// At most this many persistent identifiers in one ``deleteSaved(request:persistentIdentifiers:)``; the library
    /// sends a longer list in parts.
    public static let maximumDeletedIdentifiers = 1_000
    /// A persistent identifier is at most this many bytes of UTF-8.
    public static let maximumPersistentIdentifierLength = 1_024

    /// The IPC protocol version this build speaks.
    public static let version = 1

    /// The message as a property list.
    public var propertyList: PropertyList {
        switch self {
        case .hello(let bundle, let version, let readsNotCurrent):
            return makeMessage(
                "hello",
                ["bundle": bundle.map(PropertyList.string), "v": .integer(Int64(version)), "notCurrent": readsNotCurrent ? .bool(true) : nil]
            )
        case .openStream(let bundle, let version, let continuation, let direct):
            return makeMessage(
                "hello",
                ["bundle": .string(bundle), "v": .integer(Int64(version)), "cont": .number(continuation), "direct": direct ? .bool(true) : nil]
            )
        case .acceptStream(let bundle, let version, let token, let direct):
            return makeMessage(
                "hello",
                ["bundle": .string(bundle), "v": .integer(Int64(version)), "token": .data(token), "direct": direct ? .bool(true) : nil]
            )
        case .directStream(let end):
            return makeMessage(
                "direct",
                ["role": .string(end.role.rawValue), "key": .data(end.key), "cert": .data(end.certificate), "peer": .data(end.peerFingerprint)]
            )
        case .declineStream(let token, let message):
            return makeMessage("decline", ["token": .data(token), "message": .string(bounded(message, 4_096))])
        case .endOfStream:
            return makeMessage("eof", [:])
        case .resetStream(let reason, let message):
            return makeMessage("reset", ["reason": .string(reason), "message": .string(bounded(message, 4_096))])
        case .incomingStream(let activity, let token):
            return makeMessage("stream", ["activity": .number(activity), "token": .data(token)])
        case .becomeCurrent(let activity, let notice, let isUpdate):
            return makeMessage(
                "current",
                [
                    "activity": .number(activity), "type": .string(notice.activityType), "title": notice.title.map { .string(bounded($0, 1_024)) },
                    "host": notice.webpageHost.map(PropertyList.string), "streams": .bool(notice.supportsStreams),
                    "handoff": .bool(notice.isEligibleForHandoff), "expires": notice.expirationDate.map(PropertyList.date),
                    "update": isUpdate ? .bool(true) : nil,
                    "desktop": ActivityNotice.hint(notice.desktopEntry), "mime": ActivityNotice.hint(notice.mimeType),
                ]
            )
        case .resignCurrent(let activity): return makeMessage("resign", ["activity": .number(activity)])
        case .invalidate(let activity): return makeMessage("invalidate", ["activity": .number(activity)])
        case .saved(let request, let payload): return makeMessage("saved", ["req": .number(request), "payload": .data(payload)])
        case .saveFailed(let request, let message):
            return makeMessage("saveFailed", ["req": .number(request), "message": .string(bounded(message, 4_096))])
        case .listNearby(let request): return makeMessage("list", ["req": .number(request)])
        case .continueNearby(let request, let device):
            return makeMessage("continue", ["req": .number(request), "device": device.map(PropertyList.string)])
        case .watchNearby: return makeMessage("watch", [:])
        case .welcome(let device, let name): return makeMessage("welcome", ["device": .string(device), "name": .string(name)])
        case .refused(let code, let message):
            return makeMessage("refused", ["code": .string(bounded(code.rawValue, 64)), "message": .string(bounded(message, 4_096))])
        case .save(let request, let activity, let deadline):
            return makeMessage("save", ["req": .number(request), "activity": .number(activity), "deadline": .number(deadline)])
        case .continued(let activity): return makeMessage("continued", ["activity": .number(activity)])
        case .notCurrent(let activity): return makeMessage("notCurrent", ["activity": .number(activity)])
        case .willContinue(let continuation, let type): return makeMessage("will", ["cont": .number(continuation), "type": .string(type)])
        case .deliver(let continuation, let payload): return makeMessage("deliver", ["cont": .number(continuation), "payload": .data(payload)])
        case .failed(let continuation, let type, let reason, let message):
            return makeMessage(
                "failed",
                ["cont": .number(continuation), "type": .string(type), "reason": .string(reason.rawValue), "message": .string(bounded(message, 4_096))]
            )
        case .nearby(let request, let items): return makeMessage("nearby", ["req": .number(request), "items": .array(items.map(\.propertyList))])
        case .continueResult(let request, let outcome):
            return makeMessage(
                "result",
                [
                    "req": .number(request), "app": .string(outcome.app), "reason": .string(bounded(outcome.reason, 4_096)),
                    "failure": outcome.failure.map { .string(bounded($0.rawValue, 64)) }, "message": .string(bounded(outcome.message, 4_096)), "us": .number(outcome.microseconds),
                ]
            )
        case .nearbyChanged(let items): return makeMessage("changed", ["items": .array(items.map(\.propertyList))])
        case .listApps(let request): return makeMessage("apps?", ["req": .number(request)])
        case .apps(let request, let apps): return makeMessage("apps", ["req": .number(request), "apps": .array(apps.map(\.propertyList))])
        case .getStatus(let request): return makeMessage("status?", ["req": .number(request)])
        case .status(let request, let status):
            var fields: [String: PropertyList] = [
                "req": .number(request), "multicast": .bool(status.multicast), "noMulticast": .bool(status.multicastDisabled),
                "folders": .array(status.appFolders.prefix(AgentStatus.maximumAppFolders).map { .string(bounded($0, 4_096)) }),
            ]
            if let path = status.streamPath { fields["path"] = .string(bounded(path, 16)) }
            return makeMessage("status", fields)
        case .index(let activity, let payload): return makeMessage("index", ["activity": .number(activity), "payload": .data(payload)])
        case .deleteSaved(let request, let identifiers):
            return makeMessage("delete", ["req": .number(request), "ids": identifiers.map { .array($0.map(PropertyList.string)) }])
        case .continueSaved(let request, let id): return makeMessage("continueSaved", ["req": .number(request), "id": .integer(max(0, id))])
        case .deletedSaved(let request, let count, let failure):
            return makeMessage(
                "deleted",
                [
                    "req": .number(request), "count": .number(count),
                    "failure": failure.map { .string(bounded($0.code.rawValue, SearchIndexFailure.maximumCodeLength)) },
                    "message": failure.flatMap { $0.message.isEmpty ? nil : .string(bounded($0.message, SearchIndexFailure.maximumMessageLength)) },
                ]
            )
        }
    }

    /// Reads a message.
    /// - Throws: ``BatonProtocolError`` `malformedMessage` naming the type or field that is wrong.
    public init(_ plist: PropertyList) throws {
        let fields = try MessageFields(plist)
        let typeLimit = ActivityPayload.maximumActivityTypeLength
        func items() throws -> [NearbyItem] {
            let array = try fields.array("items")
            guard array.count <= 1_024 else { throw fields.missing("items", "at most 1,024 items") }
            return try array.map(NearbyItem.init)
        }
        switch fields.type {
        case "hello":
            guard let version = Int(exactly: try fields.number("v")) else { throw fields.missing("v", "a version number") }
            let bundle = try fields.optionalString("bundle", maximumLength: 255)
            if let continuation = try fields.optionalNumber("cont") {
                guard let bundle else { throw fields.missing("bundle", "the app's bundle identifier (a stream belongs to an app)") }
                self = .openStream(bundleIdentifier: bundle, version: version, continuation: continuation, direct: try fields.optionalBool("direct") ?? false)
            } else if fields.fields["token"] != nil {
                guard let bundle else { throw fields.missing("bundle", "the app's bundle identifier (a stream belongs to an app)") }
                self = .acceptStream(
                    bundleIdentifier: bundle,
                    version: version,
                    token: try fields.data("token", count: Self.streamTokenLength),
                    direct: try fields.optionalBool("direct") ?? false
                )
            } else {
                self = .hello(bundleIdentifier: bundle, version: version, readsNotCurrent: try fields.optionalBool("notCurrent") ?? false)
            }
        case "direct":
            guard let role = DirectStreamEnd.Role(rawValue: try fields.string("role", maximumLength: 16)) else {
                throw fields.missing("role", "\"client\" or \"server\"")
            }
            let key = try fields.data("key")
            let certificate = try fields.data("cert")
            guard key.count <= DirectStreamEnd.maximumKeyLength else { throw fields.missing("key", "at most \(DirectStreamEnd.maximumKeyLength) bytes") }
            guard certificate.count <= DirectStreamEnd.maximumCertificateLength else {
                throw fields.missing("cert", "at most \(DirectStreamEnd.maximumCertificateLength) bytes")
            }
            self = .directStream(
                DirectStreamEnd(
                    role: role,
                    key: key,
                    certificate: certificate,
                    peerFingerprint: try fields.data("peer", count: DirectStreamOffer.fingerprintLength)
                )
            )
        case "decline":
            self = .declineStream(token: try fields.data("token", count: Self.streamTokenLength), message: try fields.string("message"))
        case "eof": self = .endOfStream
        case "reset": self = .resetStream(reason: try fields.string("reason", maximumLength: 64), message: try fields.string("message"))
        case "stream":
            self = .incomingStream(activity: try fields.number("activity"), token: try fields.data("token", count: Self.streamTokenLength))
        case "current":
            let notice = ActivityNotice(
                activityType: try fields.string("type", maximumLength: typeLimit),
                title: try fields.optionalString("title", maximumLength: 1_024),
                webpageHost: try fields.optionalString("host", maximumLength: 255),
                supportsStreams: fields.flag("streams"),
                isEligibleForHandoff: try fields.bool("handoff"),
                expirationDate: try fields.date("expires"),
                desktopEntry: try fields.optionalString("desktop", maximumLength: ActivityNotice.maximumApplicationHintLength),
                mimeType: try fields.optionalString("mime", maximumLength: ActivityNotice.maximumApplicationHintLength)
            )
            self = .becomeCurrent(activity: try fields.number("activity"), notice, isUpdate: try fields.optionalBool("update") ?? false)
        case "resign": self = .resignCurrent(activity: try fields.number("activity"))
        case "invalidate": self = .invalidate(activity: try fields.number("activity"))
        case "saved": self = .saved(request: try fields.number("req"), payload: try fields.data("payload"))
        case "saveFailed": self = .saveFailed(request: try fields.number("req"), message: try fields.string("message"))
        case "list": self = .listNearby(request: try fields.number("req"))
        case "continue": self = .continueNearby(request: try fields.number("req"), device: try fields.optionalString("device", maximumLength: 1_024))
        case "watch": self = .watchNearby
        case "welcome": self = .welcome(device: try fields.string("device", maximumLength: 128), deviceName: try fields.string("name"))
        case "refused": self = .refused(code: IPCRefusal(rawValue: try fields.string("code", maximumLength: 64)), message: try fields.string("message"))
        case "save":
            self = .save(request: try fields.number("req"), activity: try fields.number("activity"), deadlineMilliseconds: try fields.number("deadline"))
        case "continued": self = .continued(activity: try fields.number("activity"))
        case "notCurrent": self = .notCurrent(activity: try fields.number("activity"))
        case "will": self = .willContinue(continuation: try fields.number("cont"), activityType: try fields.string("type", maximumLength: typeLimit))
        case "deliver": self = .deliver(continuation: try fields.number("cont"), payload: try fields.data("payload"))
        case "failed":
            self = .failed(
                continuation: try fields.number("cont"),
                activityType: try fields.string("type", maximumLength: typeLimit),
                // A reason this version does not know reads as something unreadable, as in a session's `fail` (§6).
                reason: ContinuationFailure(rawValue: try fields.string("reason", maximumLength: 64)) ?? .fetch(.protocolViolation),
                message: try fields.string("message")
            )
        case "nearby": self = .nearby(request: try fields.number("req"), try items())
        case "result":
            let outcome = ContinuationOutcome(
                app: try fields.string("app", maximumLength: 255),
                reason: try fields.string("reason"),
                failure: try fields.optionalString("failure", maximumLength: 64).map(ContinuationOutcome.Failure.init(rawValue:)),
                message: try fields.string("message"),
                microseconds: try fields.number("us")
            )
            self = .continueResult(request: try fields.number("req"), outcome)
        case "changed": self = .nearbyChanged(try items())
        case "apps?": self = .listApps(request: try fields.number("req"))
        case "apps":
            let apps = try fields.array("apps")
            guard apps.count <= 4_096 else { throw fields.missing("apps", "at most 4,096 apps") }
            self = .apps(request: try fields.number("req"), try apps.map(AppListing.init))
        case "status?": self = .getStatus(request: try fields.number("req"))
        case "status":
            let folders = try fields.array("folders")
            guard folders.count <= AgentStatus.maximumAppFolders else { throw fields.missing("folders", "at most 256 folders") }
            self = .status(
                request: try fields.number("req"),
                AgentStatus(
                    multicast: try fields.bool("multicast"),
                    multicastDisabled: try fields.bool("noMulticast"),
                    appFolders: try folders.map { item in
                        guard let folder = item.stringValue, folder.utf8.count <= 4_096 else { throw fields.missing("folders", "folders as strings") }
                        return folder
                    },
                    // Absent from an agent older than issue 30.
                    streamPath: fields.fields["path"] == nil ? nil : try fields.string("path", maximumLength: 16)
                )
            )
        case "index": self = .index(activity: try fields.number("activity"), payload: try fields.data("payload"))
        case "delete":
            var identifiers: [String]?
            if fields.fields["ids"] != nil {
                let array = try fields.array("ids")
                guard array.count <= Self.maximumDeletedIdentifiers else {
                    throw fields.missing("ids", "at most \(Self.maximumDeletedIdentifiers) identifiers at once")
                }
                identifiers = try array.map { item in
                    guard let id = item.stringValue, id.utf8.count <= Self.maximumPersistentIdentifierLength else {
                        throw fields.missing("ids", "persistent identifiers as strings of at most \(Self.maximumPersistentIdentifierLength) bytes")
                    }
                    return id
                }
            }
            self = .deleteSaved(request: try fields.number("req"), persistentIdentifiers: identifiers)
        case "continueSaved":
            guard let id = Int64(exactly: try fields.number("id")) else { throw fields.missing("id", "a search result's id") }
            self = .continueSaved(request: try fields.number("req"), id: id)
        case "deleted":
            // `failure` up to 4,096: an older agent sent `code: message` there (SearchIndexFailure reads both).
            let failure = try fields.optionalString("failure", maximumLength: SearchIndexFailure.maximumMessageLength)
            let message = try fields.optionalString("message", maximumLength: SearchIndexFailure.maximumMessageLength)
            self = .deletedSaved(
                request: try fields.number("req"), count: try fields.number("count"),
                failure: failure.map { SearchIndexFailure(failure: $0, message: message) }
            )
        default: throw fields.unexpected()
        }
    }
}
