import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The desktop's notification server as `GetServerInformation` describes it: what `baton doctor` shows (issue 16).
public struct NotificationServer: Sendable, Hashable {
    /// The server's name, vendor and version, and the version of the specification it implements.
    public var name: String
    public var vendor: String
    public var version: String
    public var specificationVersion: String

    /// The session bus the agent would use: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` when that socket
    /// exists; nil when there is neither (no desktop session, and no notifications).
    public static func sessionBusAddress(environment: [String: String], exists: (String) -> Bool) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        let socket = (runtime.hasSuffix("/") ? runtime : runtime + "/") + "bus"
        return exists(socket) ? "unix:path=\(socket)" : nil
    }

    /// The file sd-bus is loaded from: `BATON_LIBSYSTEMD` when set (another libsystemd, or a missing one in tests),
    /// else libsystemd's soname.
    public static func libraryFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let file = environment["BATON_LIBSYSTEMD"], !file.isEmpty { return file }
        return "libsystemd.so.0"
    }

    /// Why sd-bus cannot be used in this process (libsystemd is not installed, or too old), or nil when it can. It is
    /// loaded at run time (issue 24 part 1), so Baton builds without libsystemd-dev and runs without libsystemd0, with
    /// no desktop notifications; the first call loads it, and every later one gives the same answer.
    /// `purpose` ends the advice: what libsystemd0 is installed for.
    public static func libraryUnavailable(purpose: String = "desktop notifications") -> String? {
        var why = [CChar](repeating: 0, count: 512)
        let file = libraryFile()
        guard baton_sd_bus_load(file, &why, why.count) != 0 else { return nil }
        let reason = String(cString: why)
        return "cannot load \(file) (\(reason.isEmpty ? "not found" : reason)); install libsystemd0 for \(purpose)"
    }

    /// Asks the bus at `address` for the notification server (starting it, if the bus can): nil when there is none.
    /// Blocks for up to `timeoutMicroseconds`: call it from a thread of its own, never from Swift's cooperative pool.
    /// - Throws: ``NotificationBusError/Code/busUnavailable`` when the bus cannot be reached, or the server's answer is
    ///   not what the specification says.
    public static func find(
        onBusAt address: String,
        timeoutMicroseconds: UInt64 = 1_000_000
    ) throws(NotificationBusError) -> NotificationServer? {
        let bus = try SessionBus.open(address)
        defer { baton_sd_bus_flush_close_unref(bus) }
        var message: OpaquePointer?
        let made = baton_sd_bus_message_new_method_call(
            bus,
            &message,
            NotificationBus.service,
            NotificationBus.path,
            NotificationBus.service,
            "GetServerInformation"
        )
        guard made >= 0, let message else { throw NotificationBusError(.busUnavailable, "cannot make a call (\(-made))") }
        defer { baton_sd_bus_message_unref(message) }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        var reply: OpaquePointer?
        let result = baton_sd_bus_call(bus, message, timeoutMicroseconds, &error, &reply)
        defer {
            baton_sd_bus_error_free(&error)
            if let reply { baton_sd_bus_message_unref(reply) }
        }
        guard result >= 0, let reply else {
            if baton_sd_bus_error_has_name(&error, "org.freedesktop.DBus.Error.ServiceUnknown") > 0 { return nil }
            let named = error.name.map { String(cString: $0) } ?? String(cString: strerror(-result))
            throw NotificationBusError(.busUnavailable, "the notification server did not answer: \(named)")
        }
        var fields: [String] = []
        for _ in 0..<4 {
            var text: UnsafePointer<CChar>?
            guard baton_sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "s")), &text) > 0, let text else {
                throw NotificationBusError(
                    .busUnavailable,
                    "the notification server's GetServerInformation answer is not four strings"
                )
            }
            fields.append(String(cString: text))
        }
        return NotificationServer(
            name: fields[0],
            vendor: fields[1],
            version: fields[2],
            specificationVersion: fields[3]
        )
    }
}
