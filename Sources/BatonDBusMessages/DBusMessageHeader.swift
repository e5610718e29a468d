import CSystemd

/// What an sd-bus message's header says: who sent it, to which object, interface and member, with which arguments'
/// signature. sd-bus checked each field's syntax when the message arrived; a field the message lacks is nil.
public struct DBusMessageHeader: Sendable, Hashable {
    /// The message's type, as D-Bus numbers it.
    public enum Kind: UInt8, Sendable {
        case methodCall = 1
        case methodReturn = 2
        case error = 3
        case signal = 4
    }

    /// The message's type; nil for a type D-Bus does not define.
    public var kind: Kind?
    /// The sender's unique name (`:1.42`), as the bus daemon stamped it.
    public var sender: String?
    public var destination: String?
    public var path: String?
    public var interface: String?
    public var member: String?
    /// The whole body's signature, "" for none.
    public var signature: String

    /// The header of `message` (on its bus's thread).
    public init(_ message: OpaquePointer) {
        var type: UInt8 = 0
        kind = baton_sd_bus_message_get_type(message, &type) >= 0 ? Kind(rawValue: type) : nil
        sender = baton_sd_bus_message_get_sender(message).map { String(cString: $0) }
        destination = baton_sd_bus_message_get_destination(message).map { String(cString: $0) }
        path = baton_sd_bus_message_get_path(message).map { String(cString: $0) }
        interface = baton_sd_bus_message_get_interface(message).map { String(cString: $0) }
        member = baton_sd_bus_message_get_member(message).map { String(cString: $0) }
        signature = DBusMessageReader.signature(of: message)
    }
}
