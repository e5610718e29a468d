import BatonDBus
import BatonDBusMessages
import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// Who a sender on the session bus is, as the bus daemon says (`org.freedesktop.DBus.GetConnectionCredentials`),
/// never as the sender says (issue 28 item 1; docs/PROTOCOL.md §11 "Identity"): the bus's `SO_PEERCRED` of its
/// connection, as the agent's socket reads its own peer's.
struct DBusCredentials: Sendable {
    var uid: UInt32
    var pid: Int32
    /// The first group, where the bus says (nothing checks it).
    var gid: UInt32
    /// A pidfd of the sender's process, where dbus-daemon gives one (`ProcessFD`, dbus 1.15.2): the caller's to close.
    var processFD: Int32?

    /// How long the bus daemon is given to answer.
    static let timeoutMicroseconds: UInt64 = 2_000_000

    /// Asks the bus about `sender` (a unique name), on the bus's thread; nil when it cannot say (the sender has left).
    static func ask(_ bus: OpaquePointer, about sender: String, reader: DBusMessageReader) -> DBusCredentials? {
        var message: OpaquePointer?
        var result = baton_sd_bus_message_new_method_call(
            bus, &message, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionCredentials"
        )
        guard result >= 0, let message else { return nil }
        defer { baton_sd_bus_message_unref(message) }
        result = sender.withCString { baton_sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { baton_sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        if result >= 0 { result = baton_sd_bus_call(bus, message, timeoutMicroseconds, &error, &reply) }
        guard result >= 0, let reply else { return nil }
        defer { baton_sd_bus_message_unref(reply) }
        guard let arguments = try? reader.arguments(of: reply, expecting: try DBusSignature("a{sv}")),
            case .dictionary(_, _, let entries)? = arguments.values.first
        else { return nil }
        var uid: UInt32?
        var pid: UInt32?
        var gid = UInt32.max
        var processFD: Int32?
        for entry in entries {
            guard case .string(let key) = entry.key, case .variant(let value) = entry.value else { continue }
            switch (key, value) {
            case ("UnixUserID", .uint32(let value)): uid = value
            case ("ProcessID", .uint32(let value)): pid = value
            case ("UnixGroupIDs", .array(_, let groups)): if case .uint32(let first)? = groups.first { gid = first }
            case ("ProcessFD", .unixFD(let index)): processFD = arguments.descriptors.take(index)
            default: continue
            }
        }
        guard let uid, let pid, let signed = Int32(exactly: pid), signed > 0 else {
            if let processFD { close(processFD) }
            return nil
        }
        return DBusCredentials(uid: uid, pid: signed, gid: gid, processFD: processFD)
    }
}
