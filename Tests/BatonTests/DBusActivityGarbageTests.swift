@testable import BatonAgent
import BatonCore
import BatonDBus
import Foundation
import Testing

/// Garbage an app in any language may send as an activity's properties (issue 28 item 1; PROTOCOL.md §11): random
/// keys, §11's among them, with values of every property-list type, through the session as CreateActivity and
/// UpdateActivity. Each call is answered, by a reply or by InvalidArgs / PayloadTooLarge naming the property, and an
/// accepted activity comes back the same from what the continuing app is sent. The `dbus-activity` fuzzer
/// (Fuzz/DBusActivityFuzzer.swift) runs the same checks on D-Bus value trees.
@Suite("Issue 28 item 1: garbage properties from a D-Bus app are answered with typed errors")
struct DBusActivityGarbageTests {
    /// A small seeded generator, so a failure names the seed that found it.
    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(max(bound, 1)))
        }
    }

    static let names = DBusActivityProperties.keys + ["activityType", "userinfo", "", "title\u{1}"]

    static func value(_ random: inout Random, depth: Int = 0) -> PropertyList {
        switch random.next(depth > 3 ? 9 : 12) {
        case 0: return .string(["", "Tarte Tatin", "https://example.com/r/1", "file:///etc/passwd", "javascript:x", "é"][random.next(6)])
        case 1: return .integer(Int64(random.next(1000)) - 500)
        case 2: return .bool(random.next(2) == 0)
        case 3: return .real(Double(random.next(100)) / 7)
        case 4: return .date(Date(timeIntervalSinceReferenceDate: Double(random.next(1 << 30))))
        case 5: return .data(Data(repeating: UInt8(random.next(256)), count: random.next(3) == 0 ? 1_100_000 : random.next(40)))
        case 6: return .url(URL(string: "https://example.com/\(random.next(100))") ?? URL(fileURLWithPath: "/"))
        case 7: return .uuid(UUID())
        case 8: return .null
        case 9: return .array((0..<random.next(4)).map { _ in value(&random, depth: depth + 1) })
        case 10: return .set(Set((0..<random.next(4)).map { _ in PropertyList.string("k\(random.next(9))") }))
        default:
            var entries: [String: PropertyList] = [:]
            for _ in 0..<random.next(4) { entries[names[random.next(names.count)]] = value(&random, depth: depth + 1) }
            return .dictionary(entries)
        }
    }

    @Test("every garbage CreateActivity and UpdateActivity is answered: a reply, or InvalidArgs / PayloadTooLarge naming properties.; what is accepted comes back the same in Continue's activity (A2-A5, A10, A11)")
    func garbageIsAnswered() throws {
        let mapping = DBusPropertyListMapping()
        var random = Random(state: 28)
        var accepted = 0
        var refused: [String: Int] = [:]
        for round in 0..<1_500 {
            var properties: [String: PropertyList] = [:]
            for _ in 0..<random.next(5) { properties[Self.names[random.next(Self.names.count)]] = Self.value(&random) }
            guard let dbus = try? mapping.dbusValue(userInfo: properties, root: "properties") else { continue }
            var session = DBusAppSessionTests.registered()
            let call = UInt64(round + 10)
            let member = round % 2 == 0 ? "CreateActivity" : "UpdateActivity"
            if member == "UpdateActivity" { _ = DBusAppSessionTests.create(&session, [:], call: 2) }
            let arguments: [DBusValue] = member == "CreateActivity" ? [.string("org.example.recipe"), dbus] : [.uint64(1), dbus]
            let actions = session.handle(.call(call, member: member, arguments: arguments))
            switch actions.last {
            case .reply(call, _)?:
                accepted += 1
                // What the agent holds goes to the continuing app as Continue's activity; sent back, it is the same.
                let held = try #require(session.activities[1]?.payload, "round \(round): accepted, nothing held")
                var fields = try mapping.userInfo(from: try DBusActivityProperties.dbusValue(of: held, mapping: mapping))
                #expect(fields.removeValue(forKey: "activityType") == .string("org.example.recipe"))
                var again = try ActivityPayload(activityType: "org.example.recipe")
                var needsSave = false
                try DBusActivityProperties.apply(fields, to: &again, needsSave: &needsSave)
                #expect(again == held, "round \(round): \(properties)")
            case .error(call, let name, let message)?:
                refused[name, default: 0] += 1
                #expect(
                    [DBusAppInterface.Error.invalidArgs, DBusAppInterface.Error.payloadTooLarge].contains(name),
                    "round \(round): \(name) \(message)")
                #expect(name != DBusAppInterface.Error.invalidArgs || message.hasPrefix("properties"), "round \(round): \(message)")
            default:
                Issue.record("round \(round): \(member) was not answered: \(actions)")
            }
        }
        // Both ways were reached, or the test proves nothing.
        #expect(accepted > 50 && refused[DBusAppInterface.Error.invalidArgs, default: 0] > 50, "accepted \(accepted), refused \(refused)")
    }

    @Test("A11: userInfo added in parts, each within the mapping's limits, past the payload's 1 MiB is PayloadTooLarge, and the activity keeps what it held")
    func partsPastTheLimit() throws {
        var session = DBusAppSessionTests.registered()
        let activity = try #require(DBusAppSessionTests.create(&session, ["title": .string("Tarte Tatin")]))
        func add(_ key: String, call: UInt64) -> [DBusAppSession.Action] {
            let part = DBusAppSessionTests.properties([
                "addUserInfoEntries": DBusAppSessionTests.properties([key: .bytes(Data(repeating: 7, count: 600_000))])
            ])
            return session.handle(.call(call, member: "UpdateActivity", arguments: [.uint64(activity), part]))
        }
        #expect(add("first", call: 3) == [.reply(3, [])])
        let second = add("second", call: 4)
        guard case .error(4, let name, _)? = second.last else {
            Issue.record("not refused: \(second)")
            return
        }
        #expect(name == DBusAppInterface.Error.payloadTooLarge)
        #expect(session.activities[activity]?.payload.userInfo.keys.sorted() == ["first"])
    }
}
