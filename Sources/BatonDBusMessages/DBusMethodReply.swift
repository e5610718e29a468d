import BatonCore
import BatonDBus
import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// Answers to a method call received through sd-bus (issue 28 item 1): a return carrying ``DBusValue``s, or a D-Bus
/// error. On the thread that owns the call's bus.
public enum DBusMethodReply {
    /// Sends `call`'s return, holding `values` (``DBusValue/unixFD(_:)`` indexing `descriptors`, which sd-bus
    /// duplicates; the caller keeps its own). Nothing is sent when a value cannot be written.
    /// - Throws: ``DBusValueError``: the writer's refusal, or `messageFailed` when sd-bus cannot build or send it.
    public static func send(
        _ values: [DBusValue],
        to call: OpaquePointer,
        descriptors: [Int32] = [],
        writer: DBusMessageWriter = DBusMessageWriter()
    ) throws(DBusValueError) {
        var reply: OpaquePointer?
        let made = baton_sd_bus_message_new_method_return(call, &reply)
        guard made >= 0, let reply else { throw .sdBus("cannot make a method return", made) }
        defer { baton_sd_bus_message_unref(reply) }
        try writer.append(values, to: reply, descriptors: descriptors)
        let sent = baton_sd_bus_send(nil, reply, nil)
        guard sent >= 0 else { throw .sdBus("cannot send a method return", sent) }
    }

    /// Sends `call` the D-Bus error `name` (`org.example.Error.Refused`) with `message`, cut at 4,096 characters and
    /// any NUL dropped, so what an app sent (quoted in it) cannot make it long or cut it short.
    /// - Returns: sd-bus's result: 1 sent, a negative errno when it was not.
    @discardableResult
    public static func sendError(_ name: String, _ message: String, to call: OpaquePointer) -> Int32 {
        let text = String(String.UnicodeScalarView(message.unicodeScalars.lazy.filter { $0 != "\0" }.prefix(4_096)))
        return name.withCString { name in
            text.withCString { text in
                var error = sd_bus_error(name: name, message: text, _need_free: 0)
                let result = baton_sd_bus_reply_method_error(call, &error)
                return result >= 0 ? 1 : result
            }
        }
    }
}
