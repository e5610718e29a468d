import BatonDBus
import BatonDBusMessages
import BatonTestSupport
import CSystemd
import Foundation
import Testing

/// The bridge between sd-bus messages and DBusValue (issue 28 item 1), against a real dbus-daemon with dbus-python
/// as the app on the other side.
@Suite(
    "Issue 28 item 1: sd-bus messages read as DBusValues and written back, bounded against hostile apps",
    .serialized
)
struct DBusMessageBridgeTests {
    /// Runs `body` with the service on a private bus of its own (its address, the test's folder), then stops the bus.
    static func withService(_ body: (BridgeService, String, URL) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "bridge-\(UUID().uuidString.prefix(8))"
        )
        let bus = try PrivateSessionBus(in: folder)
        defer {
            bus.stop()
            try? FileManager.default.removeItem(at: folder)
        }
        try body(try BridgeService(address: bus.address), bus.address, folder)
    }

    @Test(
        "Issue 28 item 1: every basic type, nested containers, variants three deep, 300 random values 4 deep and an fd round trip from Python through Baton and back; a userInfo of every property-list type maps and comes back as PROTOCOL §10 says",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd)
    )
    func roundTrip() throws {
        try Self.withService { service, address, folder in
            let lines = try BridgePeer.run("roundtrip", against: service, address: address, folder: folder)
            let failures = lines.filter { !$0.hasPrefix("ok ") }
            #expect(failures.isEmpty, "\(failures)")
            #expect(lines.filter { $0.hasPrefix("ok ") }.count == 18, "\(lines)")
            #expect(service.served.allSatisfy { $0.code == nil }, "\(service.served)")
            #expect(
                service.closeOnExec == [true],
                "the fd read was not duplicated close-on-exec: \(service.closeOnExec)"
            )
        }
    }

    @Test(
        "Issue 28 item 1: hostile messages (wrong signatures, 2 MiB and 30 MiB strings, keys and data, 100k and 4M elements, variants past the reader's depth, an fd in a userInfo) are each refused with a typed error in bounded time, leaking no fd, and the service still answers",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd)
    )
    func hostileMessagesAreRefused() throws {
        try Self.withService { service, address, folder in
            let memoryBefore = BridgeService.peakMemory
            let lines = try BridgePeer.run("hostile", against: service, address: address, folder: folder)
            let failures = lines.filter { $0.hasPrefix("FAIL") || !($0.hasPrefix("ok ") || $0.hasPrefix("refused ")) }
            #expect(failures.isEmpty, "\(failures)")
            #expect(lines.filter { $0.hasPrefix("refused ") }.count == 17, "\(lines)")
            #expect(lines.contains("ok still answering"))
            let refusals = service.served.filter { $0.code != nil }
            #expect(refusals.count == 17)
            #expect(!refusals.contains { $0.code == "untyped" })
            for refusal in refusals {
                print(
                    "issue 28 item 1: \(refusal.member) refused \(refusal.code ?? "") in \(String(format: "%.1f", refusal.seconds * 1000)) ms"
                )
                #expect(refusal.seconds < 2, "\(refusal.member) took \(refusal.seconds) s to refuse")
            }
            // Not asserted (the figure is the whole process's, other suites may run at once): the most it grew is the
            // largest message, which sd-bus holds whole, about 30 MiB here.
            print(
                "issue 28 item 1: peak memory \(memoryBefore) MiB before the hostile messages, \(BridgeService.peakMemory) MiB after"
            )
            // The fd read from the refused userInfo was duplicated, then closed with the arguments: no descriptor of this
            // process names the peer's file. (Not a count of all descriptors: other suites open and close theirs at once.)
            let held = try Self.descriptorsNaming("baton-hostile-fd-")
            #expect(held.isEmpty, "descriptors still open on the peer's file: \(held)")
        }
    }
}

extension DBusMessageBridgeTests {
    /// This process's open descriptors whose file's path holds `text`, as "fd -> path".
    static func descriptorsNaming(_ text: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { name in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"), target.contains(text) else {
                return nil
            }
            return "\(name) -> \(target)"
        }
    }

    @Test(
        "Issue 28 item 1: the writer refuses a hand-built value no D-Bus message can carry (a NUL in a string, a bad object path, an i in an as, an empty structure, variants 100 deep, a dictionary keyed by a variant, a missing fd) with a typed error, and writes the rest",
        .requires(.dbusDaemon, .libsystemd)
    )
    func writerRefusesWhatDBusCannotCarry() throws {
        try Self.withService { service, _, _ in
            var deep = DBusValue.int32(1)
            for _ in 0..<100 { deep = .variant(deep) }
            let refused: [(DBusValue, DBusValueError.Code)] = [
                (.string("a\u{0}b"), .invalidString),
                (.objectPath("/not//a/path"), .invalidString),
                (.signature("a{vs}"), .invalidString),
                (.array(.string, [.string("x"), .int32(1)]), .typeMismatch),
                (.structure([]), .typeMismatch),
                (deep, .tooDeep),
                (.dictionary(key: .variant, value: .string, []), .invalidSignature),
                (.unixFD(0), .unmappable),
            ]
            for (value, code) in refused {
                let message = try #require(service.newCall())
                defer { baton_sd_bus_message_unref(message) }
                let error = #expect(throws: DBusValueError.self) {
                    try DBusMessageWriter().append([.string("first"), value], to: message)
                }
                #expect(error?.code == code, "\(value.type): \(String(describing: error))")
                #expect(error?.keyPath?.description.hasPrefix("arguments[1]") == true, "\(String(describing: error))")
            }
            let message = try #require(service.newCall())
            defer { baton_sd_bus_message_unref(message) }
            var shallow = DBusValue.int32(1)
            for _ in 0..<64 { shallow = .variant(shallow) }
            let values: [DBusValue] = [
                shallow, .bytes(Data()), .array(.string, []), .dictionary(key: .string, value: .variant, []),
                .structure([.objectPath("/a/b"), .signature("a{sv}")]),
            ]
            try DBusMessageWriter().append(values, to: message)
            #expect(DBusMessageReader.signature(of: message) == "vayasa{sv}(og)")
        }
    }
}
