import BatonClient
import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Synchronization

/// One end of a continuation stream carried by a link (F3): the agent's splice between the link and an app.
/// Called on the link's event loop, in order; never under the link's lock.
protocol StreamEndpoint: AnyObject, Sendable {
    /// Bytes the peer sent on the stream (a slice of what was read: no copy).
    func linkData(_ bytes: ByteBuffer)
    /// The peer's `credit`, `eof` or `reset` for the stream.
    func linkControl(_ message: SessionMessage)
    /// The link ended (or the stream could not be opened): the stream is over, for this reason.
    func linkClosed(_ reason: FetchFailure, _ message: String)
}

/// Answers what a peer asks over a link. Implemented by the agent; links hold its ``AgentForwarder``, which holds it
/// weakly (issue 26 item 1).
protocol PeerLinkResponder: AnyObject, Sendable {
    /// Starts answering one request (fetch, describe, sync; a legacy `sync` arrives with `id` nil): `reply` is
    /// called exactly once with the answer, on whatever thread has it, possibly before this returns. Returns what
    /// stops the work when the peer cancels the request or the link closes (harmless once it has replied).
    ///
    /// Called on the link's event loop: what needs no I/O beyond a message (a fetch, which waits for the app's
    /// save, and a describe) is answered from there and from the thread that has the app's answer, with no task in
    /// between (issue 11's hot path); what reads or writes files (a sync) runs in the session service's work.
    func respond(
        to request: SessionMultiplexer.Request,
        on link: PeerLink,
        reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> PeerLink.Cancel
    /// Starts answering the peer's request to open continuation stream `id` (F1, F3): `reply` exactly once with
    /// `.streamOpened` (after attaching the stream's endpoint with ``PeerLink/attach(_:to:)``) or `.failed`.
    func respondToStream(
        id: UInt64,
        sequence: UInt64,
        window: UInt64,
        direct: DirectStreamOffer?,
        on link: PeerLink,
        reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> PeerLink.Cancel
    /// The peer's app now has the state of the activity advertised with `sequence`, which it fetched with
    /// `confirms` (the `continued` notice): the originating app is told `continued` now (A8; issue 25 item 4).
    func peerContinued(sequence: UInt64, on link: PeerLink)
    /// The peer's wall clock as it sent its `clock` notice, milliseconds since 1970 (issue 25 item 9).
    func peerClock(_ milliseconds: UInt64, on link: PeerLink)
    /// The link ended.
    func linkClosed(_ link: PeerLink)
    /// A link opened, by either side (the agent syncs rosters over it and sweeps it when idle).
    func linkOpened(_ link: PeerLink)
}

/// One TLS 1.3 connection to another device of the account, shared by every request in either direction
/// (ISSUE 5 part 3: one multiplexed connection per device pair, reused). The protocol logic is
/// ``SessionMultiplexer``; this class only moves its messages and wakes the tasks waiting for replies.
///
/// It carries outcomes and decides none: a request it gives up on (its caller's cancel, its own timeout, the link
/// closing) comes back as a plain failure; which requirement that serves, and what the person reads, is said by the
/// caller (the handoff broker for a continuation's fetch), not here (issue 26 item 2).
///
/// Sendable, checked: its `let`s are Sendable (the responder by its protocol), and everything mutable is in `state`,
/// under its lock.
public final class PeerLink: MessageSink, Sendable {
    /// The device at the other end, as its certificate says.
    public let peer: DeviceID
    /// Its address, for messages.
    public let peerName: String
    /// Whether this device opened the connection (dialled it), or the peer did.
    public let dialedByMe: Bool
    /// What the link runs over: a TLS connection, or a memory one in tests (issue 26 item 3).
    let conduit: any LinkConduit
    /// The conduit under its former name (what `Agent.answerSync` reads the peer's address from).
    var channel: any LinkConduit { conduit }
    let responder: PeerLinkResponder

    /// Stops a piece of work started for a request (in either direction); calling it after the work has ended
    /// does nothing.
    public typealias Cancel = @Sendable () -> Void

    /// A continuation stream on this link: its id (the `stream` request's, in the opener's numbering) and whether
    /// this side opened it (docs/PROTOCOL.md §8).
    struct StreamKey: Hashable, Sendable, CustomStringConvertible {
        var id: UInt64
        var openedHere: Bool

        var description: String { "stream \(id)\(openedHere ? "" : " (peer's)")" }
    }

    /// Uptime nanoseconds when something last arrived: the keepalive pings only a quiet link.
    let lastHeard: Synchronization.Atomic<UInt64>
    /// The agent's clock: its uptime stamps activity (the session service's sweep reads the same), its wall time is
    /// what this side tells the peer (issue 26 item 2).
    let clock: AgentClock

    /// What this side keeps for a request of its own awaiting its reply, beside what the multiplexer records: whom
    /// to complete, and the timer that gives up on it.
    struct Pending {
        var completion: @Sendable (SessionMultiplexer.Reply) -> Void
        var timer: AgentClock.Timer?
    }

    struct State {
        /// The one record of which requests of this side are outstanding, and of what kind (issue 26 item 2).
        var multiplexer = SessionMultiplexer()
        /// What each of those requests completes, keyed by the multiplexer's ids: added when it asks, removed only on
        /// its word (a reply it matched, a cancel it still had to send, the ids it failed when the link closed), so
        /// each is completed exactly once (reply, timeout, cancel, or the link closing).
        var pending: [UInt64: Pending] = [:]
        /// The peer's requests being answered, with what stops each.
        var answering: [UInt64: Cancel] = [:]
        var closed = false
        /// Another link to the same device was kept instead of this one: no new requests go out on it, and it is
        /// closed as soon as nothing is in flight on it (ISSUE 10 item 1).
        var retired = false
        /// When a request last started or ended in either direction (uptime nanoseconds): idle links are closed.
        var lastActivity: UInt64
        /// The continuation streams this link carries (F3), both directions' together.
        var streams: [StreamKey: StreamEndpoint] = [:]
        /// The keepalive timer, while streams are open; whether a ping is waiting for its pong.
        var keepalive: AgentClock.Timer?
        var pinging = false
    }

    let state: NIOLockedValueBox<State>

    init(peer: DeviceID, peerName: String, dialedByMe: Bool, conduit: any LinkConduit, responder: PeerLinkResponder, clock: AgentClock) {
        self.peer = peer
        self.peerName = peerName
        self.dialedByMe = dialedByMe
        self.conduit = conduit
        self.responder = responder
        self.clock = clock
        let now = clock.uptimeNanoseconds()
        lastHeard = Atomic(now)
        state = NIOLockedValueBox(State(lastActivity: now))
    }

    /// Whether the connection is still usable.
    public var isOpen: Bool { !state.withLockedValue(\.closed) && conduit.isActive }

    /// Nanoseconds (uptime) since nothing has been in flight in either direction, or nil while something is.
    func idleSince() -> UInt64? {
        state.withLockedValue { state in
            let idle = state.multiplexer.outstanding == 0 && state.answering.isEmpty && state.streams.isEmpty
            return idle ? state.lastActivity : nil
        }
    }

    /// Stops using this link for new requests; closes it once nothing is in flight, if this side opened it (the
    /// peer, running the same rule, closes the links it opened; the session service's sweep closes the rest).
    func retire() {
        state.withLockedValue { $0.retired = true }
        closeIfRetiredAndIdle()
    }

    func closeIfRetiredAndIdle() {
        let close = state.withLockedValue { state in
            state.retired && dialedByMe && !state.closed
                && state.multiplexer.outstanding == 0 && state.answering.isEmpty && state.streams.isEmpty
        }
        if close { self.close() }
    }

    func touch(_ state: inout State) {
        state.lastActivity = clock.uptimeNanoseconds()
    }

    /// Sends a request and waits for its reply, at most `timeout` seconds. Never throws: a lost connection, a
    /// timeout or the caller's cancellation come back as `.failed` with ``FetchFailure`` `peerGone`, `timedOut`
    /// or `cancelled` (an error that says which, never a hang).
    public func request(_ request: SessionMultiplexer.Request, timeout: Double) async -> SessionMultiplexer.Reply {
        let cancel = NIOLockedValueBox<Cancel?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<SessionMultiplexer.Reply, Never>) in
                let stop = self.request(request, timeout: timeout) { waiter.resume(returning: $0) }
                cancel.withLockedValue { $0 = stop }
                if Task.isCancelled { stop() }
            }
        } onCancel: {
            cancel.withLockedValue { $0 }?()
        }
    }

    /// Sends a request; `completion` gets its reply exactly once, on whatever thread has it: the reply, or
    /// `.failed` with `peerGone`, `timedOut` (after `timeout` seconds) or `cancelled` (the returned ``Cancel``,
    /// which also tells the peer to stop). No task: the hot path of a warm continuation (issue 11).
    ///
    /// `timeout` is the only bound of what nothing else times (a describe, a roster sync, a stream's opening, a
    /// keepalive ping). A continuation's fetch is timed by the handoff broker, which decides its `timedOut` and ends
    /// it by the returned cancel; for it `timeout` is only a backstop behind the broker's deadline
    /// (`Agent.linkBackstop`), freeing the waiter should nothing else.
    @discardableResult
    public func request(
        _ request: SessionMultiplexer.Request,
        timeout: Double,
        completion: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> Cancel {
        self.request(request, timeout: timeout, registering: nil, completion: completion)
    }

    /// ``request(_:timeout:completion:)``, calling `registering` with the request's id under the link's lock
    /// before the request goes out (a stream's endpoint is attached then).
    func request(
        _ request: SessionMultiplexer.Request,
        timeout: Double,
        registering: ((UInt64, inout State) -> Void)?,
        completion: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> Cancel {
        let asked: (UInt64, SessionMessage)? = state.withLockedValue { state in
            guard !state.closed else { return nil }
            let (id, message) = state.multiplexer.ask(request)
            registering?(id, &state)
            state.pending[id] = Pending(completion: completion)
            touch(&state)
            return (id, message)
        }
        guard let (id, message) = asked else {
            completion(.failed(.peerGone, "the session with \(peerName) has ended"))
            return {}
        }
        // On the agent's clock, so a virtual one fires it by advancing (issue 26 item 3).
        let timer = clock.schedule(after: Self.milliseconds(timeout), on: conduit.eventLoop) { [self] in
            finish(id, .failed(.timedOut, "\(peerName) did not answer within \(Self.format(timeout))"), giveUp: true)
        }
        let stillWaiting = state.withLockedValue { state in
            guard state.pending[id] != nil else { return false }
            state.pending[id]?.timer = timer
            return true
        }
        // Answered (or the link closed) before the timer was recorded: it has nothing left to time out.
        if !stillWaiting { timer.cancel() }
        send(message)
        // Only that the caller cancelled: the caller decided why, and says so to whoever it tells.
        return { [self] in finish(id, .failed(.cancelled, "cancelled by the caller"), giveUp: true) }
    }

    /// `seconds` in whole milliseconds, rounded up (a timeout never fires early).
    static func milliseconds(_ seconds: Double) -> UInt64 {
        UInt64(min(max(seconds * 1000, 0), 1e12).rounded(.up))
    }

    static func format(_ seconds: Double) -> String {
        seconds < 1 ? "\(Int(seconds * 1000)) ms" : "\((seconds * 10).rounded() / 10) s"
    }

    /// Completes request `id` once. `giveUp`: this side ends it (a timeout, the caller's cancel), if the
    /// multiplexer still has it outstanding, and tells the peer to stop working on it; otherwise the multiplexer has
    /// just matched the peer's reply to it.
    func finish(_ id: UInt64, _ reply: SessionMultiplexer.Reply, giveUp: Bool) {
        let (pending, cancel): (Pending?, SessionMessage?) = state.withLockedValue { state in
            var cancel: SessionMessage?
            if giveUp {
                cancel = state.multiplexer.cancel(id)
                guard cancel != nil else { return (nil, nil) }
            }
            guard let pending = state.pending.removeValue(forKey: id) else { return (nil, nil) }
            pending.timer?.cancel()
            touch(&state)
            return (pending, cancel)
        }
        guard let pending else { return }
        if let cancel { send(cancel) }
        pending.completion(reply)
        closeIfRetiredAndIdle()
    }

    /// Sends a message; a peer that has stopped reading is disconnected instead (``Backpressure``), which fails
    /// what waits on the link with peerGone.
    /// Tells the peer its activity advertised with `sequence` is now in this device's app (the `continued` notice,
    /// A8): unanswered, and dropped when the link has closed (the peer's app then never hears `continued`).
    public func tellContinued(sequence: UInt64) {
        guard !state.withLockedValue({ $0.closed }) else { return }
        send(.continued(sequence: sequence))
    }

    func send(_ message: SessionMessage) {
        conduit.send(message.propertyList)
    }

    /// Closes the connection; waiting requests fail with `peerGone`. No new request goes out on it from now on:
    /// TLS keeps the channel active until the peer answers its close_notify (up to the 1 s shutdown timeout), and a
    /// request sent meanwhile failed with `peerGone` instead of dialling a new link (a cold continue right after
    /// `closeLinks()` or an idle sweep).
    public func close() {
        state.withLockedValue { $0.closed = true }
        conduit.close()
    }

    // MARK: MessageSink (on the event loop)

    package func received(_ plist: PropertyList) {
        lastHeard.store(clock.uptimeNanoseconds(), ordering: .relaxed)
        let inbound: SessionMultiplexer.Inbound
        do {
            let message = try SessionMessage(plist)
            inbound = try state.withLockedValue { try $0.multiplexer.receive(message) }
        } catch {
            malformed(error)
            return
        }
        switch inbound {
        case .reply(let id, let reply):
            if HopStamps.isOn, case .payload = reply { HopStamps.stamp(.peerReplyReceived) }
            finish(id, reply, giveUp: false)
        case .request(let id, let request):
            answer(id, request)
        case .cancelled(let id):
            state.withLockedValue { $0.answering.removeValue(forKey: id) }?()
        case .refused(let text):
            failAll(.refused, "\(peerName) refused the session: \(text)")
            close()
        case .respond(let message):
            send(message)
        case .stream(let message):
            streamControl(message)
        case .continued(let sequence):
            responder.peerContinued(sequence: sequence, on: self)
        case .clock(let milliseconds):
            responder.peerClock(milliseconds, on: self)
        case .ignore:
            break
        }
    }

    /// Answers the peer's request `id` (a legacy `sync` has none): the responder replies once, from whichever
    /// thread has the answer, and the reply goes out unless the peer cancelled the request meanwhile.
    func answer(_ id: UInt64?, _ request: SessionMultiplexer.Request) {
        // Recorded before the responder starts, so a reply given at once (or a cancel) finds it; the responder's
        // own cancel replaces the placeholder if the request is still being answered when it returns.
        if let id {
            state.withLockedValue { state in
                state.answering[id] = {}
                touch(&state)
            }
        }
        let respond: (@escaping @Sendable (SessionMultiplexer.Reply) -> Void) -> Cancel = { [self] reply in
            if case .openStream(let sequence, let window, let direct) = request, let id {
                return responder.respondToStream(id: id, sequence: sequence, window: window, direct: direct, on: self, reply: reply)
            }
            return responder.respond(to: request, on: self, reply: reply)
        }
        let cancel = respond { [self] reply in
            guard let id else {
                // The one-shot exchange of `baton sync`: answered in its own shape.
                if case .synced(let roster, let port) = reply { send(.sync(id: nil, roster: roster, agentPort: port)) }
                if case .failed(_, let text) = reply { send(.error(message: text)) }
                return
            }
            let answer = state.withLockedValue { state -> SessionMessage? in
                state.answering[id] = nil
                touch(&state)
                return state.multiplexer.answer(id, with: reply)
            }
            if let answer {
                var stamped = false
                if HopStamps.isOn, case .payload = reply { stamped = true }
                if stamped { HopStamps.stamp(.agentReplySending) }
                send(answer)
                if stamped { HopStamps.stamp(.agentReplySent) }
            } else if case .streamOpened = reply {
                // The asker gave up meanwhile: the stream just attached goes, rather than wait for data never sent.
                detach(StreamKey(id: id, openedHere: false))?.linkClosed(.cancelled, "the other device no longer wanted the stream")
            }
            closeIfRetiredAndIdle()
        }
        guard let id else { return }
        let pending = state.withLockedValue { state -> Bool in
            guard state.answering[id] != nil else { return false }
            state.answering[id] = cancel
            return true
        }
        // Answered already (cancelling then does nothing), or cancelled or closed meanwhile: the work stops.
        if !pending { cancel() }
    }

    package func malformed(_ error: Error) {
        failAll(.protocolViolation, "\(peerName) sent something unreadable: \(error)")
        close()
    }

    package func closed() {
        failAll(.peerGone, "the session with \(peerName) ended")
        responder.linkClosed(self)
    }

    func failAll(_ reason: FetchFailure, _ text: String) {
        let (waiting, tasks, streams) = state.withLockedValue { state in
            state.closed = true
            // The multiplexer names the requests still waiting (in the order they were asked); each fails once.
            let waiting = state.multiplexer.closed().compactMap { state.pending.removeValue(forKey: $0) }
            for pending in waiting { pending.timer?.cancel() }
            state.keepalive?.cancel()
            state.keepalive = nil
            defer {
                state.answering = [:]
                state.streams = [:]
            }
            return (waiting, Array(state.answering.values), Array(state.streams.values))
        }
        for pending in waiting { pending.completion(.failed(reason, text)) }
        for cancel in tasks { cancel() }
        // F3: no stream outlives its session; both apps hear why.
        for stream in streams { stream.linkClosed(reason == .refused ? .refused : .peerGone, text) }
    }

    // MARK: Continuation streams (F3, docs/PROTOCOL.md §8)

    /// Asks the peer to open a continuation stream to the app of its activity `sequence`, offering `window` bytes;
    /// `endpoint` receives the stream's traffic from the moment the request goes out (the peer may send as soon as
    /// it has answered). `completion` gets the stream's key and the peer's window, or why not (the endpoint is then
    /// detached): exactly once, like ``request(_:timeout:completion:)``. With `direct`, the peer may take the direct
    /// path (issue 30): the completion then has its app end's certificate fingerprint, and the endpoint is detached,
    /// since the stream's bytes never come over this link.
    @discardableResult
    func openStream(
        sequence: UInt64,
        window: Int,
        direct: DirectStreamOffer? = nil,
        directStreams: Int = 0,
        endpoint: StreamEndpoint,
        timeout: Double,
        completion: @escaping @Sendable (Result<(key: StreamKey, window: Int, direct: Data?), Agent.FetchError>) -> Void
    ) -> Cancel {
        let full = state.withLockedValue { $0.streams.count + directStreams >= StreamLimits.perSession }
        guard !full else {
            completion(.failure(Agent.FetchError(reason: .tooManyStreams, message: "\(StreamLimits.perSession) streams are open with \(peerName) already")))
            return {}
        }
        let key = NIOLockedValueBox<StreamKey?>(nil)
        return request(.openStream(sequence: sequence, window: UInt64(window), direct: direct), timeout: timeout, registering: { id, state in
            let opened = StreamKey(id: id, openedHere: true)
            state.streams[opened] = endpoint
            key.withLockedValue { $0 = opened }
        }) { [self] reply in
            guard let opened = key.withLockedValue({ $0 }) else {
                if case .failed(let reason, let text) = reply { completion(.failure(Agent.FetchError(reason: reason, message: text))) }
                return
            }
            switch reply {
            case .streamOpened(let window, let fingerprint?) where direct != nil:
                detach(opened)
                completion(.success((opened, Int(window), fingerprint)))
            case .streamOpened(let window, _):
                startKeepalive()
                completion(.success((opened, Int(window), nil)))
            case .failed(let reason, let text):
                detach(opened)
                completion(.failure(Agent.FetchError(reason: reason, message: text)))
            default:
                detach(opened)
                completion(.failure(Agent.FetchError(reason: .protocolViolation, message: "\(peerName) answered a stream request with something else")))
            }
        }
    }

    /// Attaches `endpoint` to the peer's stream `key` (the answering side, before it replies `opened`).
    /// - Returns: false when the link has closed or carries the most streams allowed.
    func attach(_ endpoint: StreamEndpoint, to key: StreamKey) -> Bool {
        let attached = state.withLockedValue { state -> Bool in
            guard !state.closed, state.streams.count < StreamLimits.perSession || state.streams[key] != nil else { return false }
            state.streams[key] = endpoint
            return true
        }
        if attached { startKeepalive() }
        return attached
    }

    /// Streams open on this link.
    var streamCount: Int { state.withLockedValue { $0.streams.count } }

    /// Forgets stream `key` (it ended); returns its endpoint if it was still attached.
    @discardableResult
    func detach(_ key: StreamKey) -> StreamEndpoint? {
        let endpoint = state.withLockedValue { state -> StreamEndpoint? in
            let endpoint = state.streams.removeValue(forKey: key)
            if endpoint != nil { touch(&state) }
            return endpoint
        }
        if endpoint != nil { closeIfRetiredAndIdle() }
        return endpoint
    }

    /// Writes bytes of stream `key` as data frames (at most ``Frame/maximumData`` each), flushed once.
    func sendStreamData(_ key: StreamKey, _ chunks: [ByteBuffer]) {
        guard conduit.isActive else { return }
        for var chunk in chunks {
            while chunk.readableBytes > Frame.maximumData, let part = chunk.readSlice(length: Frame.maximumData) {
                conduit.write(stream: key.id, opener: key.openedHere, part)
            }
            conduit.write(stream: key.id, opener: key.openedHere, chunk)
        }
        conduit.flush()
    }

    /// Sends a stream's `credit`, `eof` or `reset`.
    func sendStreamControl(_ message: SessionMessage) {
        send(message)
    }

    package func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool {
        lastHeard.store(clock.uptimeNanoseconds(), ordering: .relaxed)
        // Data for a stream that has ended here (it crossed a reset) is dropped: it holds nothing.
        state.withLockedValue { $0.streams[StreamKey(id: stream, openedHere: !opener)] }?.linkData(bytes)
        return true
    }

    func streamControl(_ message: SessionMessage) {
        let key: StreamKey
        switch message {
        case .credit(let stream, let opener, _), .endOfStream(let stream, let opener), .resetStream(let stream, let opener, _, _):
            key = StreamKey(id: stream, openedHere: !opener)
        default:
            return
        }
        let endpoint: StreamEndpoint?
        if case .resetStream = message {
            endpoint = detach(key)
        } else {
            endpoint = state.withLockedValue { $0.streams[key] }
        }
        endpoint?.linkControl(message)
    }

    /// While streams are open, pings a link that has been quiet for ``StreamLimits/keepaliveMilliseconds``; a ping
    /// unanswered as long again closes the link (every stream then ends with peerGone: a dead peer, F3). Quiet is
    /// looked for every ``StreamLimits/keepaliveCheckMilliseconds``, so that happens within about 4 s (PROTOCOL §8).
    func startKeepalive() {
        state.withLockedValue { state in
            guard state.keepalive == nil, !state.closed else { return }
            state.keepalive = scheduleKeepalive()
        }
    }

    /// The next look for quiet, on the agent's clock (a virtual one runs it by advancing: issue 26 item 3).
    func scheduleKeepalive() -> AgentClock.Timer {
        clock.schedule(after: StreamLimits.keepaliveCheckMilliseconds, on: conduit.eventLoop) { [weak self] in
            self?.keepaliveTick()
        }
    }

    func keepaliveTick() {
        let quiet = clock.uptimeNanoseconds() &- lastHeard.load(ordering: .relaxed)
        let ping = state.withLockedValue { state -> Bool in
            guard !state.streams.isEmpty, !state.closed else {
                state.keepalive = nil
                return false
            }
            state.keepalive = scheduleKeepalive()
            guard !state.pinging, quiet >= StreamLimits.keepaliveMilliseconds * 1_000_000 else { return false }
            state.pinging = true
            return true
        }
        guard ping else { return }
        let timeout = Double(StreamLimits.keepaliveMilliseconds) / 1000
        request(.ping, timeout: timeout) { [self] reply in
            state.withLockedValue { $0.pinging = false }
            if case .failed(.timedOut, _) = reply {
                failAll(.peerGone, "\(peerName) stopped answering (no answer to a ping within \(Self.format(timeout)))")
                close()
            }
        }
    }
}
