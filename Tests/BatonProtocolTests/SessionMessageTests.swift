import BatonCore
import BatonProtocol
import Foundation
import Testing

/// One of every session and IPC message, optional fields both present and absent (docs/PROTOCOL.md §6, §7).
enum MessageSamples {
    static let roster = Data("roster bytes".utf8)
    static let activityType = "com.razeware.shopsnap.view"
    static let summary = ActivitySummary(
        activityType: activityType, title: "Groceries", bundleIdentifier: "com.razeware.shopsnap", team: "RAZE",
        webpageHost: "shopsnap.example"
    )
    /// Issue 27 item 3: a media or documents activity's application, for the asker to name what opens it.
    static let documentSummary = ActivitySummary(
        activityType: "org.baton.document.open", title: "report.odt — LibreOffice Writer", bundleIdentifier: "org.baton.documents",
        team: "BATONDOCS1", webpageHost: nil, desktopEntry: "libreoffice-writer", mimeType: "application/vnd.oasis.opendocument.text"
    )
    static let bareSummary = ActivitySummary(activityType: "a", title: nil, bundleIdentifier: "b", team: "T", webpageHost: nil)

    static let session: [SessionMessage] =
        [
            .sync(id: 1, roster: roster, agentPort: 47_810),
            .sync(id: nil, roster: roster, agentPort: nil),
            .synced(id: 1, roster: roster, agentPort: 47_811),
            .synced(id: 2, roster: Data(), agentPort: nil),
            .fetch(id: 3, sequence: 1_800_000_000_000, deadlineMilliseconds: 1_000),
            // Numbers above Int64.max travel as the 16-byte integer and come back unchanged.
            .fetch(id: .max, sequence: UInt64(Int64.max) + 1, deadlineMilliseconds: 0),
            .describe(id: 4, sequence: 9),
            .cancel(id: 3),
            .payload(id: 3, payload: Data([0x62, 0x70, 0x6C, 0x69])),
            .summary(id: 4, summary),
            .summary(id: 5, bareSummary),
            .summary(id: 6, documentSummary),
            .error(message: "this device is not a member of the account"),
            // Continuation streams (F1, F3; docs/PROTOCOL.md §8).
            .openStream(id: 3, sequence: 1_800_000_000_000, window: 524_288),
            .openStream(id: .max, sequence: UInt64(Int64.max) + 1, window: UInt64(StreamFlow.maximumWindow)),
            .streamOpened(id: 3, window: 524_288),
            .streamOpened(id: 4, window: 1),
            .credit(stream: 3, opener: false, bytes: 131_072),
            .credit(stream: .max, opener: true, bytes: 1),
            .endOfStream(stream: 3, opener: true),
            .endOfStream(stream: 3, opener: false),
            .resetStream(stream: 3, opener: false, reason: .appGone, message: "the app went away"),
            .ping(id: 8),
            .pong(id: 8),
        ] + FetchFailure.allCases.map { .failure(id: 6, reason: $0, message: "because \($0)") }
            + FetchFailure.allCases.map { .resetStream(stream: 1, opener: true, reason: $0, message: "because \($0)") }

    /// A continuation stream's token (16 bytes).
    static let token = Data((0..<16).map { UInt8($0 * 17) })

    static let item = NearbyItem(
        device: "QRTHARDT6XJNKSSCOEGR5PK5EWMB3L7T44A3XUSU77FIVALKKGSA", deviceName: "laptop", sequence: 7,
        ageMilliseconds: 850, app: "com.razeware.shopsnap", activityType: activityType, title: "Groceries", opensWith: "ShopSnap"
    )
    static let bareItem = NearbyItem(device: "X", deviceName: "desktop", sequence: 0, ageMilliseconds: 0, app: "", activityType: nil, title: nil)

    static let ipc: [IPCMessage] = [
        .hello(bundleIdentifier: "com.razeware.shopsnap", version: IPCMessage.version),
        .hello(bundleIdentifier: nil, version: IPCMessage.version),
        // Issue 27 item 3: a library that reads `notCurrent` says so.
        .hello(bundleIdentifier: "com.razeware.shopsnap", version: IPCMessage.version, readsNotCurrent: true),
        .becomeCurrent(
            activity: 1,
            ActivityNotice(
                activityType: activityType, title: "Groceries", webpageHost: "shopsnap.example", supportsStreams: true,
                isEligibleForHandoff: false, expirationDate: Date(timeIntervalSince1970: 1_900_000_000.5)
            )
        ),
        .becomeCurrent(activity: 2, ActivityNotice(activityType: "x")),
        // Issue 27 item 3: an update of what the app shows, never a takeover; the application a document was used in.
        .becomeCurrent(activity: 2, ActivityNotice(activityType: "x", title: "y"), isUpdate: true),
        .becomeCurrent(activity: 3, ActivityNotice(activityType: "org.baton.document.open", desktopEntry: "libreoffice-writer", mimeType: "text/plain")),
        .resignCurrent(activity: 1),
        .invalidate(activity: 1),
        .saved(request: 5, payload: Data([1, 2, 3])),
        .saveFailed(request: 5, message: "the activity no longer exists"),
        .listNearby(request: 6),
        .continueNearby(request: 7, device: "laptop"),
        .continueNearby(request: 8, device: nil),
        .watchNearby,
        .welcome(device: "QRTHARDT6XJNKSSCOEGR5PK5EWMB3L7T44A3XUSU77FIVALKKGSA", deviceName: "desktop"),
        .refused(code: .notPermitted, message: "process 42 runs /usr/bin/python3, not com.razeware.shopsnap's executable"),
        .save(request: 5, activity: 1, deadlineMilliseconds: 1_000),
        .continued(activity: 1),
        .notCurrent(activity: 1),
        .willContinue(continuation: 9, activityType: activityType),
        .deliver(continuation: 9, payload: Data([4, 5, 6])),
        .failed(continuation: 9, activityType: activityType, reason: .noApp, message: "no app continues it"),
        .nearby(request: 6, [item, bareItem]),
        .nearby(request: .max, []),
        .continueResult(
            request: 7,
            ContinuationOutcome(app: "com.razeware.shopsnap", reason: "D1: same team", failure: nil, message: "continued", microseconds: 12_345)
        ),
        .continueResult(request: 8, ContinuationOutcome(app: "", reason: "", failure: .notFound, message: "nothing nearby", microseconds: 3)),
        .nearbyChanged([item]),
        .listApps(request: 10),
        .apps(
            request: 10,
            [
                AppListing(bundle: "com.razeware.shopsnap", name: "ShopSnap", team: "RAZEWARE1", activityTypes: ["com.razeware.shopsnap.view"], problem: ""),
                AppListing(bundle: "", name: "Broken", team: nil, activityTypes: [], problem: "/apps/Broken.app: Info.plist is not a property list"),
                // Issue 28 item 2: an app registered by its desktop file says so.
                AppListing(bundle: "org.example.Recipes", name: "Recipes", team: "TEAMR", activityTypes: ["org.example.recipes.view"], problem: "", kind: "desktop-file"),
            ]
        ),
        // Continuation streams (F2, F3; docs/PROTOCOL.md §8): the hellos of a stream's own connection, then its messages.
        .openStream(bundleIdentifier: "com.razeware.shopsnap", version: IPCMessage.version, continuation: 9),
        .acceptStream(bundleIdentifier: "com.razeware.shopsnap", version: IPCMessage.version, token: token),
        .declineStream(token: token, message: "no delegate takes streams"),
        .endOfStream,
        .resetStream(reason: "peerGone", message: "the other device went away"),
        .incomingStream(activity: 1, token: token),
        // On-device search (G1-G3; docs/PROTOCOL.md §7).
        .index(activity: 1, payload: Data([7, 8, 9])),
        .deleteSaved(request: 11, persistentIdentifiers: ["note-1", "note-2"]),
        .deleteSaved(request: 12, persistentIdentifiers: nil),
        .deletedSaved(request: 11, count: 2, failure: nil),
        .deletedSaved(request: 12, count: 0, failure: SearchIndexFailure(.damaged, "the search index at /s/search.sqlite is damaged")),
        .continueSaved(request: 13, id: 42),
        // What the agent does, for `baton doctor`; issue 30: how its continuation streams go.
        .getStatus(request: 14),
        .status(request: 14, AgentStatus(multicast: true, multicastDisabled: false, appFolders: ["/apps"], streamPath: "direct")),
        .status(request: 15, AgentStatus(multicast: false, multicastDisabled: true, appFolders: [], streamPath: "relayed")),
        .status(request: 16, AgentStatus(multicast: false, multicastDisabled: false, appFolders: ["/a", "/b"])),
    ]

    /// The `index`th entry of the sample `apps` message, as its property list.
    static func appPropertyList(_ index: Int) -> PropertyList {
        let apps = ipc.compactMap { message -> PropertyList? in
            guard case .apps = message else { return nil }
            return message.propertyList["apps"]?.arrayValue?[index]
        }
        return apps.first ?? .null
    }

    /// `items[0]` of an IPC message, as its property list.
    static func itemPropertyList(_ item: NearbyItem) -> PropertyList {
        IPCMessage.nearbyChanged([item]).propertyList["items"]?.arrayValue?.first ?? .null
    }
}

/// One family of messages read by one decoder, with what the decoder must insist on: the table docs/PROTOCOL.md
/// §6 and §7 document.
struct MessageFamily: Sendable, CustomStringConvertible {
    let description: String
    let samples: [PropertyList]
    /// Per message type (`t`), the fields without which the message is malformed.
    let required: [String: Set<String>]
    /// Per message type, string fields whose limit is below the default 4,096 UTF-8 bytes.
    let limits: [String: [String: Int]]
    /// Reads a message and writes it back.
    let reread: @Sendable (PropertyList) throws -> PropertyList
    /// The shape of a message within its type, where one type has several whose required fields differ (a stream's
    /// `hello` names its app, a plain `hello` need not): the key of ``required``.
    var variant: @Sendable (PropertyList) -> String = { MessageTestSupport.type($0) }

    static let defaultLimit = 4_096
    static let typeLimit = ActivityPayload.maximumActivityTypeLength

    static let session = MessageFamily(
        description: "session",
        samples: MessageSamples.session.map(\.propertyList),
        required: [
            "sync": ["roster"], "synced": ["id", "roster"], "fetch": ["id", "seq", "deadline"], "describe": ["id", "seq"],
            "cancel": ["id"], "payload": ["id", "payload"], "summary": ["id", "type", "bundle", "team"],
            "fail": ["id", "reason", "message"], "error": ["message"], "stream": ["id", "seq", "window"], "opened": ["id", "window"],
            "credit": ["stream", "opener", "bytes"], "eof": ["stream", "opener"], "reset": ["stream", "opener", "reason", "message"],
            "ping": ["id"], "pong": ["id"],
        ],
        limits: [
            "summary": ["type": typeLimit, "title": 1_024, "bundle": 255, "team": 64, "host": 255, "desktop": 255, "mime": 255], "fail": ["reason": 64],
            "reset": ["reason": 64],
        ],
        reread: { try SessionMessage($0).propertyList }
    )

    static let ipc = MessageFamily(
        description: "IPC",
        samples: MessageSamples.ipc.map(\.propertyList),
        required: [
            "hello": ["v"], "current": ["activity", "type", "handoff"], "resign": ["activity"], "invalidate": ["activity"],
            "saved": ["req", "payload"], "saveFailed": ["req", "message"], "list": ["req"], "continue": ["req"], "watch": [],
            "welcome": ["device", "name"], "refused": ["code", "message"], "save": ["req", "activity", "deadline"],
            "continued": ["activity"], "notCurrent": ["activity"], "will": ["cont", "type"], "deliver": ["cont", "payload"],
            "failed": ["cont", "type", "reason", "message"], "nearby": ["req", "items"],
            "result": ["req", "app", "reason", "message", "us"], "changed": ["items"], "apps?": ["req"], "apps": ["req", "apps"],
            "status?": ["req"], "status": ["req", "multicast", "noMulticast", "folders"],
            // A stream's hello must name its app; without `cont` or `token` it is a plain hello.
            "hello cont": ["v", "bundle"], "hello token": ["v", "bundle"], "decline": ["token", "message"], "eof": [],
            "reset": ["reason", "message"], "stream": ["activity", "token"],
            "index": ["activity", "payload"], "delete": ["req"], "deleted": ["req", "count"], "continueSaved": ["req", "id"],
        ],
        limits: [
            "hello": ["bundle": 255], "current": ["type": typeLimit, "title": 1_024, "host": 255, "desktop": 255, "mime": 255], "continue": ["device": 1_024],
            "welcome": ["device": 128], "refused": ["code": 64], "will": ["type": typeLimit], "failed": ["type": typeLimit, "reason": 64],
            "result": ["app": 255, "failure": 64], "reset": ["reason": 64], "status": ["path": 16],
        ],
        reread: { try IPCMessage($0).propertyList },
        variant: { plist in
            let type = MessageTestSupport.type(plist)
            guard type == "hello" else { return type }
            if plist["cont"] != nil { return "hello cont" }
            if plist["token"] != nil { return "hello token" }
            return type
        }
    )

    /// The entries of `nearby` and `changed`, read through a `changed` message.
    static let item = MessageFamily(
        description: "nearby item",
        samples: [MessageSamples.itemPropertyList(MessageSamples.item), MessageSamples.itemPropertyList(MessageSamples.bareItem)],
        required: ["item": ["device", "name", "seq", "age", "app"]],
        limits: ["item": ["device": 128, "name": 1_024, "app": 255, "type": typeLimit, "title": 1_024, "opens": 1_024]],
        reread: { item in
            try IPCMessage(.dictionary(["t": "changed", "items": [item]])).propertyList["items"]?.arrayValue?.first ?? .null
        }
    )

    /// The entries of `apps` (`baton apps list --agent`, issue 11 part 7).
    static let app = MessageFamily(
        description: "app listing",
        samples: [MessageSamples.appPropertyList(0), MessageSamples.appPropertyList(1)],
        required: ["app": ["bundle", "name", "types", "problem"]],
        limits: ["app": ["bundle": 255, "name": 1_024, "team": 64, "kind": 32]],
        reread: { app in
            try IPCMessage(.dictionary(["t": "apps", "req": 1, "apps": [app]])).propertyList["apps"]?.arrayValue?.first ?? .null
        }
    )

    static let all = [session, ipc, item, app, account]
}

/// Property-list and byte helpers shared by the message tests.
enum MessageTestSupport {
    /// What the agent's `MessageHandler` allows per frame (messages are flat; BatonAgent is not a dependency here).
    static let frameLimits = PropertyListLimits(maximumDepth: 16)

    static func fields(_ plist: PropertyList) -> [String: PropertyList] { plist.dictionaryValue ?? [:] }

    static func type(_ plist: PropertyList) -> String { plist["t"]?.stringValue ?? "?" }

    static func setting(_ plist: PropertyList, _ key: String, to value: PropertyList?) -> PropertyList {
        var all = fields(plist)
        all[key] = value
        return .dictionary(all)
    }

    /// A value of another type than `value`, that no field accepts in its place.
    static func wrongType(for value: PropertyList) -> PropertyList {
        switch value {
        case .string: .integer(7)
        case .integer, .unsignedInteger: .string("7")
        case .bool: .integer(1)
        case .data, .date: .string("2030-01-01")
        case .array: .dictionary([:])
        default: .array([])
        }
    }

    /// A string of exactly `bytes` UTF-8 bytes but fewer characters, so a limit counted in characters would show.
    static func utf8String(bytes: Int) -> String {
        String(repeating: "é", count: bytes / 2) + (bytes % 2 == 1 ? "a" : "")
    }

    static func hex(_ data: Data) -> String {
        data.map { String(format: "%02x", $0) }.joined()
    }

    static func bytes(hex: String) -> Data {
        let digits = Array(hex.utf8)
        return Data(stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16) })
    }

    /// `plist` with one to three fields removed, set to one of `values`, or its type changed to one of `types`.
    static func mutateFields(
        of plist: PropertyList, keys: [String], types: [String], values: [PropertyList], _ random: inout SeededRandom
    ) -> PropertyList {
        var plist = plist
        for _ in 0...(random.next() % 3) {
            let key = keys[Int(random.next() % UInt64(keys.count))]
            switch random.next() % 4 {
            case 0: plist = setting(plist, key, to: nil)
            case 1: plist = setting(plist, "t", to: .string(types[Int(random.next() % UInt64(types.count))]))
            default: plist = setting(plist, key, to: values[Int(random.next() % UInt64(values.count))])
            }
        }
        return plist
    }

    /// A frame as both agents and the IPC socket write it: 4-byte big-endian length, then the binary property list.
    static func frame(_ plist: PropertyList) throws -> Data {
        let body = try BinaryPropertyListEncoder.encode(plist)
        return Data(withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init)) + body
    }
}

@Suite("Session and IPC messages: round trips, garbage, fuzzing (docs/PROTOCOL.md §6, §7)")
struct SessionMessageTests {
    typealias Support = MessageTestSupport

    @Test("every session message round-trips through its property list and through bplist00 bytes")
    func sessionRoundTrips() throws {
        for message in MessageSamples.session {
            #expect(try SessionMessage(message.propertyList) == message)
            let bytes = try BinaryPropertyListEncoder.encode(message.propertyList)
            #expect(bytes.starts(with: Array("bplist00".utf8)))
            #expect(try SessionMessage(BinaryPropertyListDecoder.decode(bytes, limits: Support.frameLimits)) == message, "\(message)")
            #expect(try BinaryPropertyListEncoder.encode(message.propertyList) == bytes, "deterministic bytes")
        }
        let types = Set(MessageSamples.session.map { Support.type($0.propertyList) })
        #expect(
            types == ["sync", "synced", "fetch", "describe", "cancel", "payload", "summary", "fail", "error", "stream", "opened", "credit", "eof", "reset", "ping", "pong"]
        )
        #expect(SessionMessage.fetch(id: 3, sequence: 1, deadlineMilliseconds: 1).id == 3)
        #expect(SessionMessage.sync(id: nil, roster: Data(), agentPort: nil).id == nil)
        #expect(SessionMessage.error(message: "no").id == nil)
        // A stream's request and its answer carry the request id (the stream's id); its control messages name the
        // stream instead, with `opener` telling the two sides' numberings apart.
        #expect(SessionMessage.openStream(id: 3, sequence: 1, window: 1).id == 3)
        #expect(SessionMessage.streamOpened(id: 3, window: 1).id == 3)
        #expect(SessionMessage.ping(id: 4).id == 4 && SessionMessage.pong(id: 4).id == 4)
        #expect(SessionMessage.credit(stream: 3, opener: true, bytes: 1).id == nil)
        #expect(SessionMessage.endOfStream(stream: 3, opener: true).id == nil)
        #expect(SessionMessage.resetStream(stream: 3, opener: true, reason: .cancelled, message: "").id == nil)
    }

    @Test("every IPC message round-trips through its property list and through bplist00 bytes")
    func ipcRoundTrips() throws {
        for message in MessageSamples.ipc {
            #expect(try IPCMessage(message.propertyList) == message)
            let bytes = try BinaryPropertyListEncoder.encode(message.propertyList)
            #expect(try IPCMessage(BinaryPropertyListDecoder.decode(bytes, limits: Support.frameLimits)) == message, "\(message)")
            #expect(try BinaryPropertyListEncoder.encode(message.propertyList) == bytes, "deterministic bytes")
        }
        let types = Set(MessageSamples.ipc.map { Support.type($0.propertyList) })
        #expect(
            types == [
                "hello", "current", "resign", "invalidate", "saved", "saveFailed", "list", "continue", "watch", "welcome", "refused",
                "save", "continued", "notCurrent", "will", "deliver", "failed", "nearby", "result", "changed", "apps?", "apps", "decline", "eof",
                "reset", "stream", "index", "delete", "deleted", "continueSaved", "status?", "status",
            ]
        )
    }

    @Test("C8: every failure reason travels by its raw value; one this build does not know reads as protocolViolation")
    func failureReasons() throws {
        for reason in FetchFailure.allCases {
            let plist = SessionMessage.failure(id: 1, reason: reason, message: "m").propertyList
            #expect(plist["reason"] == .string(reason.rawValue))
            #expect(try SessionMessage(plist) == .failure(id: 1, reason: reason, message: "m"))
        }
        let newer: PropertyList = ["t": "fail", "id": 1, "reason": "quotaExceeded", "message": "m"]
        #expect(try SessionMessage(newer) == .failure(id: 1, reason: .protocolViolation, message: "m"))
        // F1: the reasons a stream request fails for (docs/PROTOCOL.md §8).
        #expect(Set(FetchFailure.allCases.map(\.rawValue)).isSuperset(of: ["noStreams", "notContinued", "tooManyStreams"]))
    }

    @Test("G3, issue 26 item 4: a deletion's failure travels as a code and a message; an older agent's `code: message` and a newer agent's code still read")
    func deletionFailures() throws {
        let failure = SearchIndexFailure(.unwritable, "the disk is full")
        let plist = IPCMessage.deletedSaved(request: 3, count: 0, failure: failure).propertyList
        #expect(plist["failure"] == .string("unwritable") && plist["message"] == .string("the disk is full"))
        #expect(try IPCMessage(plist) == .deletedSaved(request: 3, count: 0, failure: failure))
        #expect(failure.description == "unwritable: the disk is full", "what the app shows, as the index's own error reads")
        let older: PropertyList = ["t": "deleted", "req": 4, "count": 0, "failure": "damaged: the search index at /s/search.sqlite is damaged"]
        #expect(try IPCMessage(older) == .deletedSaved(request: 4, count: 0, failure: SearchIndexFailure(.damaged, "the search index at /s/search.sqlite is damaged")))
        let bare: PropertyList = ["t": "deleted", "req": 5, "count": 0, "failure": "damaged"]
        #expect(try IPCMessage(bare) == .deletedSaved(request: 5, count: 0, failure: SearchIndexFailure(.damaged, "")))
        #expect(SearchIndexFailure(.damaged, "").description == "damaged")
        let newer: PropertyList = ["t": "deleted", "req": 6, "count": 0, "failure": "quotaExceeded", "message": "m"]
        #expect(try IPCMessage(newer) == .deletedSaved(request: 6, count: 0, failure: SearchIndexFailure(.init(rawValue: "quotaExceeded"), "m")))
    }

    @Test("issue 30: the agent's status says its stream path; an older agent's says none, a newer agent's path reads as itself")
    func statusStreamPath() throws {
        let plist = IPCMessage.status(request: 1, AgentStatus(multicast: true, multicastDisabled: false, appFolders: [], streamPath: "relayed")).propertyList
        #expect(plist["path"] == .string("relayed"))
        let older: PropertyList = ["t": "status", "req": 2, "multicast": true, "noMulticast": false, "folders": []]
        #expect(try IPCMessage(older) == .status(request: 2, AgentStatus(multicast: true, multicastDisabled: false, appFolders: [])))
        let newer: PropertyList = ["t": "status", "req": 3, "multicast": true, "noMulticast": false, "folders": [], "path": "kernel"]
        #expect(try IPCMessage(newer) == .status(request: 3, AgentStatus(multicast: true, multicastDisabled: false, appFolders: [], streamPath: "kernel")))
    }

    @Test("F3: a reset's reason travels by its raw value; one this build does not know reads as protocolViolation; long text is cut")
    func resetReasons() throws {
        let newer: PropertyList = ["t": "reset", "stream": 1, "opener": true, "reason": "quotaExceeded", "message": "m"]
        #expect(try SessionMessage(newer) == .resetStream(stream: 1, opener: true, reason: .protocolViolation, message: "m"))
        let long = SessionMessage.resetStream(stream: 2, opener: false, reason: .appGone, message: String(repeating: "x", count: 5_000))
        guard case .resetStream(2, false, .appGone, let text) = try SessionMessage(long.propertyList) else {
            Issue.record("a reset with a long message does not read back")
            return
        }
        #expect(text.utf8.count <= 4_096 && text.hasSuffix("…"))
        // The app socket's reset and decline cut their text the same way.
        for message in [IPCMessage.resetStream(reason: "peerGone", message: text + text), .declineStream(token: MessageSamples.token, message: text + text)] {
            #expect(try IPCMessage(message.propertyList).propertyList["message"]?.stringValue?.utf8.count ?? .max <= 4_096)
        }
    }

    @Test("F3: windows and credits are 1 to StreamFlow.maximumWindow bytes; 0 or more than that is malformedMessage naming the field")
    func windowLimits() throws {
        let messages: [(PropertyList, String)] = [
            (SessionMessage.openStream(id: 1, sequence: 2, window: 1).propertyList, "window"),
            (SessionMessage.streamOpened(id: 1, window: 1).propertyList, "window"),
            (SessionMessage.credit(stream: 1, opener: true, bytes: 1).propertyList, "bytes"),
        ]
        let largest = Int64(StreamFlow.maximumWindow)
        for (message, key) in messages {
            for good: PropertyList in [1, .integer(largest)] {
                #expect(try SessionMessage(Support.setting(message, key, to: good)).propertyList[key] == good)
            }
            for bad: PropertyList in [0, .integer(largest + 1), .integer(.max), .unsignedInteger(.max), -1] {
                let error = #expect(throws: BatonProtocolError.self, "\(Support.type(message)).\(key) = \(bad)") {
                    try SessionMessage(Support.setting(message, key, to: bad))
                }
                #expect(error?.code == .malformedMessage)
                #expect(error?.message.contains("\"\(key)\"") == true, "\(error?.message ?? "")")
            }
        }
    }

    @Test("F2, F3: a stream's hello names its app and carries `cont` or a 16-byte `token`; the tokens of decline and stream are 16 bytes")
    func streamHellos() throws {
        let token = PropertyList.data(MessageSamples.token)
        #expect(
            try IPCMessage(["t": "hello", "bundle": "com.x", "v": 1, "cont": 9]) == .openStream(bundleIdentifier: "com.x", version: 1, continuation: 9)
        )
        #expect(
            try IPCMessage(["t": "hello", "bundle": "com.x", "v": 1, "token": token])
                == .acceptStream(bundleIdentifier: "com.x", version: 1, token: MessageSamples.token)
        )
        #expect(try IPCMessage(["t": "hello", "bundle": "com.x", "v": 1]) == .hello(bundleIdentifier: "com.x", version: 1))
        for count in [0, 1, 15, 17, 32] {
            let wrong = PropertyList.data(Data(repeating: 0xA5, count: count))
            let messages: [PropertyList] = [
                ["t": "hello", "bundle": "com.x", "v": 1, "token": wrong], ["t": "decline", "token": wrong, "message": "no"],
                ["t": "stream", "activity": 1, "token": wrong],
            ]
            for plist in messages {
                let error = #expect(throws: BatonProtocolError.self, "a token of \(count) bytes: \(plist)") { try IPCMessage(plist) }
                #expect(error?.code == .malformedMessage)
                #expect(error?.message.contains("\"token\"") == true && error?.message.contains("16 bytes") == true, "\(error?.message ?? "")")
            }
        }
        // Sixteen characters are not sixteen bytes of data.
        let text = #expect(throws: BatonProtocolError.self) { try IPCMessage(["t": "hello", "bundle": "com.x", "v": 1, "token": "0123456789abcdef"]) }
        #expect(text?.code == .malformedMessage)
        // A stream belongs to an app: a control client's hello (no bundle) cannot open or take one.
        for plist: PropertyList in [["t": "hello", "v": 1, "cont": 9], ["t": "hello", "v": 1, "token": token]] {
            let error = #expect(throws: BatonProtocolError.self, "\(plist)") { try IPCMessage(plist) }
            #expect(error?.code == .malformedMessage)
            #expect(error?.message.contains("\"bundle\"") == true, "\(error?.message ?? "")")
        }
    }

    @Test("garbage that is not a message is malformedMessage for both decoders: no dictionary, no type, a bad type")
    func notMessages() throws {
        let garbage: [PropertyList] = [
            "fetch", 1, .null, .data(Data("bplist00".utf8)), ["t", "fetch"], .set(["t"]), [:], ["id": 1], ["t": 1], ["t": .data(Data("fetch".utf8))],
            ["t": ""], ["t": .string(String(repeating: "x", count: 65))], ["t": .string(String(repeating: "x", count: 100_000))],
            ["t": "stream", "id": "1"], ["t": "stream", "id": -1], ["t": "credit", "stream": 1, "opener": 1, "bytes": 5],
            ["t": "opened", "id": 1, "window": 0], ["t": "reset", "message": "m"], ["t": "ping"], ["t": "pong", "id": .real(1)],
        ]
        for plist in garbage {
            let session = #expect(throws: BatonProtocolError.self, "\(plist)") { try SessionMessage(plist) }
            #expect(session?.code == .malformedMessage)
            let ipc = #expect(throws: BatonProtocolError.self, "\(plist)") { try IPCMessage(plist) }
            #expect(ipc?.code == .malformedMessage)
        }
        // The app socket knows exactly its own messages (both ends ship together); the session decoder reads
        // another well-formed type as a newer peer's message, which the multiplexer answers without closing.
        for plist: PropertyList in [["t": "nope"], ["t": "FETCH", "id": 1, "seq": 1, "deadline": 1], SessionMessage.cancel(id: 1).propertyList] {
            #expect(throws: BatonProtocolError.self, "\(plist)") { try IPCMessage(plist) }
        }
        #expect(try SessionMessage(["t": "nope"]) == .unknown(type: "nope", id: nil))
        #expect(try SessionMessage(["t": "FETCH", "id": 1, "seq": 1, "deadline": 1]) == .unknown(type: "FETCH", id: 1))
        #expect(try SessionMessage(IPCMessage.watchNearby.propertyList) == .unknown(type: "watch", id: nil))
    }

    @Test("a missing required field is malformedMessage naming it; a missing optional field reads as absent", arguments: MessageFamily.all)
    func missingFields(family: MessageFamily) throws {
        for sample in family.samples {
            let type = family.variant(sample)
            let required = try #require(family.required[type], "no table entry for \(type)")
            for key in Support.fields(sample).keys where key != "t" {
                let without = Support.setting(sample, key, to: nil)
                if required.contains(key) {
                    let error = #expect(throws: BatonProtocolError.self, "\(type) without \(key)") { try family.reread(without) }
                    #expect(error?.code == .malformedMessage)
                    #expect(error?.message.contains("\"\(key)\"") == true, "\(error?.message ?? "")")
                } else {
                    // Absent, or for the `streams` flag its default written out.
                    let reread = try family.reread(without)[key]
                    #expect(reread == nil || (key == "streams" && reread == false), "\(type): \(key) is optional")
                }
            }
        }
        // The table names only fields the samples carry, so each requirement above was exercised.
        for (type, keys) in family.required {
            let carried = family.samples.filter { family.variant($0) == type }.reduce(into: Set<String>()) { $0.formUnion(Support.fields($1).keys) }
            #expect(keys.isSubset(of: carried), "\(type): \(keys.subtracting(carried)) never sampled")
        }
    }

    @Test("a field of the wrong type is malformedMessage naming it, optional or not (the `streams` flag excepted)", arguments: MessageFamily.all)
    func mistypedFields(family: MessageFamily) {
        for sample in family.samples {
            for (key, value) in Support.fields(sample) where key != "t" && key != "streams" {
                let mistyped = Support.setting(sample, key, to: Support.wrongType(for: value))
                let error = #expect(throws: BatonProtocolError.self, "\(Support.type(sample)).\(key)") { try family.reread(mistyped) }
                #expect(error?.code == .malformedMessage)
                #expect(error?.message.contains("\"\(key)\"") == true, "\(error?.message ?? "")")
            }
        }
        // `streams` is a flag: anything but `true` reads as false (MessageFields.flag).
        let current = IPCMessage.becomeCurrent(activity: 1, ActivityNotice(activityType: "a", supportsStreams: true)).propertyList
        #expect((try? IPCMessage(Support.setting(current, "streams", to: "yes"))) == .becomeCurrent(activity: 1, ActivityNotice(activityType: "a")))
    }

    @Test("ids, sequences, deadlines and counts must be non-negative integers: -1 and 1.0 are malformedMessage", arguments: MessageFamily.all)
    func negativeNumbers(family: MessageFamily) {
        var checked = 0
        for sample in family.samples {
            for (key, value) in Support.fields(sample) {
                switch value {
                case .integer, .unsignedInteger:
                    for bad: PropertyList in [.integer(-1), .integer(.min), .real(1)] {
                        let error = #expect(throws: BatonProtocolError.self, "\(Support.type(sample)).\(key) = \(bad)") {
                            try family.reread(Support.setting(sample, key, to: bad))
                        }
                        #expect(error?.code == .malformedMessage)
                    }
                    checked += 1
                default: continue
                }
            }
        }
        #expect(checked >= 2 || family.description == "app listing", "an app listing has no numbers; every other family has")
    }

    @Test("strings are limited in UTF-8 bytes: at the limit they read, one byte over is malformedMessage", arguments: MessageFamily.all)
    func overlongStrings(family: MessageFamily) throws {
        var checked = 0
        for sample in family.samples {
            let type = Support.type(sample)
            for (key, value) in Support.fields(sample) where key != "t" {
                guard case .string = value else { continue }
                let limit = family.limits[type]?[key] ?? MessageFamily.defaultLimit
                let longest = Support.utf8String(bytes: limit)
                #expect(try family.reread(Support.setting(sample, key, to: .string(longest)))[key] != nil, "\(type).\(key) of \(limit) bytes")
                let error = #expect(throws: BatonProtocolError.self, "\(type).\(key) of \(limit + 1) bytes") {
                    try family.reread(Support.setting(sample, key, to: .string(Support.utf8String(bytes: limit + 1))))
                }
                #expect(error?.code == .malformedMessage)
                #expect(error?.message.contains("\(limit) bytes") == true, "\(error?.message ?? "")")
                checked += 1
            }
        }
        // Every limit in the table was met by some sample's field.
        for (type, keys) in family.limits {
            for key in keys.keys {
                #expect(family.samples.contains { Support.type($0) == type && $0[key]?.stringValue != nil }, "\(type).\(key) never sampled")
            }
        }
        #expect(checked >= 3)
    }

    @Test("agentPort must be a port number, 1 to 65535", arguments: ["sync", "synced"])
    func agentPort(type: String) throws {
        let base: PropertyList = ["t": .string(type), "id": 1, "roster": .data(MessageSamples.roster)]
        for port: PropertyList in [1, 65_535] {
            #expect(try SessionMessage(Support.setting(base, "agentPort", to: port)).propertyList["agentPort"] == port)
        }
        for port: PropertyList in [0, 65_536, -1, .unsignedInteger(.max), "47810", .real(47_810)] {
            let error = #expect(throws: BatonProtocolError.self, "\(port)") { try SessionMessage(Support.setting(base, "agentPort", to: port)) }
            #expect(error?.code == .malformedMessage)
            #expect(error?.message.contains("agentPort") == true)
        }
    }

    @Test("C3: a nearby list holds at most 1,024 items, each a dictionary", arguments: ["nearby", "changed"])
    func nearbyLimits(type: String) throws {
        let item = MessageSamples.itemPropertyList(MessageSamples.item)
        let base: PropertyList = ["t": .string(type), "req": 1]
        let full = try IPCMessage(Support.setting(base, "items", to: .array(Array(repeating: item, count: 1_024))))
        #expect(full.propertyList["items"]?.arrayValue?.count == 1_024)
        let bad: [PropertyList] = [
            .array(Array(repeating: item, count: 1_025)), .array([item, "item"]), .array([item, [:]]),
            .array([Support.setting(item, "t", to: nil)]), .set([item]),
        ]
        for items in bad {
            let error = #expect(throws: BatonProtocolError.self) { try IPCMessage(Support.setting(base, "items", to: items)) }
            #expect(error?.code == .malformedMessage)
        }
    }

    @Test("a hello whose version does not fit in an Int is malformedMessage, not a trap")
    func helloVersionOverflow() {
        let hello: PropertyList = ["t": "hello", "v": .unsignedInteger(UInt64(Int.max) + 1)]
        let error = #expect(throws: BatonProtocolError.self) { try IPCMessage(hello) }
        #expect(error?.code == .malformedMessage)
    }

    @Test("C8: the fail an agent sends for an app's long saveFailed text is one the other agent can read (senders bound free text)")
    func wrappedSaveFailure() throws {
        let fromApp = try IPCMessage(IPCMessage.saveFailed(request: 1, message: String(repeating: "x", count: 4_096)).propertyList)
        guard case .saveFailed(_, let text) = fromApp else { Issue.record("not a saveFailed: \(fromApp)"); return }
        // What the originating agent answers the fetch with (Agent+Apps.swift, finishSave; PeerLink answers it as is).
        // Whether the fix truncates in the agent or in SessionMessage, this is the message that must stay readable.
        let sent = SessionMessage.failure(id: 1, reason: .appNotAnswering, message: "the app could not give its state: \(text)")
        let bytes = try BinaryPropertyListEncoder.encode(sent.propertyList)
        let received = try SessionMessage(BinaryPropertyListDecoder.decode(bytes, limits: Support.frameLimits))
        guard case .failure(1, .appNotAnswering, _) = received else { Issue.record("read as \(received)"); return }
    }

    @Test("fuzz: mutated frames only ever throw a typed error or decode to a message that reads back as itself", arguments: 0..<16)
    func byteMutations(seed: UInt64) throws {
        var random = SeededRandom(state: seed)
        let frames = try (MessageFamily.session.samples + MessageFamily.ipc.samples).map { [UInt8](try BinaryPropertyListEncoder.encode($0)) }
        var decoded = 0
        var refused = 0
        for _ in 0..<300 {
            var bytes = frames[Int(random.next() % UInt64(frames.count))]
            for _ in 0...(random.next() % 4) {
                let index = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 6 {
                case 0: bytes[index] ^= UInt8(1 << (random.next() % 8))
                case 1: bytes[index] = UInt8(truncatingIfNeeded: random.next())
                case 2: bytes[index] = [0x00, 0x0F, 0x10, 0x13, 0x14, 0x5F, 0x6F, 0xAF, 0xDF, 0xFF][Int(random.next() % 10)]
                case 3: bytes.removeSubrange(index...)
                case 4: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: index)
                default: bytes.swapAt(index, Int(random.next() % UInt64(bytes.count)))
                }
                if bytes.isEmpty { break }
            }
            let plist: PropertyList
            do {
                plist = try BinaryPropertyListDecoder.decode(Data(bytes), limits: Support.frameLimits)
            } catch is BatonCoreError {
                refused += 1
                continue
            }
            for family in [MessageFamily.session, .ipc] {
                switch Self.outcome(family, plist) {
                case .decoded: decoded += 1
                case .refused: refused += 1
                }
            }
        }
        #expect(decoded > 0 && refused > 0, "\(decoded) decoded, \(refused) refused")
    }

    @Test("fuzz: messages with fields removed, retyped, swapped between types and stuffed only ever throw or decode", arguments: 0..<16)
    func fieldMutations(seed: UInt64) {
        var random = SeededRandom(state: seed)
        let samples = MessageFamily.session.samples + MessageFamily.ipc.samples
        let types = samples.map(Support.type)
        let keys = Array(Set(samples.flatMap { Support.fields($0).keys })).sorted()
        let item = MessageSamples.itemPropertyList(MessageSamples.item)
        let values: [PropertyList] = [
            .integer(-1), 0, 1, 65_536, .integer(.max), .unsignedInteger(.max), .real(.nan), .real(-0.5), "", "com.x",
            .string(String(repeating: "é", count: 3_000)), true, false, .data(Data()), .data(Data(repeating: 0xFF, count: 64)),
            .date(.distantPast), .date(Date(timeIntervalSince1970: .greatestFiniteMagnitude)), .null, .set([1, "a"]),
            .url(URL(string: "https://example.com")!), .uuid(UUID()), [], [item], [item, item, 3], [:], ["t": "item"],
            .array(Array(repeating: item, count: 1_100)),
        ]
        var outcomes: [Outcome: Int] = [:]
        for _ in 0..<400 {
            let plist = Support.mutateFields(of: samples[Int(random.next() % UInt64(samples.count))], keys: keys, types: types, values: values, &random)
            for family in [MessageFamily.session, .ipc] {
                outcomes[Self.outcome(family, plist), default: 0] += 1
            }
        }
        #expect(outcomes[.decoded, default: 0] > 0 && outcomes[.refused, default: 0] > 0, "\(outcomes)")
    }

    enum Outcome: Hashable { case decoded, refused }

    /// Reads `plist` with `family`'s decoder: a message must read back as itself; a refusal must be malformedMessage.
    static func outcome(_ family: MessageFamily, _ plist: PropertyList, sourceLocation: SourceLocation = #_sourceLocation) -> Outcome {
        do {
            let once = try family.reread(plist)
            #expect(try family.reread(once) == once, "\(family) reads its own output back", sourceLocation: sourceLocation)
            return .decoded
        } catch let error as BatonProtocolError {
            #expect(error.code == .malformedMessage, "\(error)", sourceLocation: sourceLocation)
            return .refused
        } catch {
            Issue.record("untyped error \(error) for \(plist)", sourceLocation: sourceLocation)
            return .refused
        }
    }
}

@Suite("Session and IPC test vectors (docs/PROTOCOL.md §6, §7)")
struct SessionVectorTests {
    typealias Support = MessageTestSupport

    /// The documented frames: length prefix and bplist00. Python's `plistlib.loads(frame[4:])` reads them as
    /// `{'deadline': 1000, 'id': 7, 'seq': 1800000000000, 't': 'fetch'}`,
    /// `{'id': 7, 'message': 'that activity is no longer current', 'reason': 'notCurrent', 't': 'fail'}` and
    /// `{'activity': 1, 'handoff': True, 'streams': False, 't': 'current', 'title': 'Groceries', 'type': 'com.razeware.shopsnap.view'}`.
    static let fetch =
        "0000006062706c6973743030d4010305070204060858646561646c696e651103e852696410075373657113000001a318"
        + "5c5000517455666574636808111a1d2022262f3100000000000001010000000000000009000000000000000000000000"
        + "00000037"
    static let fail =
        "0000008562706c6973743030d401030507020406085269641007576d6573736167655f10227468617420616374697669"
        + "7479206973206e6f206c6f6e6765722063757272656e7456726561736f6e5a6e6f7443757272656e745174546661696c"
        + "081114161e434a5557000000000000010100000000000000090000000000000000000000000000005c"
    static let current =
        "0000009b62706c6973743030d601030507090b020406080a0c58616374697669747910015768616e646f666609577374"
        + "7265616d730851745763757272656e74557469746c655947726f63657269657354747970655f101a636f6d2e72617a65"
        + "776172652e73686f70736e61702e7669657708151e2028293132343c424c510000000000000101000000000000000d00"
        + "00000000000000000000000000006e"

    /// Continuation streams (F1, F3; docs/PROTOCOL.md §8). plistlib reads them as
    /// `{'id': 3, 'seq': 1800000000000, 't': 'stream', 'window': 524288}`, `{'id': 3, 't': 'opened', 'window': 524288}`
    /// and `{'bytes': 131072, 'opener': False, 'stream': 3, 't': 'credit'}`. (The data frame's vector is checked with
    /// the frame codec, in BatonAgentTests' `DataFrameTests`.)
    static let stream =
        "0000006162706c6973743030d4010305070204060852696410035373657113000001a3185c500051745673747265616d"
        + "5677696e646f771200080000081114161a23252c33000000000000010100000000000000090000000000000000000000"
        + "0000000038"
    static let opened =
        "0000005062706c6973743030d301030502040652696410035174566f70656e65645677696e646f771200080000080f12"
        + "14161d240000000000000101000000000000000700000000000000000000000000000029"
    static let credit =
        "0000005f62706c6973743030d401030507020406085562797465731200020000566f70656e6572085673747265616d10"
        + "035174566372656469740811171c23242b2d2f0000000000000101000000000000000900000000000000000000000000"
        + "000036"

    @Test("fetch, fail, an IPC current, and (F3) stream, opened and credit encode to the documented frames, and the frames decode to them")
    func vectors() throws {
        let vectors: [(PropertyList, String, (PropertyList) throws -> PropertyList)] = [
            (SessionMessage.fetch(id: 7, sequence: 1_800_000_000_000, deadlineMilliseconds: 1_000).propertyList, Self.fetch, { try SessionMessage($0).propertyList }),
            (SessionMessage.failure(id: 7, reason: .notCurrent, message: "that activity is no longer current").propertyList, Self.fail, { try SessionMessage($0).propertyList }),
            (
                IPCMessage.becomeCurrent(activity: 1, ActivityNotice(activityType: MessageSamples.activityType, title: "Groceries")).propertyList,
                Self.current, { try IPCMessage($0).propertyList }
            ),
            (SessionMessage.openStream(id: 3, sequence: 1_800_000_000_000, window: 524_288).propertyList, Self.stream, { try SessionMessage($0).propertyList }),
            (SessionMessage.streamOpened(id: 3, window: 524_288).propertyList, Self.opened, { try SessionMessage($0).propertyList }),
            (SessionMessage.credit(stream: 3, opener: false, bytes: 131_072).propertyList, Self.credit, { try SessionMessage($0).propertyList }),
        ]
        for (plist, expected, reread) in vectors {
            let frame = try Support.frame(plist)
            #expect(Support.hex(frame) == expected)
            let documented = Support.bytes(hex: expected)
            let length = documented.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            #expect(length == documented.count - 4)
            #expect(try reread(BinaryPropertyListDecoder.decode(Data(documented.dropFirst(4)), limits: Support.frameLimits)) == plist)
        }
    }

    /// Issue 25 item 4 (A8; docs/PROTOCOL.md §6): `fetch` with `confirm`, and the `continued` notice.
    /// plistlib reads them as `{'confirm': True, 'deadline': 1000, 'id': 7, 'seq': 1800000000000, 't': 'fetch'}` and
    /// `{'seq': 1800000000000, 't': 'continued'}`.
    static let fetchConfirming =
        "0000006d62706c6973743030d50103050709020406080a57636f6e6669726d0958646561646c696e651103e852696410"
        + "075373657113000001a3185c5000517455666574636808131b1c25282b2d313a3c000000000000010100000000000000"
        + "0b00000000000000000000000000000042"
    static let continued =
        "0000004b62706c6973743030d2010302045373657113000001a3185c5000517459636f6e74696e756564080d111a1c00"
        + "00000000000101000000000000000500000000000000000000000000000026"

    @Test("issue 25 item 4: fetch with confirm and the continued notice encode to the documented frames; without confirm, fetch's frame is as before")
    func confirmationVectors() throws {
        let vectors: [(SessionMessage, String)] = [
            (.fetch(id: 7, sequence: 1_800_000_000_000, deadlineMilliseconds: 1_000, confirms: true), Self.fetchConfirming),
            (.continued(sequence: 1_800_000_000_000), Self.continued),
            (.fetch(id: 7, sequence: 1_800_000_000_000, deadlineMilliseconds: 1_000, confirms: false), Self.fetch),
        ]
        for (message, expected) in vectors {
            let frame = try Support.frame(message.propertyList)
            #expect(Support.hex(frame) == expected)
            let documented = Support.bytes(hex: expected)
            #expect(try SessionMessage(BinaryPropertyListDecoder.decode(Data(documented.dropFirst(4)), limits: Support.frameLimits)) == message)
        }
        #expect(SessionMessage.continued(sequence: 1).id == nil, "a notice: an older reader ignores it")
        var older = SessionMultiplexer()
        #expect(try older.receive(.unknown(type: "continued", id: nil)) == .ignore, "as an older agent reads it")
    }

    /// Issue 27 item 3 (A9; docs/PROTOCOL.md §7): `notCurrent {activity: 7}`, which plistlib reads as
    /// `{'activity': 7, 't': 'notCurrent'}`.
    static let notCurrent =
        "0000004a62706c6973743030d201030204586163746976697479100751745a6e6f7443757272656e74080d16181a0000"
        + "000000000101000000000000000500000000000000000000000000000025"

    @Test("issue 27 item 3, A9: the IPC notCurrent message encodes to the documented frame, and the frame decodes to it")
    func notCurrentVector() throws {
        let frame = try Support.frame(IPCMessage.notCurrent(activity: 7).propertyList)
        #expect(Support.hex(frame) == Self.notCurrent, "\(Support.hex(frame))")
        let documented = Support.bytes(hex: Self.notCurrent)
        #expect(try IPCMessage(BinaryPropertyListDecoder.decode(Data(documented.dropFirst(4)), limits: Support.frameLimits)) == .notCurrent(activity: 7))
    }

    static let clock =
        "0000004762706c6973743030d201030204536e6f7713000001a3185c5000517455636c6f636b080d111a1c00000000"
        + "00000101000000000000000500000000000000000000000000000022"

    @Test("issue 25 item 9: the clock notice encodes to the documented frame, is a notice, and an older reader ignores it")
    func clockVector() throws {
        let message = SessionMessage.clock(milliseconds: 1_800_000_000_000)
        let frame = try Support.frame(message.propertyList)
        #expect(Support.hex(frame) == Self.clock)
        #expect(try SessionMessage(BinaryPropertyListDecoder.decode(Data(frame.dropFirst(4)), limits: Support.frameLimits)) == message)
        #expect(message.id == nil, "a notice: no answer")
        var multiplexer = SessionMultiplexer()
        #expect(try multiplexer.receive(message) == .clock(milliseconds: 1_800_000_000_000))
        var older = SessionMultiplexer()
        #expect(try older.receive(.unknown(type: "clock", id: nil)) == .ignore, "as an older agent reads it")
        #expect(throws: (any Error).self, "a clock that is not a number is malformed") {
            try SessionMessage(.dictionary(["t": .string("clock"), "now": .string("noon")]))
        }
    }
}

/// Issue 30 (docs/PROTOCOL.md §8 "Direct streams"): the messages that introduce a direct stream, byte for byte.
@Suite("Issue 30: direct streams' messages")
struct DirectStreamVectorTests {
    typealias Support = MessageTestSupport
    static let token = Data((0..<16).map { UInt8($0) })
    static let fingerprint = Data((0x20..<0x40).map { UInt8($0) })

    /// `stream {id: 3, seq: 1800000000000, window: 524288, direct: 00…0f, cert: 20…3f}`, plistlib:
    /// `{'cert': b' !"#…?', 'direct': b'\x00…\x0f', 'id': 3, 'seq': 1800000000000, 't': 'stream', 'window': 524288}`.
    static let stream =
        "000000ab62706c6973743030d601030507090b020406080a0c54636572744f1020202122232425262728292a2b2c2d2e"
        + "2f303132333435363738393a3b3c3d3e3f566469726563744f1010000102030405060708090a0b0c0d0e0f5269641003"
        + "5373657113000001a3185c500051745673747265616d5677696e646f77120008000008151a3d44575a5c60696b727900"
        + "00000000000101000000000000000d0000000000000000000000000000007e"
    /// `opened {id: 3, window: 524288, cert: 20…3f}`.
    static let opened =
        "0000007c62706c6973743030d4010305070204060854636572744f1020202122232425262728292a2b2c2d2e2f303132"
        + "333435363738393a3b3c3d3e3f52696410035174566f70656e65645677696e646f771200080000081116393c3e40474e"
        + "0000000000000101000000000000000900000000000000000000000000000053"
    /// The continuing app's hello offering the direct path: `hello {bundle: com.example.Notes, v: 1, cont: 42, direct: true}`.
    static let hello =
        "0000007462706c6973743030d50103050709020406080a5662756e646c655f1011636f6d2e6578616d706c652e4e6f74"
        + "657354636f6e74102a566469726563740951745568656c6c6f5176100108131a2e33353c3d3f45470000000000000101"
        + "000000000000000b00000000000000000000000000000049"
    /// `direct {role: server, key: 01 02 03, cert: 04 05 06, peer: 20…3f}` (key and certificate shortened: any bytes).
    static let direct =
        "0000008c62706c6973743030d50103050709020406080a546365727443040506536b65794301020354706565724f1020"
        + "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f54726f6c655673657276657251745664"
        + "69726563740813181c2024294c51585a0000000000000101000000000000000b00000000000000000000000000000061"

    @Test("issue 30: stream with direct, opened with cert, the hello with direct and the direct answer encode to the documented frames and decode back")
    func vectors() throws {
        let offer = DirectStreamOffer(token: Self.token, fingerprint: Self.fingerprint)
        let end = DirectStreamEnd(role: .server, key: Data([1, 2, 3]), certificate: Data([4, 5, 6]), peerFingerprint: Self.fingerprint)
        let session: [(SessionMessage, String)] = [
            (.openStream(id: 3, sequence: 1_800_000_000_000, window: 524_288, direct: offer), Self.stream),
            (.streamOpened(id: 3, window: 524_288, direct: Self.fingerprint), Self.opened),
        ]
        for (message, expected) in session {
            let frame = try Support.frame(message.propertyList)
            #expect(Support.hex(frame) == expected, "\(Support.hex(frame))")
            #expect(try SessionMessage(BinaryPropertyListDecoder.decode(Data(frame.dropFirst(4)), limits: Support.frameLimits)) == message)
        }
        let ipc: [(IPCMessage, String)] = [
            (.openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: 42, direct: true), Self.hello),
            (.directStream(end), Self.direct),
        ]
        for (message, expected) in ipc {
            let frame = try Support.frame(message.propertyList)
            #expect(Support.hex(frame) == expected, "\(Support.hex(frame))")
            #expect(try IPCMessage(BinaryPropertyListDecoder.decode(Data(frame.dropFirst(4)), limits: Support.frameLimits)) == message)
        }
    }

    @Test("issue 30: without the direct fields, stream and opened are the relayed stream's, and the hello's frame is as before")
    func relayedUnchanged() throws {
        #expect(try Support.frame(SessionMessage.openStream(id: 3, sequence: 1_800_000_000_000, window: 524_288).propertyList) == Support.bytes(hex: SessionVectorTests.stream))
        let hello = IPCMessage.openStream(bundleIdentifier: "com.example.Notes", version: 1, continuation: 42)
        #expect(hello.propertyList.dictionaryValue?["direct"] == nil)
    }

    @Test("issue 30: a direct offer with only its token or only its fingerprint, or either of the wrong size, is malformed", arguments: [
        ["direct": PropertyList.data(token)],
        ["cert": .data(fingerprint)],
        ["direct": .data(token.dropLast()), "cert": .data(fingerprint)],
        ["direct": .data(token), "cert": .data(fingerprint + Data([0]))],
        ["direct": .string("x"), "cert": .data(fingerprint)],
    ])
    func malformedOffers(fields: [String: PropertyList]) throws {
        var message: [String: PropertyList] = ["t": .string("stream"), "id": .integer(3), "seq": .integer(1), "window": .integer(1024)]
        message.merge(fields) { $1 }
        #expect { try SessionMessage(.dictionary(message)) } throws: { ($0 as? BatonProtocolError)?.code == .malformedMessage }
    }

    @Test("issue 30: a direct answer with a role other than client or server, an oversized key or certificate, or a short fingerprint is malformed")
    func malformedDirectAnswers() throws {
        let good: [String: PropertyList] = ["t": .string("direct"), "role": .string("client"), "key": .data(Data([1])), "cert": .data(Data([2])), "peer": .data(Self.fingerprint)]
        #expect(try IPCMessage(.dictionary(good)) == .directStream(DirectStreamEnd(role: .client, key: Data([1]), certificate: Data([2]), peerFingerprint: Self.fingerprint)))
        let bad: [[String: PropertyList]] = [
            ["role": .string("proxy")],
            ["key": .data(Data(count: DirectStreamEnd.maximumKeyLength + 1))],
            ["cert": .data(Data(count: DirectStreamEnd.maximumCertificateLength + 1))],
            ["peer": .data(Self.fingerprint.dropLast())],
        ]
        for change in bad {
            #expect(throws: BatonProtocolError.self, "\(change.keys)") { try IPCMessage(.dictionary(good.merging(change) { $1 })) }
        }
    }
}
