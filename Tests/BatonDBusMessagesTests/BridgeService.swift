import BatonDBus
import BatonDBusMessages
import BatonNotifications
import BatonTestSupport
import CSystemd
import Foundation
import Testing

/// Baton's side of the bridge tests (issue 28 item 1): an object at `/org/baton/Test` on a private session bus, served
/// on the test's own thread through sd-bus, with the bridge reading each call and writing its reply.
///
/// - `Echo(anything)`: the arguments read as DBusValues and written back as they are; `First(anything)` the first one.
/// - `UserInfo(a{sv})`: read, mapped to a property list with BatonDBus and back, written as the reply;
///   `ShallowUserInfo(a{sv})` the same, read and mapped within a depth of 16.
/// A refusal is the D-Bus error `org.baton.Test.Error.<code>` (`dbusTooManyValues`...), with the message.
final class BridgeService {
    static let path = "/org/baton/Test"
    static let name = "org.baton.Test"
    let bus: OpaquePointer
    private var slot: OpaquePointer?
    let reader: DBusMessageReader
    /// Each call served: its member, the refusal's code (nil when answered), how long reading and answering took.
    private(set) var served: [(member: String, code: String?, seconds: Double)] = []
    /// For each fd an `Echo` read: whether the reader's duplicate was close-on-exec.
    private(set) var closeOnExec: [Bool] = []

    init(address: String, limits: DBusMappingLimits = .default) throws {
        bus = try SessionBus.open(address, purpose: "the sd-bus bridge tests")
        reader = DBusMessageReader(limits: limits)
        let result = baton_sd_bus_add_object(
            bus,
            &slot,
            Self.path,
            { message, userdata, _ in
                guard let message, let userdata else { return 0 }
                return Unmanaged<BridgeService>.fromOpaque(userdata).takeUnretainedValue().handle(message)
            },
            Unmanaged.passUnretained(self).toOpaque()
        )
        try #require(result >= 0, "sd_bus_add_object: \(result)")
        let named = baton_sd_bus_request_name(bus, Self.name, 0)
        try #require(named >= 0, "sd_bus_request_name: \(named)")
    }

    deinit {
        if let slot { baton_sd_bus_slot_unref(slot) }
        baton_sd_bus_flush_close_unref(bus)
    }

    /// A method call to nobody in particular, for building (the caller unrefs it).
    func newCall() -> OpaquePointer? {
        var message: OpaquePointer?
        guard
            baton_sd_bus_message_new_method_call(
                bus,
                &message,
                "org.baton.Nobody",
                Self.path,
                "org.baton.Test",
                "Nothing"
            ) >= 0
        else { return nil }
        return message
    }

    /// Serves calls until `peer` exits or `seconds` pass.
    func serve(until peer: Process, seconds: Double = 120) {
        let deadline = Date().addingTimeInterval(seconds)
        while peer.isRunning, Date() < deadline {
            while baton_sd_bus_process(bus, nil) > 0 {}
            var descriptor = pollfd(
                fd: baton_sd_bus_get_fd(bus),
                events: Int16(baton_sd_bus_get_events(bus)),
                revents: 0
            )
            _ = poll(&descriptor, 1, 20)
        }
        while baton_sd_bus_process(bus, nil) > 0 {}
    }

    private func handle(_ message: OpaquePointer) -> Int32 {
        let header = DBusMessageHeader(message)
        let member = header.member ?? ""
        let started = Date()
        do {
            let reply: [DBusValue]
            var descriptors: [Int32] = []
            switch member {
            case "Echo":
                let arguments = try reader.arguments(of: message)
                descriptors = (0..<UInt32(arguments.descriptors.count)).compactMap { arguments.descriptors.take($0) }
                closeOnExec += descriptors.map { fcntl($0, F_GETFD) & FD_CLOEXEC != 0 }
                reply = arguments.values
            case "First":
                reply = try reader.nextArgument(of: message).map { [$0.0] } ?? []
            case "UserInfo", "ShallowUserInfo":
                let reader =
                    member == "UserInfo" ? reader : DBusMessageReader(limits: DBusMappingLimits(maximumDepth: 16))
                let arguments = try reader.arguments(of: message, expecting: try DBusSignature("a{sv}"))
                let mapping = DBusPropertyListMapping(limits: reader.limits)
                let userInfo = try mapping.userInfo(from: arguments.values[0])
                reply = [try mapping.dbusValue(userInfo: userInfo)]
            default:
                return 0
            }
            defer { for descriptor in descriptors { close(descriptor) } }
            try DBusMethodReply.send(reply, to: message, descriptors: descriptors)
            served.append((member, nil, Date().timeIntervalSince(started)))
            return 1
        } catch let error as DBusValueError {
            served.append((member, error.code.name, Date().timeIntervalSince(started)))
            return DBusMethodReply.sendError("org.baton.Test.Error.\(error.code.name)", error.message, to: message)
        } catch {
            served.append((member, "untyped", Date().timeIntervalSince(started)))
            return DBusMethodReply.sendError("org.baton.Test.Error.untyped", "\(error)", to: message)
        }
    }

    /// The process's peak resident set so far, in MiB.
    static var peakMemory: Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss / 1024
    }
}
