import BatonClient
import BatonCore
import BatonDBus
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore

/// What an app on the session bus is connected to the agent by (issue 28 item 1; docs/PROTOCOL.md §11): the conduit of
/// its ``IPCConnection``, so a bus client is one more app connection and goes through the same code as the Unix
/// socket (the hello's checks, the coordinator, the broker). It translates: the app's calls become §7's messages,
/// handed to the connection as if read from a socket; what the agent sends (``send(_:)``) becomes answers and calls on
/// the app's `/org/baton/App1`. The translation is ``DBusAppSession``'s, a pure machine held under a lock here (the
/// bus thread and the agent's loop both feed it); what it decides is queued under that lock too, so it is carried
/// out in the order decided.
///
/// Sendable, checked: the machine and the close state are under their locks; the rest are `let`s.
final class DBusAppConduit: AppConduit {
    /// The app's unique name on the bus (`:1.42`): every call to it goes there, never to a well-known name.
    let sender: String
    let credentials: PeerCredentials
    let eventLoop: EventLoop
    let closeFuture: EventLoopFuture<Void>
    private let closing: EventLoopPromise<Void>
    /// Where bus work goes: the bus thread's queue (streams, F2 and F3, send their answers and calls with descriptors
    /// here).
    let bus: @Sendable (DBusAppBus.Command) -> Void
    private let session = NIOLockedValueBox(DBusAppSession())
    /// Streams offered to the app with `AcceptStream` and not yet answered, by token (``DBusStreamCalls``, F3).
    let offeredStreams = NIOLockedValueBox<[Data: DBusStream]>([:])
    /// `refused`: the agent refused the app's Register; it closes the connection next, and the bus gives a Register
    /// that comes before it has a new connection.
    private let state = NIOLockedValueBox<(sink: MessageSink?, closed: Bool, refused: Bool)>((nil, false, false))

    init(sender: String, credentials: PeerCredentials, eventLoop: EventLoop, bus: @escaping @Sendable (DBusAppBus.Command) -> Void) {
        self.sender = sender
        self.credentials = credentials
        self.eventLoop = eventLoop
        self.bus = bus
        closing = eventLoop.makePromise()
        closeFuture = closing.futureResult
    }

    deinit { closing.succeed() }

    var isActive: Bool { state.withLockedValue { !$0.closed && !$0.refused } }
    /// The bus daemon queues what the app has not read; sd-bus bounds its own queue.
    var isWritable: Bool { true }

    func peerCredentials() -> EventLoopFuture<PeerCredentials> {
        eventLoop.makeSucceededFuture(credentials)
    }

    func attach(_ sink: MessageSink) {
        state.withLockedValue { $0.sink = sink }
    }

    /// The agent's connection for this app, while open (its identity says which app it registered as).
    var connection: IPCConnection? {
        state.withLockedValue { $0.closed ? nil : $0.sink as? IPCConnection }
    }

    /// A message from the agent to the app.
    func send(_ message: PropertyList) {
        guard let message = try? IPCMessage(message) else { return }
        // Before the app can hear the refusal: an app that registers again at once (§11 "Identity") reaches a new
        // connection, not this one, whose close would answer that Register "the agent closed this app's connection".
        if case .refused = message { state.withLockedValue { $0.refused = true } }
        input(.agent(message))
    }

    /// Streams cross the bus as file descriptors (helper 52's `DBusStream*`), never as frames on this conduit.
    func write(_ frame: OutboundFrame) -> EventLoopFuture<Void> {
        eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
    }

    func setReading(_ reading: Bool) {}

    /// The agent closes the connection (after `refused`, or when it stops): the bus forgets this app's connection; a
    /// later Register makes a new one.
    func close() {
        guard end() else { return }
        bus(.forget(sender: sender, conduit: ObjectIdentifier(self)))
    }

    /// The app left the bus (A9): the connection closes, as a socket's would.
    func appLeft() {
        _ = end()
    }

    /// Something for the machine, from the bus thread (the app's calls and answers) or the agent's loop; what it
    /// decides is queued, in order, under the machine's lock.
    func input(_ input: DBusAppSession.Input) {
        session.withLockedValue { session in
            for action in session.handle(input) { perform(action) }
        }
    }

    private func perform(_ action: DBusAppSession.Action) {
        switch action {
        case .toAgent(let message):
            // On the agent's loop, in order, as a socket's frames are read.
            eventLoop.execute { [self] in
                guard let sink = state.withLockedValue({ $0.closed ? nil : $0.sink }) else { return }
                sink.received(message.propertyList)
            }
        case .reply(let call, let values):
            bus(.reply(call: call, values))
        case .error(let call, let name, let message):
            bus(.error(call: call, name: name, message: message))
        case .callApp(let member, let arguments, let expecting, let timeout):
            bus(.callApp(destination: sender, member: member, arguments: arguments, expecting: expecting, timeoutMilliseconds: timeout))
        case .openStream(let call, let continuation):
            openBusStream(call: call, continuation: continuation)
        case .offerStream(let activity, let token, let outgoing):
            offerBusStream(activity: activity, token: token, outgoing: outgoing)
        case .streamAnswered(let token, let accepted, let message):
            busStreamAnswered(token: token, accepted: accepted, message: message)
        }
    }

    /// Closes once: the machine hears it (a Register still waiting is answered), then the connection's owner, on the
    /// agent's loop, after what was queued for it. False when it was closed already.
    private func end() -> Bool {
        let first = state.withLockedValue { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return false }
        input(.closed)
        closeOfferedStreams()
        eventLoop.execute { [self] in
            let sink = state.withLockedValue { state in
                defer { state.sink = nil }
                return state.sink
            }
            sink?.closed()
            closing.succeed()
        }
        return true
    }
}
