// libFuzzer entry point for an activity's properties as an app in any language sends them over the session bus (issue
// 28 item 1; PROTOCOL.md §11, "Activity properties"): CreateActivity's, UpdateActivity's and Save's `a{sv}`.
//
// The input is read as property names (§11's keys, and a few that are not) with D-Bus value trees from
// DBusValueBuilder (Tests/BatonDBusTests/DBusValueBuilder.swift), mapped with §10's table and applied to an activity
// by DBusActivityProperties, as the agent's DBusAppSession does. Compiled with BatonCore's and BatonDBus' sources, the
// properties file and a stand-in for the two names it uses from the session (scripts/fuzz.sh dbus-activity). A trap,
// a sanitizer report, an untyped error, a refusal that is neither InvalidArgs nor PayloadTooLarge or that does not
// name `properties.`, an accepted activity that cannot travel (A11) or does not come back the same from what the
// agent sends the continuing app (Continue's `activity`), stops the fuzzer with the input saved.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func dbusActivityFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: bytes, count: count))
    // Limits far below the defaults (as the dbus-plist fuzzer's): shapes, not sizes.
    let mapping = DBusPropertyListMapping(limits: DBusMappingLimits(maximumValues: 4096, maximumStringBytes: 4096, maximumTotalBytes: 64 << 10))
    let names = DBusActivityProperties.keys + ["activityType", "userinfo", ""]
    var builder = DBusValueBuilder(Array(input.dropFirst()))
    var properties: [String: PropertyList] = [:]
    for index in 0..<Int((input.first ?? 0) % 6) {
        let name = names[Int(input.dropFirst(index + 1).first ?? 0) % names.count]
        let value = builder.value()
        // What does not map is refused before the properties are looked at (DBusAppSession's InvalidArgs).
        guard let plist = try? mapping.propertyList(from: value) else { continue }
        properties[name] = plist
    }
    guard var payload = try? ActivityPayload(activityType: "org.baton.fuzz") else { preconditionFailure("a valid type refused") }
    var needsSave = false
    do {
        try DBusActivityProperties.apply(properties, to: &payload, needsSave: &needsSave)
        try DBusActivityProperties.checkSize(payload)
    } catch {
        precondition(
            [DBusAppInterface.Error.invalidArgs, DBusAppInterface.Error.payloadTooLarge].contains(error.name),
            "an unexpected refusal: \(error)"
        )
        precondition(error.name != DBusAppInterface.Error.invalidArgs || error.message.hasPrefix("properties.") || error.message.contains("Error"),
            "a refusal that names no property: \(error)")
        return 0
    }
    // Accepted: it travels (A11), and comes back the same.
    let wire: Data
    do {
        wire = try payload.encoded()
    } catch {
        // requiredUserInfoKeys may name keys the app sets later; encoding checks them (A10).
        return 0
    }
    guard let decoded = try? ActivityPayload(decoding: wire) else { preconditionFailure("an accepted activity does not decode: \(payload)") }
    // What Continue carries, read back as properties by an app that sends them again, is the same activity.
    let sent: DBusValue
    do {
        sent = try DBusActivityProperties.dbusValue(of: decoded, mapping: DBusPropertyListMapping())
    } catch {
        preconditionFailure("an accepted activity cannot be sent to the continuing app: \(error)")
    }
    guard var fields = try? DBusPropertyListMapping().userInfo(from: sent) else { preconditionFailure("Continue's activity does not read back") }
    precondition(fields.removeValue(forKey: "activityType") == .string("org.baton.fuzz"), "Continue's activity lost its type")
    guard var again = try? ActivityPayload(activityType: "org.baton.fuzz") else { return 0 }
    var unused = false
    do {
        try DBusActivityProperties.apply(fields, to: &again, needsSave: &unused)
    } catch {
        preconditionFailure("Continue's activity, sent back, is refused: \(error)")
    }
    precondition(again == decoded, "Continue's activity came back as \(again), not \(decoded)")
    return 0
}
