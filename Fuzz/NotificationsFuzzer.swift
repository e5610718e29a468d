// libFuzzer entry point for what the desktop's notification server says over D-Bus (issue 16 part 2): the id in the
// answer to `Notify` (or its failure), `ActionInvoked` (an id and an action key), `NotificationClosed` (an id and a
// reason), the bus's `NameOwnerChanged` for org.freedesktop.Notifications, and the connection coming and going, as
// NotificationBus reads them (sd-bus checks the wire types; the values are the server's choice: any process on the
// session bus can own the name) and NearbyNotifications interprets them, mixed with the nearby offers changing.
//
// Compiled together with BatonCore's sources and NearbyNotifications.swift (the pure state machine; the bus adapter
// needs libsystemd) into one module by scripts/fuzz.sh dbus (not part of the package build: a fuzzer has no `main`).
// The events are dispatched as NearbyNotifier does. A trap, a sanitizer report, or an action the server's answers do
// not justify stops the fuzzer with the input saved: an id closed or replaced that this server never gave (it could be
// another program's notification), a Continue for a device that offers nothing or without the person choosing it, a
// `Notify` while not connected or after stop, a reused token, text from another device with bidirectional controls in
// the summary or markup in the body, a wake in the past.

@_cdecl("LLVMFuzzerTestOneInput")
public func notificationsFuzzerTestOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    var run = NotificationRun(Array(UnsafeBufferPointer(start: start, count: count))[...])
    run.run()
    return 0
}

struct NotificationRun {
    var input: ArraySlice<UInt8>
    var machine = NearbyNotifications()
    var now: UInt64 = 10_000
    /// The connection as the bus adapter knows it: a `connect` asked and not answered; connected; stopped.
    var connecting = false
    var connected = false
    var stopped = false
    /// Tokens of every `Notify` sent, in order; the ids this server gave (forgotten when it goes or the bus does).
    var tokens: [UInt64] = []
    var givenIDs: Set<UInt32> = []
    /// The devices offering now.
    var offered: Set<String> = []
    static let devices = ["MFRGGZDF", "GEZDGNBV", "ONXW2ZJA", "MZXW6YTB"]

    init(_ input: ArraySlice<UInt8>) {
        self.input = input
    }

    mutating func byte() -> UInt8 { input.popFirst() ?? 0 }

    mutating func number(_ count: Int) -> UInt64 {
        (0..<count).reduce(0) { value, _ in value << 8 | UInt64(byte()) }
    }

    /// Up to 31 bytes of the input as text (invalid UTF-8 becomes U+FFFD): titles, names, keys.
    mutating func text() -> String {
        let length = Int(byte() % 32)
        let bytes = input.prefix(length)
        input = input.dropFirst(length)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An id as a server might answer: one it gave already, or any.
    mutating func id() -> UInt32 {
        let choice = byte()
        if choice & 1 == 0, !givenIDs.isEmpty {
            return givenIDs.sorted()[Int(choice / 2) % givenIDs.count]
        }
        return UInt32(truncatingIfNeeded: number(choice & 2 == 0 ? 1 : 4))
    }

    /// A token as a server's answer would carry it (NotificationBus answers each `Notify` it sent, once): one sent,
    /// or any.
    mutating func token() -> UInt64 {
        let choice = byte()
        if choice & 1 == 0, !tokens.isEmpty { return tokens[Int(choice / 2) % tokens.count] }
        return number(1)
    }

    mutating func run() {
        perform(machine.start())
        while let op = input.popFirst() {
            switch op % 12 {
            case 0:
                var offers: [NearbyNotifications.Offer] = []
                for _ in 0..<Int(byte() % 5) {
                    let device = Self.devices[Int(byte() % 4)]
                    offers.append(
                        NearbyNotifications.Offer(
                            device: device, deviceName: text(), sequence: number(1), title: text(), appName: text(), icon: "icon"
                        )
                    )
                }
                // As the agent lists them: one offer per device (the table holds one per device).
                var seen: Set<String> = []
                offers = offers.filter { seen.insert($0.device).inserted }
                if !stopped { offered = Set(offers.map(\.device)) }
                perform(machine.offersChanged(offers))
            case 1:
                let wasConnecting = connecting && !stopped
                let actions = machine.connected(now: now)
                if wasConnecting {
                    connecting = false
                    connected = true
                }
                perform(actions)
            case 2:
                if connecting { connecting = false }
                perform(machine.connectFailed(now: now))
            case 3:
                // The machine ignores it once stopped: the bus adapter is then finishing.
                if (connected || connecting) && !stopped {
                    forgetServer()
                    connected = false
                    connecting = false
                }
                perform(machine.disconnected(now: now))
            case 4:
                let token = token()
                let id = id()
                // Answered by this server: its id is now one of ours to close or replace.
                if tokens.contains(token) { givenIDs.insert(id) }
                perform(machine.notified(token: token, id: id, now: now))
            case 5:
                perform(machine.notifyFailed(token: token(), byte() & 1 == 0 ? .noServer : .refused, now: now))
            case 6:
                let id = id()
                let choice = byte() % 3
                let key = choice == 0 ? "continue" : choice == 1 ? "default" : text()
                let actions = machine.actionInvoked(id: id, key: key)
                for action in actions {
                    guard case .continueHere(let device) = action else { preconditionFailure("\(action) for an action") }
                    precondition(key == "continue" || key == "default", "continued for the action key \(key.debugDescription)")
                    precondition(givenIDs.contains(id), "continued from id \(id), which the server never gave")
                    precondition(offered.contains(device) && !stopped, "continued \(device), which offers nothing")
                }
                perform(actions, continuing: true)
            case 7:
                precondition(machine.closedByServer(id: id()).isEmpty, "a closed notification asked for something")
            case 8:
                // NameOwnerChanged, dispatched as NearbyNotifier does.
                let hadOwner = byte() & 1 == 1
                let hasOwner = byte() & 1 == 1
                if hadOwner { forgetServer() }
                perform(machine.serverChanged(hadOwner: hadOwner, hasOwner: hasOwner))
            case 9:
                now += number(2) * 10
                perform(machine.timePassed(now: now))
            case 10:
                perform(machine.continueFailed(device: Self.devices[Int(byte() % 4)], message: text()))
            default:
                // Stopping is rare: most inputs should keep the machine running.
                guard byte() == 0xA5 else { break }
                let wasConnected = connected
                stopped = true
                connecting = false
                offered = []
                let actions = machine.stop()
                precondition(wasConnected || actions.isEmpty, "closes sent at stop with no connection")
                perform(actions)
            }
        }
    }

    /// The server went (or the bus): its ids mean nothing now.
    mutating func forgetServer() {
        givenIDs = []
    }

    /// Checks and follows what the machine asks; `continuing`: the person chose an action (checked by the caller).
    mutating func perform(_ actions: [NearbyNotifications.Action], continuing: Bool = false) {
        for action in actions {
            switch action {
            case .connect:
                precondition(!connected && !connecting && !stopped, "connect while connected, connecting or stopped")
                connecting = true
            case .notify(let token, let replacing, let notice):
                precondition(connected && !stopped, "Notify while not connected")
                precondition(token > (tokens.last ?? 0), "token \(token) reused")
                tokens.append(token)
                if let replacing { precondition(givenIDs.contains(replacing), "replaced \(replacing), which the server never gave") }
                precondition(notice.summary.neutralizingBidiControls() == notice.summary, "a bidi control in a summary")
                precondition(notice.body.neutralizingBidiControls() == notice.body, "a bidi control in a body")
                precondition(!notice.body.contains("<") && !notice.body.contains(">"), "markup in a body: \(notice.body.debugDescription)")
                precondition(notice.actions.count % 2 == 0, "an action without a label")
            case .close(let id):
                precondition(connected, "close while not connected")
                precondition(givenIDs.contains(id), "closed \(id), which the server never gave")
            case .continueHere:
                precondition(continuing, "a Continue nobody chose")
            case .wake(let at):
                precondition(at >= now && !connected && !stopped, "a wake at \(at) at \(now)")
            }
        }
    }
}
