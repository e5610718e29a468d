@testable import BatonAgent
import BatonCore
import BatonDBus
import BatonProtocol
import Foundation
import NIOPosix
import Testing

/// The agent's D-Bus interface for apps as a pure machine (issue 28 item 1; docs/PROTOCOL.md §11): calls in, §7's
/// messages for the agent and answers for the app out.
@Suite("Issue 28 item 1: one app on the session bus, as the agent serves it")
struct DBusAppSessionTests {
    typealias Session = DBusAppSession

    static func properties(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(key: .string, value: .variant, entries.sorted { $0.key < $1.key }.map { DBusDictionaryEntry(.string($0.key), .variant($0.value)) })
    }

    /// A session registered as `org.example.Recipes`.
    static func registered() -> Session {
        var session = Session()
        _ = session.handle(.call(1, member: "Register", arguments: [.string("org.example.Recipes"), properties([:])]))
        _ = session.handle(.agent(.welcome(device: "D1", deviceName: "laptop")))
        return session
    }

    /// CreateActivity's activity number.
    static func create(_ session: inout Session, _ entries: [String: DBusValue], call: UInt64 = 2) -> UInt64? {
        let actions = session.handle(.call(call, member: "CreateActivity", arguments: [.string("org.example.recipe"), properties(entries)]))
        guard case .reply(_, let values)? = actions.first, case .uint64(let activity)? = values.first else { return nil }
        return activity
    }

    @Test("Register is the hello: welcome answers it with the device, refused with the code's D-Bus error (§11 Errors)")
    func register() {
        var session = Session()
        let hello = session.handle(.call(1, member: "Register", arguments: [.string("org.example.Recipes"), Self.properties([:])]))
        #expect(hello == [.toAgent(.hello(bundleIdentifier: "org.example.Recipes", version: 1, readsNotCurrent: true))])
        #expect(session.handle(.call(2, member: "CreateActivity", arguments: [.string("t"), Self.properties([:])])).first
            == .error(2, name: "org.freedesktop.DBus.Error.AccessDenied", message: "call Register first: CreateActivity is for a registered app only"))
        #expect(session.handle(.agent(.welcome(device: "D1", deviceName: "laptop"))) == [.reply(1, [.string("D1"), .string("laptop")])])

        var refused = Session()
        _ = refused.handle(.call(5, member: "Register", arguments: [.string("nope"), Self.properties([:])]))
        #expect(refused.handle(.agent(.refused(code: .unknownApp, message: "no app"))) == [.error(5, name: "org.baton.Error.UnknownApp", message: "no app")])
        var impostor = Session()
        _ = impostor.handle(.call(6, member: "Register", arguments: [.string("org.example.Recipes"), Self.properties([:])]))
        #expect(impostor.handle(.agent(.refused(code: .notPermitted, message: "not its program")))
            == [.error(6, name: "org.freedesktop.DBus.Error.AccessDenied", message: "not its program")])
    }

    @Test("A2-A5, A10: CreateActivity holds the properties; BecomeCurrent sends current from them (C2) and index when eligible for search (G1)")
    func createAndBecomeCurrent() throws {
        var session = Self.registered()
        let activity = try #require(
            Self.create(&session, [
                "title": .string("Tarte Tatin"),
                "userInfo": Self.properties(["step": .int64(3)]),
                "webpageURL": .string("https://example.com/r/42"),
                "eligibleForSearch": .boolean(true),
                "keywords": .array(.string, [.string("apple")]),
            ])
        )
        #expect(activity == 1)
        let held = try #require(session.activities[activity])
        #expect(held.payload.title == "Tarte Tatin" && held.payload.userInfo["step"] == 3 && held.payload.keywords == ["apple"])
        let actions = session.handle(.call(3, member: "BecomeCurrent", arguments: [.uint64(activity)]))
        let notice = ActivityNotice(activityType: "org.example.recipe", title: "Tarte Tatin", webpageHost: "example.com")
        #expect(actions.first == .toAgent(.becomeCurrent(activity: activity, notice)))
        #expect(actions.contains { if case .toAgent(.index(activity, _)) = $0 { true } else { false } })
        #expect(actions.last == .reply(3, []))
    }

    @Test("A5: a webpageURL that is not http or https is InvalidArgs naming the key, and nothing is created")
    func webpageURLScheme() {
        var session = Self.registered()
        let actions = session.handle(.call(2, member: "CreateActivity", arguments: [.string("t"), Self.properties(["webpageURL": .string("file:///etc/passwd")])]))
        guard case .error(2, let name, let message)? = actions.first else { Issue.record("\(actions)"); return }
        #expect(name == "org.freedesktop.DBus.Error.InvalidArgs" && message.hasPrefix("properties.webpageURL"))
        #expect(session.activities.isEmpty)
    }

    @Test("A4: a key not in §11's table or of the wrong type is InvalidArgs naming the key path; UpdateActivity changes nothing then")
    func wrongProperties() throws {
        var session = Self.registered()
        let activity = try #require(Self.create(&session, ["title": .string("One")]))
        let unknown = session.handle(.call(3, member: "UpdateActivity", arguments: [.uint64(activity), Self.properties(["colour": .string("red")])]))
        guard case .error(_, let name, let message)? = unknown.first else { Issue.record("\(unknown)"); return }
        #expect(name == "org.freedesktop.DBus.Error.InvalidArgs" && message.contains("colour"))
        let mistyped = session.handle(
            .call(4, member: "UpdateActivity", arguments: [.uint64(activity), Self.properties(["title": .string("Two"), "eligibleForHandoff": .string("yes")])])
        )
        guard case .error(_, _, let text)? = mistyped.first else { Issue.record("\(mistyped)"); return }
        #expect(text.hasPrefix("properties.eligibleForHandoff"))
        #expect(session.activities[activity]?.payload.title == "One")
        let unmappable = session.handle(
            .call(5, member: "UpdateActivity", arguments: [.uint64(activity), Self.properties(["userInfo": Self.properties(["fd": .unixFD(0)])])])
        )
        guard case .error(_, let mapName, let mapText)? = unmappable.first else { Issue.record("\(unmappable)"); return }
        #expect(mapName == "org.freedesktop.DBus.Error.InvalidArgs" && mapText.hasPrefix("properties.userInfo.fd"), "\(mapText)")
    }

    @Test("A4: addUserInfoEntries merges; an update of the current activity's title is sent on as an update (issue 27 item 3)")
    func updateCurrent() throws {
        var session = Self.registered()
        let activity = try #require(Self.create(&session, ["userInfo": Self.properties(["a": .int64(1)])]))
        _ = session.handle(.call(3, member: "BecomeCurrent", arguments: [.uint64(activity)]))
        let actions = session.handle(
            .call(4, member: "UpdateActivity", arguments: [.uint64(activity), Self.properties(["title": .string("New"), "addUserInfoEntries": Self.properties(["b": .int64(2)])])])
        )
        let notice = ActivityNotice(activityType: "org.example.recipe", title: "New")
        #expect(actions == [.toAgent(.becomeCurrent(activity: activity, notice, isUpdate: true)), .reply(4, [])])
        #expect(session.activities[activity]?.payload.userInfo == ["a": 1, "b": 2])
    }

    @Test("A7: save is answered at once with the state held when needsSave is false")
    func saveWithoutNeedsSave() throws {
        var session = Self.registered()
        let activity = try #require(Self.create(&session, ["title": .string("Held")]))
        let actions = session.handle(.agent(.save(request: 9, activity: activity, deadlineMilliseconds: 1_000)))
        guard case .toAgent(.saved(9, let data))? = actions.first, actions.count == 1 else { Issue.record("\(actions)"); return }
        #expect(try ActivityPayload(decoding: data).title == "Held")
    }

    @Test("A6, A7, B2: with needsSave the agent calls Save, applies its answer to an emptied userInfo, then saved; needsSave is false after")
    func saveWithNeedsSave() throws {
        var session = Self.registered()
        let activity = try #require(Self.create(&session, ["userInfo": Self.properties(["old": .int64(1)])]))
        #expect(session.handle(.call(3, member: "SetNeedsSave", arguments: [.uint64(activity)])) == [.reply(3, [])])
        let asked = session.handle(.agent(.save(request: 9, activity: activity, deadlineMilliseconds: 800)))
        guard case .callApp("Save", let arguments, let outgoing?, 800)? = asked.first, arguments == [.uint64(activity), .uint64(800)] else {
            Issue.record("\(asked)"); return
        }
        let answered = session.handle(.answered(outgoing, values: [Self.properties(["userInfo": Self.properties(["step": .int64(4)])])]))
        guard case .toAgent(.saved(9, let data))? = answered.first else { Issue.record("\(answered)"); return }
        #expect(try ActivityPayload(decoding: data).userInfo == ["step": 4])
        #expect(session.activities[activity]?.needsSave == false)
        // Saved now: the next save is answered at once.
        guard case .toAgent(.saved)? = session.handle(.agent(.save(request: 10, activity: activity, deadlineMilliseconds: 800))).first else {
            Issue.record("needsSave was not reset"); return
        }
    }

    @Test("A7, C8: an error from Save, or none in time, is saveFailed")
    func saveFails() throws {
        var session = Self.registered()
        let activity = try #require(Self.create(&session, ["needsSave": .boolean(true)]))
        guard case .callApp(_, _, let outgoing?, _)? = session.handle(.agent(.save(request: 9, activity: activity, deadlineMilliseconds: 500))).first else {
            Issue.record("no Save call"); return
        }
        let failed = session.handle(.answerFailed(outgoing, name: "org.freedesktop.DBus.Error.NoReply", message: "timed out"))
        guard case .toAgent(.saveFailed(9, let message))? = failed.first else { Issue.record("\(failed)"); return }
        #expect(message.contains("NoReply"))
    }

    @Test("A8, A9: continued is WasContinued, notCurrent is NotCurrent, each with no reply expected")
    func notices() {
        var session = Self.registered()
        #expect(session.handle(.agent(.continued(activity: 1))) == [.callApp(member: "WasContinued", arguments: [.uint64(1)], expecting: nil, timeoutMilliseconds: 0)])
        #expect(session.handle(.agent(.notCurrent(activity: 1))) == [.callApp(member: "NotCurrent", arguments: [.uint64(1)], expecting: nil, timeoutMilliseconds: 0)])
    }

    @Test("C5, C7: WillContinue, then Continue with the activity as an a{sv} (activityType, title, userInfo), exactly once")
    func continuation() throws {
        var session = Self.registered()
        #expect(session.handle(.agent(.willContinue(continuation: 4, activityType: "org.example.recipe")))
            == [.callApp(member: "WillContinue", arguments: [.uint64(4), .string("org.example.recipe")], expecting: nil, timeoutMilliseconds: 0)])
        var payload = try ActivityPayload(activityType: "org.example.recipe")
        payload.title = "Tarte Tatin"
        payload.userInfo = ["step": 3]
        let actions = session.handle(.agent(.deliver(continuation: 4, payload: try payload.encoded())))
        guard case .callApp("Continue", let arguments, _?, _)? = actions.first, arguments.count == 2, arguments[0] == .uint64(4) else {
            Issue.record("\(actions)"); return
        }
        let activity = try DBusPropertyListMapping().userInfo(from: arguments[1], root: "activity")
        #expect(activity["activityType"] == "org.example.recipe" && activity["title"] == "Tarte Tatin")
        #expect(activity["userInfo"] == .dictionary(["step": 3]))
        // C5: nothing more for that continuation.
        #expect(session.handle(.agent(.failed(continuation: 4, activityType: "org.example.recipe", reason: .noApp, message: "late"))).isEmpty)
    }

    @Test("C5, C8: a failed continuation is DidFail with the reason's D-Bus error name")
    func didFail() {
        var session = Self.registered()
        _ = session.handle(.agent(.willContinue(continuation: 4, activityType: "t")))
        let actions = session.handle(.agent(.failed(continuation: 4, activityType: "t", reason: .fetch(.peerGone), message: "gone")))
        #expect(actions == [.callApp(member: "DidFail", arguments: [.uint64(4), .string("t"), .string("org.baton.Error.PeerGone"), .string("gone")], expecting: nil, timeoutMilliseconds: 0)])
        #expect(DBusAppInterface.errorName(for: "notPermitted") == "org.freedesktop.DBus.Error.AccessDenied")
    }

    @Test("A9: Invalidate sends invalidate and the number is never valid again; a second Register is AlreadyConnected")
    func invalidate() throws {
        var session = Self.registered()
        let activity = try #require(Self.create(&session, [:]))
        #expect(session.handle(.call(3, member: "Invalidate", arguments: [.uint64(activity)])) == [.toAgent(.invalidate(activity: activity)), .reply(3, [])])
        guard case .error(4, "org.freedesktop.DBus.Error.InvalidArgs", _)? = session.handle(.call(4, member: "BecomeCurrent", arguments: [.uint64(activity)])).first else {
            Issue.record("an invalidated activity was accepted"); return
        }
        #expect(Self.create(&session, [:], call: 5) == 2)
        guard case .error(6, "org.baton.Error.AlreadyConnected", _)? = session.handle(.call(6, member: "Register", arguments: [.string("x"), Self.properties([:])])).first else {
            Issue.record("registered twice"); return
        }
    }

    @Test("A11: a userInfo past the payload's hard limit is PayloadTooLarge or refused by the mapping's limits; at most 64 activities")
    func bounds() throws {
        var session = Self.registered()
        let big = Self.properties((0..<20).reduce(into: [:]) { $0["k\($1)"] = .bytes(Data(count: 60_000)) })
        let actions = session.handle(.call(2, member: "CreateActivity", arguments: [.string("t"), Self.properties(["userInfo": big])]))
        guard case .error(2, let name, _)? = actions.first else { Issue.record("\(actions)"); return }
        #expect(name == "org.baton.Error.PayloadTooLarge" || name == "org.freedesktop.DBus.Error.InvalidArgs", "\(name)")
        for call in 0..<64 { _ = Self.create(&session, [:], call: UInt64(100 + call)) }
        guard case .error(_, "org.baton.Error.TooManyActivities", _)? = session.handle(.call(3, member: "CreateActivity", arguments: [.string("t"), Self.properties([:])])).first else {
            Issue.record("more than 64 activities"); return
        }
    }

    @Test("F2, F3: OpenStream is opened outside the machine; an incoming stream is offered with AcceptStream, whose answer takes or declines it")
    func streams() {
        var session = Self.registered()
        #expect(session.handle(.call(2, member: "OpenStream", arguments: [.uint64(1)])) == [.openStream(2, continuation: 1)])
        let token = Data(repeating: 7, count: 16)
        let offered = session.handle(.agent(.incomingStream(activity: 1, token: token)))
        guard case .offerStream(1, token, let outgoing)? = offered.first, offered.count == 1 else {
            Issue.record("not offered: \(offered)"); return
        }
        #expect(session.handle(.answered(outgoing, values: [])) == [.streamAnswered(token: token, accepted: true, message: "")])
        // Answered once: a second answer under the same number is nobody's.
        #expect(session.handle(.answered(outgoing, values: [])).isEmpty)
        guard case .offerStream(_, _, let second)? = session.handle(.agent(.incomingStream(activity: 1, token: token))).first else {
            Issue.record("not offered again"); return
        }
        #expect(
            session.handle(.answerFailed(second, name: "org.example.Error.Busy", message: "later"))
                == [.streamAnswered(token: token, accepted: false, message: "org.example.Error.Busy: later")]
        )
    }
}

/// The bus side of a refused Register (issue 28 item 1, §11 "Identity"): the app hears the refusal before the agent
/// has closed the connection, and an app that registers again at once must reach a new connection. Once, under CI's
/// load, the retry reached the refused one, whose close then answered it "the agent closed this app's connection".
@Suite("Issue 28 item 1: a refused Register's connection takes no new Register")
struct DBusAppConduitRefusalTests {
    final class Commands: @unchecked Sendable {
        let lock = NSLock()
        var sent: [DBusAppBus.Command] = []
        func add(_ command: DBusAppBus.Command) {
            lock.lock()
            sent.append(command)
            lock.unlock()
        }
        var errors: [String] {
            lock.lock()
            defer { lock.unlock() }
            return sent.compactMap { if case .error(_, let name, _) = $0 { name } else { nil } }
        }
    }

    @Test("§11 Identity: once the refusal is handed to the app, the connection is inactive, before the agent closes it")
    func refusedIsInactive() throws {
        let commands = Commands()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let conduit = DBusAppConduit(sender: ":1.7", credentials: PeerCredentials(pid: 1, uid: 0, gid: 0), eventLoop: loop) { commands.add($0) }
        conduit.input(.call(1, member: "Register", arguments: [.string("org.example.Nobody"), DBusAppSessionTests.properties([:])]))
        #expect(conduit.isActive, "registering")
        conduit.send(IPCMessage.refused(code: .unknownApp, message: "no app org.example.Nobody is installed").propertyList)
        #expect(commands.errors == [DBusAppInterface.errorName(for: IPCRefusal.unknownApp.rawValue)], "the app is answered UnknownApp")
        #expect(!conduit.isActive, "the bus gives the app's next Register a new connection")
        conduit.close()
        #expect(commands.errors.count == 1, "the close answers nothing more")
    }
}
