import BatonClient
import BatonDBus
import BatonDBusMessages
import BatonNotifications
import CSystemd
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// The agent's D-Bus interface for apps on the session bus, through sd-bus (issue 28 item 1; docs/PROTOCOL.md §11): the
/// thin adapter under ``DBusAppConduit``. It owns `org.baton.Agent`, exports `/org/baton/Agent1` with one callback for
/// every call there (dispatched on the member), and makes each sender that registers one more app connection of the
/// agent: an ``IPCConnection`` over a ``DBusAppConduit``, handed to the agent's ``IPCHandler`` as the Unix socket's are.
///
/// As the media players' bus does, it keeps its connection on a thread of its own (``SessionBusThread``: sd-bus blocks
/// and is not thread-safe). A call is read there, bounded (``DBusMessageReader``: the method's signature first, then
/// the mapping's limits), kept referenced under a number until the machine answers it, and handed to the sender's
/// conduit. A new sender is asked of the bus (`GetConnectionCredentials`: its uid, pid and, where dbus-daemon gives
/// one, a pidfd) before its `Register` goes on; `NameOwnerChanged` says when a sender has left (A9). Calls on an app go
/// to its unique name: without a reply (NO_REPLY_EXPECTED), or asynchronously (`Save`, `Continue`), the answer handed
/// back to its conduit.
///
/// `@unchecked Sendable`: `bus`, `slots`, `clients`, `calls`, `received` and `awaited` are touched only on the bus
/// thread; the queue is the ``SessionBusThread``'s; the rest is set in `init`.
final class DBusAppBus: @unchecked Sendable {
    enum Command: Sendable {
        case connect
        /// Answer the app's call `call` (kept referenced until now). `descriptors` are what the values' `h` index
        /// (a stream's ends, F2): sd-bus sends duplicates, and the bus thread closes these once sent (or not).
        case reply(call: UInt64, [DBusValue], descriptors: [Int32] = [])
        case error(call: UInt64, name: String, message: String)
        /// Call `member` of `org.baton.App1` at `destination` (a unique name); `descriptors` as for ``reply``.
        case callApp(
            destination: String, member: String, arguments: [DBusValue], expecting: UInt64?, timeoutMilliseconds: UInt64, descriptors: [Int32] = []
        )
        /// The agent closed the connection of `sender` made by that conduit: its next Register makes a new one.
        case forget(sender: String, conduit: ObjectIdentifier)
    }

    /// How it went, for the service's log.
    enum Event: Sendable {
        case serving(String)
        case unavailable(String)
    }

    private let address: String
    private let handler: IPCHandler
    private let loop: EventLoop
    private let onEvent: @Sendable (Event) -> Void
    private let thread: SessionBusThread<Command>
    private let reader = DBusMessageReader()
    // The bus thread's own.
    private var bus: OpaquePointer?
    private var slots: [OpaquePointer] = []
    /// Each registered (or registering) sender's conduit, by unique name.
    private var clients: [String: DBusAppConduit] = [:]
    /// Calls waiting for an answer, referenced, with their sender.
    private var calls: [UInt64: (message: OpaquePointer, sender: String)] = [:]
    private var nextCall: UInt64 = 1
    /// Method calls to `/org/baton/Agent1` taken from sd-bus's callback, handled after it returns.
    private var received: [OpaquePointer] = []
    /// The answers awaited (each an ``Answer`` retained for sd-bus): released by ``answered``, or at ``disconnect()``,
    /// where sd-bus frees its pending calls without calling back.
    private var awaited = Set<UnsafeMutableRawPointer>()

    /// An adapter for the bus at `address` whose apps are `handler`'s connections on `loop`; nothing happens before
    /// ``start()``.
    init(address: String, handler: IPCHandler, loop: EventLoop, onEvent: @escaping @Sendable (Event) -> Void) throws(NotificationBusError) {
        self.address = address
        self.handler = handler
        self.loop = loop
        self.onEvent = onEvent
        thread = try SessionBusThread()
    }

    func start() throws(NotificationBusError) {
        try thread.start(named: "baton-dbus-apps") { [self] in run() }
    }

    func send(_ command: Command) {
        thread.send(command)
    }

    /// Closes every app's connection and the bus, and ends the thread; returns when it has.
    func finish() async {
        await thread.finish()
    }

    // MARK: The bus thread

    private func run() {
        thread.run(perform: perform, process: processIncoming, bus: { bus }, close: disconnect)
    }

    private func perform(_ command: Command) {
        switch command {
        case .connect:
            connect()
        case .reply(let call, let values, let descriptors):
            defer { for descriptor in descriptors { close(descriptor) } }
            guard let (message, _) = calls.removeValue(forKey: call) else { return }
            defer { baton_sd_bus_message_unref(message) }
            do {
                try DBusMethodReply.send(values, to: message, descriptors: descriptors)
            } catch {
                DBusMethodReply.sendError(DBusAppInterface.Error.failed, "the answer cannot be written: \(error)", to: message)
            }
        case .error(let call, let name, let text):
            guard let (message, _) = calls.removeValue(forKey: call) else { return }
            DBusMethodReply.sendError(name, text, to: message)
            baton_sd_bus_message_unref(message)
        case .callApp(let destination, let member, let arguments, let expecting, let timeout, let descriptors):
            defer { for descriptor in descriptors { close(descriptor) } }
            callApp(destination, member, arguments, expecting: expecting, timeoutMilliseconds: timeout, descriptors: descriptors)
        case .forget(let sender, let conduit):
            if let client = clients[sender], ObjectIdentifier(client) == conduit { clients[sender] = nil }
        }
    }

    private func connect() {
        guard bus == nil else { return }
        let opened: OpaquePointer
        do {
            opened = try SessionBus.open(address, purpose: "the D-Bus interface for apps")
        } catch {
            return onEvent(.unavailable(error.message))
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        var slot: OpaquePointer?
        var result = baton_sd_bus_add_object(opened, &slot, DBusAppInterface.path, Self.methodCall, me)
        if let slot { slots.append(slot) }
        if result >= 0 {
            var match: OpaquePointer?
            result = baton_sd_bus_add_match(opened, &match, Self.ownerChangedRule, Self.nameOwnerChanged, me)
            if let match { slots.append(match) }
        }
        guard result >= 0 else {
            bus = opened
            disconnect()
            return onEvent(.unavailable("cannot export \(DBusAppInterface.path): \(String(cString: strerror(-result)))"))
        }
        // Flags 0: fail when another connection owns the name (another agent of this session), never queue for it.
        let owned = baton_sd_bus_request_name(opened, DBusAppInterface.busName, 0)
        bus = opened
        guard owned >= 0 else {
            disconnect()
            let why = owned == -EEXIST ? "another agent owns it already" : String(cString: strerror(-owned))
            return onEvent(.unavailable("cannot own \(DBusAppInterface.busName) on \(address): \(why)"))
        }
        onEvent(.serving("apps on the session bus register at \(DBusAppInterface.busName) \(DBusAppInterface.path)"))
    }

    private func disconnect() {
        for message in received { baton_sd_bus_message_unref(message) }
        received = []
        for (message, _) in calls.values { baton_sd_bus_message_unref(message) }
        calls = [:]
        for client in clients.values { client.appLeft() }
        clients = [:]
        for slot in slots { baton_sd_bus_slot_unref(slot) }
        slots = []
        if let bus { baton_sd_bus_flush_close_unref(bus) }
        bus = nil
        for answer in awaited { Unmanaged<Answer>.fromOpaque(answer).release() }
        awaited = []
    }

    private func processIncoming() {
        while let bus {
            let result = baton_sd_bus_process(bus, nil)
            let calls = received
            received = []
            for message in calls {
                handle(message)
                baton_sd_bus_message_unref(message)
            }
            if result < 0 || baton_sd_bus_is_open(bus) <= 0 {
                disconnect()
                return onEvent(.unavailable("the session bus went away"))
            }
            if result == 0 && received.isEmpty { break }
        }
    }

    // MARK: The apps' calls (on the bus thread)

    /// One method call to `/org/baton/Agent1`.
    private func handle(_ message: OpaquePointer) {
        let header = DBusMessageHeader(message)
        guard header.kind == .methodCall, let member = header.member, let sender = header.sender else { return }
        if header.interface == DBusAppInterface.introspectable || (header.interface == nil && member == "Introspect") {
            guard member == "Introspect" else { return unknown(member, message) }
            _ = try? DBusMethodReply.send([.string(DBusAppInterface.introspection)], to: message)
            return
        }
        guard header.interface == nil || header.interface == DBusAppInterface.interface, let signature = DBusAppInterface.signatures[member] else {
            return unknown(member, message)
        }
        let arguments: DBusMessageArguments
        do {
            arguments = try reader.arguments(of: message, expecting: try DBusSignature(signature))
        } catch {
            DBusMethodReply.sendError(DBusAppInterface.Error.invalidArgs, "\(member): \(error)", to: message)
            return
        }
        let conduit: DBusAppConduit
        // A connection the agent closed (a refused Register) whose `forget` is still queued is not this sender's any more.
        if let known = clients[sender], known.isActive {
            conduit = known
        } else {
            guard member == "Register" else {
                DBusMethodReply.sendError(DBusAppInterface.Error.accessDenied, "call Register first: \(member) is for a registered app only", to: message)
                return
            }
            guard let made = connection(for: sender, message) else { return }
            conduit = made
        }
        let call = nextCall
        nextCall += 1
        calls[call] = (baton_sd_bus_message_ref(message) ?? message, sender)
        conduit.input(.call(call, member: member, arguments: arguments.values))
    }

    private func unknown(_ member: String, _ message: OpaquePointer) {
        DBusMethodReply.sendError(
            DBusAppInterface.Error.unknownMethod,
            "\(DBusAppInterface.path) has no method \(member) (its interfaces: \(DBusAppInterface.interface), \(DBusAppInterface.introspectable))",
            to: message
        )
    }

    /// A new app connection for `sender`, who the bus says it is (§11 "Identity"): its uid, its pid, and its pidfd
    /// where the bus gives one, read at once with the process's start time and executable (``ProcessStamp``).
    private func connection(for sender: String, _ message: OpaquePointer) -> DBusAppConduit? {
        guard let bus, let who = DBusCredentials.ask(bus, about: sender, reader: reader) else {
            DBusMethodReply.sendError(DBusAppInterface.Error.accessDenied, "the bus cannot say who \(sender) is", to: message)
            return nil
        }
        let credentials = PeerCredentials(pid: who.pid, uid: who.uid, gid: who.gid)
        let pinned = who.processFD.map { PinnedProcess.adopting($0, pid: who.pid) }
        let conduit = DBusAppConduit(sender: sender, credentials: credentials, eventLoop: loop) { [weak self] command in self?.send(command) }
        let connection = IPCConnection(conduit: conduit, credentials: credentials, handler: handler, pinned: pinned)
        conduit.attach(connection)
        clients[sender] = conduit
        return conduit
    }

    /// sd-bus's callback for every call to `/org/baton/Agent1`: kept, and handled once `sd_bus_process` returns (no
    /// blocking call is made from inside it).
    private static let methodCall: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let bus = Unmanaged<DBusAppBus>.fromOpaque(userdata).takeUnretainedValue()
        if let kept = baton_sd_bus_message_ref(message) { bus.received.append(kept) }
        return 1
    }

    static let ownerChangedRule =
        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'"

    /// A unique name gone from the bus: that app has left (A9): its connection closes, its calls go unanswered.
    private static let nameOwnerChanged: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        var names: [String] = []
        while names.count < 3, case (.string(let name), _)? = try? DBusMessageReader().nextArgument(of: message) { names.append(name) }
        guard names.count == 3, names[2].isEmpty, names[0] == names[1] else { return 0 }
        let name = names[0]
        let bus = Unmanaged<DBusAppBus>.fromOpaque(userdata).takeUnretainedValue()
        guard let client = bus.clients.removeValue(forKey: name) else { return 0 }
        for (call, waiting) in bus.calls where waiting.sender == name {
            baton_sd_bus_message_unref(waiting.message)
            bus.calls[call] = nil
        }
        client.appLeft()
        return 0
    }

    // MARK: Calls on an app (on the bus thread)

    private func callApp(
        _ destination: String, _ member: String, _ arguments: [DBusValue], expecting: UInt64?, timeoutMilliseconds: UInt64, descriptors: [Int32]
    ) {
        let failed: @Sendable (String, String) -> Void = { [weak self] name, text in
            guard let expecting, let client = self?.clients[destination] else { return }
            client.input(.answerFailed(expecting, name: name, message: text))
        }
        guard let bus else { return failed(DBusAppInterface.Error.failed, "not connected to the session bus") }
        var message: OpaquePointer?
        let made = baton_sd_bus_message_new_method_call(bus, &message, destination, DBusAppInterface.appPath, DBusAppInterface.appInterface, member)
        guard made >= 0, let message else { return failed(DBusAppInterface.Error.failed, "cannot make the call \(member): \(String(cString: strerror(-made)))") }
        defer { baton_sd_bus_message_unref(message) }
        do {
            try DBusMessageWriter().append(arguments, to: message, descriptors: descriptors)
        } catch {
            return failed(DBusAppInterface.Error.failed, "cannot write \(member)'s arguments: \(error)")
        }
        guard let expecting else {
            _ = baton_sd_bus_message_set_expect_reply(message, 0)
            _ = baton_sd_bus_send(bus, message, nil)
            return
        }
        let answer = Unmanaged.passRetained(Answer(bus: self, sender: destination, outgoing: expecting)).toOpaque()
        let sent = baton_sd_bus_call_async(bus, nil, message, Self.answered, answer, max(timeoutMilliseconds, 1) * 1_000)
        if sent >= 0 {
            awaited.insert(answer)
        } else {
            Unmanaged<Answer>.fromOpaque(answer).release()
            failed(DBusAppInterface.Error.failed, "cannot call \(member): \(String(cString: strerror(-sent)))")
        }
    }

    /// Which call on which app an answer is for: passed through sd-bus's one pointer, released by ``answered``.
    private final class Answer {
        unowned let bus: DBusAppBus
        let sender: String
        let outgoing: UInt64

        init(bus: DBusAppBus, sender: String, outgoing: UInt64) {
            self.bus = bus
            self.sender = sender
            self.outgoing = outgoing
        }
    }

    /// An app's answer (or sd-bus's error when none came in time), read bounded and handed to its conduit.
    private static let answered: sd_bus_message_handler_t = { message, userdata, _ in
        guard let userdata else { return 0 }
        let answer = Unmanaged<Answer>.fromOpaque(userdata).takeRetainedValue()
        answer.bus.awaited.remove(userdata)
        guard let message, let client = answer.bus.clients[answer.sender] else { return 0 }
        if let error = baton_sd_bus_message_get_error(message) {
            let name = error.pointee.name.map { String(cString: $0) } ?? DBusAppInterface.Error.failed
            let text = error.pointee.message.map { String(cString: $0) } ?? ""
            client.input(.answerFailed(answer.outgoing, name: name, message: String(text.prefix(4_096))))
            return 0
        }
        do {
            let values = try answer.bus.reader.arguments(of: message).values
            client.input(.answered(answer.outgoing, values: values))
        } catch {
            client.input(.answerFailed(answer.outgoing, name: DBusAppInterface.Error.invalidArgs, message: "\(error)"))
        }
        return 0
    }
}
