import BatonClient
import BatonCore
import NIOConcurrencyHelpers
import NIOCore

/// One end of a connection inside the process (issue 26 item 3), made in pairs by ``pair(_:_:)``: what one end sends
/// reaches the other end's link on that end's loop, one `execute` per frame (as one socket read would), in order; no
/// bytes, no TLS, no socket. What an end receives before its link is attached waits, in order, as the TLS channel's
/// frames do before its handshake's link is adopted.
///
/// Sendable, checked: its `let`s are Sendable and everything mutable is in `state`, under its lock.
final class MemoryConduit: LinkConduit {
    /// One frame between the ends: what a socket would carry encoded.
    enum Frame: Sendable {
        case message(PropertyList)
        case data(stream: UInt64, opener: Bool, ByteBuffer)
    }

    struct State {
        /// The other end, until either end closes.
        var other: MemoryConduit?
        var sink: MessageSink?
        /// Frames that came before the sink was attached.
        var waiting: [Frame] = []
        /// Data frames written and not yet flushed.
        var unflushed: [Frame] = []
        var closed = false
        /// The sink has been told (or will be told on attaching) that the connection ended.
        var ended = false
        /// Whether frames reach the sink (``stopReading()``).
        var reading = true
    }

    let eventLoop: EventLoop
    let remoteAddress: SocketAddress?
    let state = NIOLockedValueBox(State())

    init(eventLoop: EventLoop, remoteAddress: SocketAddress?) {
        self.eventLoop = eventLoop
        self.remoteAddress = remoteAddress
    }

    /// Two connected ends: `a` runs on `a.loop` and sees `a.remote` as its peer's address; `b` likewise.
    static func pair(
        _ a: (loop: EventLoop, remote: SocketAddress?),
        _ b: (loop: EventLoop, remote: SocketAddress?)
    ) -> (MemoryConduit, MemoryConduit) {
        let first = MemoryConduit(eventLoop: a.loop, remoteAddress: a.remote)
        let second = MemoryConduit(eventLoop: b.loop, remoteAddress: b.remote)
        first.state.withLockedValue { $0.other = second }
        second.state.withLockedValue { $0.other = first }
        return (first, second)
    }

    var isActive: Bool { !state.withLockedValue(\.closed) }

    func attach(_ sink: MessageSink) {
        eventLoop.preconditionInEventLoop()
        let (waiting, ended) = state.withLockedValue { state in
            if !state.ended { state.sink = sink }
            defer { state.waiting = [] }
            return (state.waiting, state.ended)
        }
        for frame in waiting { deliver(frame, to: sink) }
        if ended { sink.closed() }
    }

    func send(_ message: PropertyList) {
        let (other, frames) = state.withLockedValue { state -> (MemoryConduit?, [Frame]) in
            guard !state.closed else { return (nil, []) }
            state.unflushed.append(.message(message))
            defer { state.unflushed = [] }
            return (state.other, state.unflushed)
        }
        other?.arrive(frames)
    }

    func write(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) {
        state.withLockedValue { state in
            guard !state.closed else { return }
            state.unflushed.append(.data(stream: stream, opener: opener, bytes))
        }
    }

    func flush() {
        let (other, frames) = state.withLockedValue { state -> (MemoryConduit?, [Frame]) in
            defer { state.unflushed = [] }
            return (state.other, state.unflushed)
        }
        other?.arrive(frames)
    }

    /// Closes both ends: each end's link hears `closed()` on its loop, after the frames already on their way to it.
    func close() {
        let other = state.withLockedValue { state -> MemoryConduit? in
            guard !state.closed else { return nil }
            state.closed = true
            state.unflushed = []
            defer { state.other = nil }
            return state.other
        }
        end()
        other?.close()
    }

    /// Frames from the other end: each is delivered by its own task on this end's loop.
    private func arrive(_ frames: [Frame]) {
        for frame in frames {
            eventLoop.execute { [self] in
                // Frames sent before the other end closed still come first, as on a socket.
                let sink = state.withLockedValue { state -> MessageSink? in
                    guard !state.ended else { return nil }
                    guard let sink = state.sink, state.reading else {
                        state.waiting.append(frame)
                        return nil
                    }
                    return sink
                }
                if let sink { deliver(frame, to: sink) }
            }
        }
    }

    /// Stops delivering what arrives, for good, as a process that no longer reads its socket (a hung peer, for the
    /// keepalive's dead-peer check: F3): what comes waits unread, and the connection stays open.
    func stopReading() {
        state.withLockedValue { $0.reading = false }
    }

    /// Tells the link, on this end's loop, that the connection ended (once).
    private func end() {
        eventLoop.execute { [self] in
            // The link and its conduit hold each other until here, as a channel's pipeline holds its handler.
            let sink = state.withLockedValue { state -> MessageSink? in
                guard !state.ended else { return nil }
                state.ended = true
                state.waiting = []
                defer { state.sink = nil }
                return state.sink
            }
            sink?.closed()
        }
    }

    private func deliver(_ frame: Frame, to sink: MessageSink) {
        switch frame {
        case .message(let message):
            sink.received(message)
        case .data(let stream, let opener, let bytes):
            // As MessageHandler: a data frame where none may come is a broken connection.
            guard sink.receivedData(stream: stream, opener: opener, bytes) else {
                sink.malformed(BatonClientError(.protocolViolation, "a data frame where none may come"))
                close()
                return
            }
        }
    }
}
