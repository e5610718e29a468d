import BatonClient
import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore

/// One continuation stream at one agent (F3): the app's own connection for the stream on one side, the stream on
/// the session with the other device on the other. Bytes pass through uncopied; ``StreamFlow`` decides how many may
/// go and when credit goes back; this class only moves them.
///
/// Backpressure, both ways: the agent reads the app's socket only while the peer has credit left (it turns the
/// connection's autoRead off otherwise, so a fast writer's `write` waits in its kernel buffer), and credits the peer
/// only for bytes its own app's socket has taken. So it holds at most one window for a slow reader.
///
/// Release (issue 25 item 3): once the stream has ended, however it ended, the app's end goes too, within
/// ``releaseAfter`` even when the app never reads and its connection's send queue is full: the connection is closed
/// and what it had not read is dropped with it. The agent counts the end against the app's limit until then.
///
/// Sendable, checked: its mutable state is under `state`'s lock; the rest are `let`s (the app connection, the link,
/// the bound and the log hook, all Sendable).
final class StreamSplice: StreamEndpoint, IPCStreamSink, Sendable {
    let app: IPCConnection
    let link: PeerLink
    /// How long the app's end may stay open once the stream has ended (``StreamLimits/releaseMilliseconds``).
    let releaseAfter: TimeAmount
    /// The agent's clock: the release bound is timed on it (a virtual clock runs it by advancing, issue 26 item 3).
    let clock: AgentClock
    /// Where the agent logs an end it had to close on an app that did not take it.
    let log: @Sendable (String) -> Void
    let state = NIOLockedValueBox(SpliceState())

    struct SpliceState {
        /// Set once the stream is open at both ends.
        var flow: StreamFlow?
        var key: PeerLink.StreamKey?
        /// What the app wrote that waits for credit.
        var queue = CircularBuffer<ByteBuffer>()
        /// Whether the app connection is being read (autoRead).
        var reading = true
        /// The stream is over here (finished or reset): nothing more moves.
        var over = false
        /// The last write to the app, so the connection closes only after it.
        var lastWrite: EventLoopFuture<Void>?
        /// The app closed its connection after ending its side: what it wrote still goes out, then the `eof`.
        var appLeft = false
        /// Writes to the app that have completed (it took them): whether a finished stream's app still reads.
        var delivered = 0
    }

    init(app: IPCConnection, link: PeerLink, releaseAfter: TimeAmount, clock: AgentClock, log: @escaping @Sendable (String) -> Void) {
        self.app = app
        self.link = link
        self.releaseAfter = releaseAfter
        self.clock = clock
        self.log = log
    }

    /// The stream is open: `key` on the link, this side offering `window`, the peer `peerWindow`. Tells the app
    /// (`welcome`) and starts reading it.
    func start(key: PeerLink.StreamKey, window: Int, peerWindow: Int, welcome: IPCMessage) {
        let gone = state.withLockedValue { state -> Bool in
            state.key = key
            state.flow = StreamFlow(window: window, peerWindow: peerWindow)
            return state.over
        }
        // The app left while the stream was being opened: the peer's end goes too.
        guard !gone else {
            link.detach(key)
            link.sendStreamControl(.resetStream(stream: key.id, opener: key.openedHere, reason: .appGone, message: "the app left before the stream opened"))
            return
        }
        // At once, not from a later turn of the loop: the peer may send as soon as it has answered, and its data
        // must reach the app after the welcome.
        write(welcome)
        app.streamSink.withLockedValue { $0 = self }
        // Closed before the sink was set: its close was not heard here, so the sink is taken back here too.
        guard app.conduit.isActive else {
            _ = app.takeStreamSink()
            return appClosed()
        }
        updateReading()
    }

    // MARK: From the app

    func appData(_ bytes: ByteBuffer) {
        let result = state.withLockedValue { state -> (PeerLink.StreamKey, [ByteBuffer], Bool)? in
            // Bytes after the app's own eof (flowViolation) break the protocol; after the stream is over, they are
            // dropped (the reset below then does nothing).
            guard !state.over, let key = state.key, var flow = state.flow, let send = try? flow.appSent(bytes.readableBytes) else { return nil }
            state.queue.append(bytes)
            state.flow = flow
            return (key, Self.take(send.bytes, from: &state.queue), send.end)
        }
        guard let (key, chunks, end) = result else {
            return reset(.protocolViolation, "the app wrote after ending its side of the stream", tellApp: true, tellPeer: true, peerReason: .appGone)
        }
        transmit(key, chunks, end: end)
    }

    func appMessage(_ message: IPCMessage) {
        guard case .endOfStream = message else {
            return reset(.protocolViolation, "only data and eof may follow a stream's welcome", tellApp: true, tellPeer: true, peerReason: .appGone)
        }
        let result = state.withLockedValue { state -> (PeerLink.StreamKey, [ByteBuffer], Bool)? in
            guard !state.over, let key = state.key, var flow = state.flow, !flow.appEnded else { return nil }
            let send = flow.appFinished()
            state.flow = flow
            return (key, Self.take(send.bytes, from: &state.queue), send.end)
        }
        guard let (key, chunks, end) = result else { return }
        transmit(key, chunks, end: end)
    }

    func appClosed() {
        // An app that ended its side and then closed has said all it will: its bytes still waiting for credit, and
        // its eof, go out first (the stream ends cleanly if the other side had ended too). Closing without an eof
        // is the app gone (F3).
        let drain = state.withLockedValue { state -> Bool in
            guard !state.over, state.flow?.appEnded == true else { return false }
            state.appLeft = true
            return true
        }
        if drain { return leaveIfDrained() }
        reset(.appGone, "the app at the other end closed the stream", tellApp: false, tellPeer: true, peerReason: .appGone)
    }

    /// The app left after its eof: once its bytes and eof are out, a stream whose other direction is still open is
    /// reset (nobody reads it any more); one whose other direction ended has finished.
    func leaveIfDrained() {
        let unread = state.withLockedValue { state -> Bool in
            guard !state.over, state.appLeft, let flow = state.flow, flow.endSent else { return false }
            return !flow.endReceived
        }
        if unread {
            reset(.appGone, "the app at the other end stopped reading", tellApp: false, tellPeer: true, peerReason: .appGone)
        }
    }

    // MARK: From the link

    func linkData(_ bytes: ByteBuffer) {
        let count = bytes.readableBytes
        let accepted = state.withLockedValue { state -> Result<Void, Error>? in
            guard !state.over, var flow = state.flow else { return nil }
            defer { state.flow = flow }
            return Result { try flow.peerSent(count) }
        }
        switch accepted {
        case nil:
            return
        case .failure(let error):
            return reset(.protocolViolation, "the other device broke the stream's flow control: \(error)", tellApp: true, tellPeer: true, peerReason: .protocolViolation)
        case .success:
            break
        }
        let written = write(.data(stream: 0, opener: false, bytes))
        written.whenSuccess { [self] in
            let credit = state.withLockedValue { state -> (PeerLink.StreamKey, Int)? in
                guard !state.over, let key = state.key, var flow = state.flow else { return nil }
                defer { state.flow = flow }
                return flow.appTook(count).map { (key, $0) }
            }
            if let (key, bytes) = credit {
                link.sendStreamControl(.credit(stream: key.id, opener: key.openedHere, bytes: UInt64(bytes)))
            }
        }
    }

    func linkControl(_ message: SessionMessage) {
        switch message {
        case .credit(_, _, let bytes):
            let result = state.withLockedValue { state -> Result<(PeerLink.StreamKey, [ByteBuffer], Bool), Error>? in
                guard !state.over, let key = state.key, var flow = state.flow else { return nil }
                do {
                    let send = try flow.credited(Int(bytes))
                    state.flow = flow
                    return .success((key, Self.take(send.bytes, from: &state.queue), send.end))
                } catch {
                    return .failure(error)
                }
            }
            switch result {
            case nil: return
            case .failure(let error):
                reset(.protocolViolation, "the other device broke the stream's flow control: \(error)", tellApp: true, tellPeer: true, peerReason: .protocolViolation)
            case .success(let (key, chunks, end)):
                transmit(key, chunks, end: end)
            }
        case .endOfStream:
            let open = state.withLockedValue { state -> Bool in
                guard !state.over, var flow = state.flow else { return false }
                flow.peerFinished()
                state.flow = flow
                return true
            }
            guard open else { return }
            if !state.withLockedValue(\.appLeft) { write(.endOfStream) }
            finishIfDone()
        case .resetStream(_, _, let reason, let text):
            reset(reason, text, tellApp: true, tellPeer: false, peerReason: reason)
        default:
            break
        }
    }

    func linkClosed(_ reason: FetchFailure, _ message: String) {
        // Not open yet: the request that opens it fails too, and refuses the app with its reason.
        guard state.withLockedValue({ $0.flow != nil }) else { return }
        reset(reason, message, tellApp: true, tellPeer: false, peerReason: reason)
    }

    // MARK: Moving bytes

    /// Removes the first `count` bytes of `queue`, as the buffers (or slices of them) that hold them.
    static func take(_ count: Int, from queue: inout CircularBuffer<ByteBuffer>) -> [ByteBuffer] {
        var left = count
        var taken: [ByteBuffer] = []
        while left > 0, var head = queue.first {
            if head.readableBytes <= left {
                left -= head.readableBytes
                taken.append(head)
                queue.removeFirst()
            } else if let part = head.readSlice(length: left) {
                taken.append(part)
                queue[queue.startIndex] = head
                left = 0
            }
        }
        return taken
    }

    func transmit(_ key: PeerLink.StreamKey, _ chunks: [ByteBuffer], end: Bool) {
        if !chunks.isEmpty { link.sendStreamData(key, chunks) }
        if end { link.sendStreamControl(.endOfStream(stream: key.id, opener: key.openedHere)) }
        updateReading()
        if end {
            finishIfDone()
            leaveIfDrained()
        }
    }

    /// Reads the app's socket only while its bytes could go out (credit left, nothing queued).
    func updateReading() {
        let change = state.withLockedValue { state -> Bool? in
            let wanted = !state.over && (state.flow?.wantsAppData ?? false)
            guard wanted != state.reading else { return nil }
            state.reading = wanted
            return wanted
        }
        guard let change else { return }
        app.conduit.setReading(change)
    }

    @discardableResult
    func write(_ message: IPCMessage) -> EventLoopFuture<Void> {
        guard let bytes = try? BinaryPropertyListEncoder.encode(message.propertyList) else {
            return app.conduit.eventLoop.makeSucceededVoidFuture()
        }
        return write(.message(ByteBuffer(bytes: bytes)))
    }

    func write(_ frame: OutboundFrame) -> EventLoopFuture<Void> {
        let written = app.conduit.write(frame)
        state.withLockedValue { $0.lastWrite = written }
        written.whenSuccess { [self] in state.withLockedValue { $0.delivered &+= 1 } }
        return written
    }

    /// Both sides have ended cleanly: the stream is over; the app's connection closes once it has everything.
    func finishIfDone() {
        let finished = state.withLockedValue { state -> (PeerLink.StreamKey, EventLoopFuture<Void>?)? in
            guard !state.over, let key = state.key, state.flow?.isFinished == true else { return nil }
            state.over = true
            state.queue.removeAll()
            return (key, state.lastWrite)
        }
        guard let (key, last) = finished else { return }
        link.detach(key)
        closeApp(after: last, release: .whileTaking, key: key)
    }

    /// Ends the stream abnormally: the app hears `reason` (unless it is the one gone), the peer `peerReason`
    /// (unless it told us), and nothing of the stream is left.
    func reset(_ reason: FetchFailure, _ message: String, tellApp: Bool, tellPeer: Bool, peerReason: FetchFailure) {
        let over = state.withLockedValue { state -> (PeerLink.StreamKey?, Bool)? in
            guard !state.over else { return nil }
            state.over = true
            state.queue.removeAll()
            let finished = state.flow?.isFinished ?? false
            return (state.key, finished)
        }
        guard let (key, finished) = over else { return }
        if let key {
            link.detach(key)
            if tellPeer, !finished {
                link.sendStreamControl(.resetStream(stream: key.id, opener: key.openedHere, reason: peerReason, message: message))
            }
        }
        if tellApp {
            closeApp(after: write(.resetStream(reason: reason.rawValue, message: message)), release: .atBound, key: key)
        } else {
            app.conduit.close()
        }
    }

    /// How long an ended stream's app end may stay open (issue 25 item 3).
    enum Release {
        /// A reset: the app has ``releaseAfter`` to take the `reset` (behind what it had not read), then it goes.
        case atBound
        /// A clean end: the app's last bytes and `eof` are its to read, as long as it takes some every
        /// ``releaseAfter``; an app that takes nothing for that long has stopped reading, and its end goes.
        case whileTaking
    }

    /// Closes the app's connection once `last` (the last write to it) is done, and within the `release` bound in any
    /// case: closing fails the writes still queued, which frees their bytes and the descriptor at once.
    func closeApp(after last: EventLoopFuture<Void>?, release: Release, key: PeerLink.StreamKey?) {
        guard let last else {
            app.conduit.close()
            return
        }
        last.whenComplete { [app] _ in app.conduit.close() }
        watchRelease(release, key: key, delivered: state.withLockedValue(\.delivered))
    }

    /// After ``releaseAfter``: an app end still open is closed, unless the stream finished cleanly and the app took
    /// something since the last look. On the connection's event loop, not in a task: the bound must hold while the
    /// concurrency pool is busy.
    func watchRelease(_ release: Release, key: PeerLink.StreamKey?, delivered before: Int) {
        _ = clock.schedule(in: .nanoseconds(releaseAfter.nanoseconds), on: app.conduit.eventLoop) { [self] in
            guard app.conduit.isActive else { return }
            let now = state.withLockedValue(\.delivered)
            if release == .whileTaking, now != before {
                return watchRelease(release, key: key, delivered: now)
            }
            let which = key.map { "stream \($0.id) with \(link.peer.short)" } ?? "a stream"
            var who = "the app"
            if case .stream(let bundle) = app.identity.withLockedValue({ $0 }) { who = bundle }
            let what = release == .atBound ? "did not take its reset" : "took nothing of the stream's last bytes"
            log("\(which): \(who) \(what) within \(releaseAfter.nanoseconds / 1_000_000) ms of the stream's end; its end is closed, what it had not read dropped")
            app.conduit.close()
        }
    }
}
