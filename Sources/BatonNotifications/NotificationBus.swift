import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// The freedesktop notification service (`org.freedesktop.Notifications` on the session bus), through sd-bus: the
/// thin adapter under ``NearbyNotifications`` (issue 16 part 2).
///
/// sd-bus blocks and is not thread-safe, so the connection lives on a thread of its own, never on Swift's cooperative
/// pool: it waits in `poll` on the bus's descriptor and an eventfd, runs ``Command``s queued by ``send(_:)`` (each
/// rings the eventfd), reads signals with `sd_bus_process`, and reports ``Event``s through `onEvent`, on that thread.
/// A `Notify` is a call with a 2 s deadline on that thread; a close is sent without waiting for its answer.
///
/// `@unchecked Sendable`: `bus` and `slots` are touched only on the bus thread; the queue and the finish state are the
/// ``SessionBusThread``'s; the rest is set in `init`.
final class NotificationBus: @unchecked Sendable {
    /// What the thread does next.
    enum Command: Sendable {
        case connect
        case notify(token: UInt64, replacing: UInt32?, NearbyNotifications.Notice)
        case close(UInt32)
    }

    /// What happened on the bus.
    enum Event: Sendable {
        case connected
        case connectFailed(NotificationBusError)
        case disconnected(NotificationBusError)
        case notified(token: UInt64, id: UInt32)
        case notifyFailed(token: UInt64, NearbyNotifications.NotifyFailure, String)
        case actionInvoked(id: UInt32, key: String)
        case closed(id: UInt32, reason: UInt32)
        /// `org.freedesktop.Notifications` changed hands: whether a process had it before, and whether one has it now.
        case serverChanged(hadOwner: Bool, hasOwner: Bool)
    }

    static let service = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"
    /// How long a `Notify` may take to be answered (a server answers in milliseconds; an activated one starts first).
    static let callTimeoutMicroseconds: UInt64 = 2_000_000

    private let address: String
    private let onEvent: @Sendable (Event) -> Void
    /// Commands for the thread; once ``finish()`` was called they are still taken (a `Notify` answered then is
    /// followed by its close) until none is left.
    private let thread: SessionBusThread<Command>
    // The bus thread's own.
    private var bus: OpaquePointer?
    private var slots: [OpaquePointer] = []

    /// An adapter for the bus at `address` (a D-Bus address, `unix:path=...`); nothing happens before ``start()``.
    /// - Throws: ``NotificationBusError/Code/busUnavailable`` when no eventfd can be made.
    init(address: String, onEvent: @escaping @Sendable (Event) -> Void) throws(NotificationBusError) {
        self.address = address
        self.onEvent = onEvent
        thread = try SessionBusThread()
    }

    /// Starts the bus thread.
    /// - Throws: ``NotificationBusError/Code/busUnavailable`` when no thread can be started.
    func start() throws(NotificationBusError) {
        try thread.start(named: "baton-dbus") { [self] in run() }
    }

    /// Queues `command` for the bus thread and wakes it; dropped once the thread has ended.
    func send(_ command: Command) {
        thread.send(command)
    }

    /// Runs what is queued (the last closes), flushes it out, closes the connection and ends the thread; returns when
    /// it has.
    func finish() async {
        await thread.finish()
    }

    // MARK: The bus thread

    private func run() {
        while true {
            let (commands, finishing) = thread.take()
            for command in commands { perform(command) }
            if thread.shouldEnd() { break }
            processIncoming()
            if !finishing { thread.waitForWork(bus: bus) }
        }
        if let bus { baton_sd_bus_flush(bus) }
        disconnect()
        thread.ended()
    }

    private func perform(_ command: Command) {
        switch command {
        case .connect: connect()
        case .notify(let token, let replacing, let notice): notify(token: token, replacing: replacing, notice)
        case .close(let id): closeNotification(id)
        }
    }

    private func connect() {
        guard bus == nil else { return onEvent(.connected) }
        let opened: OpaquePointer
        do {
            opened = try SessionBus.open(address)
        } catch {
            return onEvent(.connectFailed(error))
        }
        var result: Int32 = 0
        let me = Unmanaged.passUnretained(self).toOpaque()
        var subscribed: [OpaquePointer] = []
        for (member, handler) in [
            ("ActionInvoked", Self.actionInvoked), ("NotificationClosed", Self.notificationClosed),
        ] where result >= 0 {
            var slot: OpaquePointer?
            // No sender in the rule: the server's unique name is not known before it answers, and a restarted server
            // has another. Ids not ours are ignored by the state machine.
            result = baton_sd_bus_match_signal(opened, &slot, nil, Self.path, Self.service, member, handler, me)
            if let slot { subscribed.append(slot) }
        }
        if result >= 0 {
            var slot: OpaquePointer?
            result = baton_sd_bus_add_match(opened, &slot, Self.ownerChangedRule, Self.nameOwnerChanged, me)
            if let slot { subscribed.append(slot) }
        }
        guard result >= 0 else {
            for slot in subscribed { baton_sd_bus_slot_unref(slot) }
            baton_sd_bus_flush_close_unref(opened)
            return onEvent(.connectFailed(Self.error("cannot listen for the notification server's signals", result)))
        }
        bus = opened
        slots = subscribed
        onEvent(.connected)
    }

    private func disconnect() {
        for slot in slots { baton_sd_bus_slot_unref(slot) }
        slots = []
        if let bus { baton_sd_bus_flush_close_unref(bus) }
        bus = nil
    }

    /// The connection broke: forget it and say so.
    private func lost(_ result: Int32) {
        disconnect()
        onEvent(.disconnected(Self.error("the session bus went away", result)))
    }

    private func notify(token: UInt64, replacing: UInt32?, _ notice: NearbyNotifications.Notice) {
        guard let bus else { return onEvent(.notifyFailed(token: token, .refused, "not connected")) }
        var message: OpaquePointer?
        var result = baton_sd_bus_message_new_method_call(bus, &message, Self.service, Self.path, Self.service, "Notify")
        guard result >= 0, let message else {
            return onEvent(.notifyFailed(token: token, .refused, "cannot make the call (\(-result))"))
        }
        defer { baton_sd_bus_message_unref(message) }
        var replacesID = replacing ?? 0
        var expireTimeout: Int32 = -1  // the server's default
        result = Self.append(notice.appName, to: message)
        if result >= 0 { result = baton_sd_bus_message_append_basic(message, Self.type("u"), &replacesID) }
        for text in [notice.icon, notice.summary, notice.body] where result >= 0 {
            result = Self.append(text, to: message)
        }
        if result >= 0 { result = baton_sd_bus_message_open_container(message, Self.type("a"), "s") }
        for action in notice.actions where result >= 0 { result = Self.append(action, to: message) }
        if result >= 0 { result = baton_sd_bus_message_close_container(message) }
        if result >= 0 { result = baton_sd_bus_message_open_container(message, Self.type("a"), "{sv}") }
        if result >= 0 { result = baton_sd_bus_message_close_container(message) }
        if result >= 0 { result = baton_sd_bus_message_append_basic(message, Self.type("i"), &expireTimeout) }
        guard result >= 0 else {
            return onEvent(.notifyFailed(token: token, .refused, "cannot build the call (\(-result))"))
        }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        var reply: OpaquePointer?
        result = baton_sd_bus_call(bus, message, Self.callTimeoutMicroseconds, &error, &reply)
        defer {
            baton_sd_bus_error_free(&error)
            if let reply { baton_sd_bus_message_unref(reply) }
        }
        guard result >= 0, let reply else {
            let named = error.name.map { String(cString: $0) } ?? "errno \(-result)"
            let failure: NearbyNotifications.NotifyFailure =
                baton_sd_bus_error_has_name(&error, "org.freedesktop.DBus.Error.ServiceUnknown") > 0 ? .noServer : .refused
            onEvent(.notifyFailed(token: token, failure, named))
            if baton_sd_bus_is_open(bus) <= 0 { lost(result) }
            return
        }
        var id: UInt32 = 0
        guard baton_sd_bus_message_read_basic(reply, Self.type("u"), &id) > 0 else {
            return onEvent(.notifyFailed(token: token, .refused, "the answer to Notify has no id"))
        }
        onEvent(.notified(token: token, id: id))
    }

    private func closeNotification(_ id: UInt32) {
        guard let bus else { return }
        var message: OpaquePointer?
        guard
            baton_sd_bus_message_new_method_call(bus, &message, Self.service, Self.path, Self.service, "CloseNotification")
                >= 0, let message
        else { return }
        defer { baton_sd_bus_message_unref(message) }
        var closing = id
        guard baton_sd_bus_message_append_basic(message, Self.type("u"), &closing) >= 0 else { return }
        // Nothing waits for the answer: the server's NotificationClosed says it went.
        _ = baton_sd_bus_message_set_expect_reply(message, 0)
        let result = baton_sd_bus_send(bus, message, nil)
        if result < 0, baton_sd_bus_is_open(bus) <= 0 { lost(result) }
    }

    /// Handles every message read (signals go to the handlers); notices a connection that ended.
    private func processIncoming() {
        while let bus {
            let result = baton_sd_bus_process(bus, nil)
            if result < 0 { return lost(result) }
            if result == 0 { break }
        }
        if let bus, baton_sd_bus_is_open(bus) <= 0 { lost(-ECONNRESET) }
    }

    // MARK: Signals (on the bus thread, from sd_bus_process)

    private static let actionInvoked: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        var id: UInt32 = 0
        var key: UnsafePointer<CChar>?
        guard baton_sd_bus_message_read_basic(message, type("u"), &id) > 0,
            baton_sd_bus_message_read_basic(message, type("s"), &key) > 0, let key
        else { return 0 }
        Unmanaged<NotificationBus>.fromOpaque(userdata).takeUnretainedValue().onEvent(
            .actionInvoked(id: id, key: String(cString: key))
        )
        return 0
    }

    private static let notificationClosed: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        var id: UInt32 = 0
        var reason: UInt32 = 0
        guard baton_sd_bus_message_read_basic(message, type("u"), &id) > 0,
            baton_sd_bus_message_read_basic(message, type("u"), &reason) > 0
        else { return 0 }
        Unmanaged<NotificationBus>.fromOpaque(userdata).takeUnretainedValue().onEvent(.closed(id: id, reason: reason))
        return 0
    }

    /// The bus's own signal when a name changes hands, for the notification service's name only.
    static let ownerChangedRule =
        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
        + "member='NameOwnerChanged',arg0='\(service)'"

    private static let nameOwnerChanged: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        var name: UnsafePointer<CChar>?
        var old: UnsafePointer<CChar>?
        var new: UnsafePointer<CChar>?
        guard baton_sd_bus_message_read_basic(message, type("s"), &name) > 0,
            baton_sd_bus_message_read_basic(message, type("s"), &old) > 0,
            baton_sd_bus_message_read_basic(message, type("s"), &new) > 0, let name, let old, let new,
            String(cString: name) == service
        else { return 0 }
        let bus = Unmanaged<NotificationBus>.fromOpaque(userdata).takeUnretainedValue()
        bus.onEvent(.serverChanged(hadOwner: old.pointee != 0, hasOwner: new.pointee != 0))
        return 0
    }

    // MARK: Helpers

    private static func type(_ code: Unicode.Scalar) -> CChar {
        CChar(UInt8(ascii: code))
    }

    private static func append(_ text: String, to message: OpaquePointer) -> Int32 {
        text.withCString { baton_sd_bus_message_append_basic(message, type("s"), $0) }
    }

    private static func error(_ what: String, _ result: Int32) -> NotificationBusError {
        SessionBus.error(what, result)
    }
}
