import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One end of an app's connection to its agent inside the process (issue 26 item 3), made in pairs by
/// ``pair(_:_:)``: what one end sends reaches the other end's owner on that end's loop, one `execute` per frame (as
/// one socket read would), in order; no bytes, no socket. Frames wait, in order, before the owner is attached and while
/// it does not read; the close comes after them, as a socket's end of file does. A ``write(_:)`` completes once the
/// other end's owner has taken the frame (a socket with no buffer of its own), and fails when the connection closes
/// before it did: a continuation stream's backpressure (F3) counts on writes waiting for a reader that does not read.
/// The process at the other end is this one, so the agent's checks of who connected (its user, its executable: ISSUE
/// 10 item 3) run as on the socket.
///
/// Sendable, checked: its `let`s are Sendable and everything mutable is in `state`, under its lock.
package final class MemoryAppConduit: AppConduit {
    typealias Frame = MemoryFrame

    struct State {
        /// The other end, until either end closes.
        var other: MemoryAppConduit?
        var sink: MessageSink?
        /// Frames arrived and not yet delivered: before the sink is attached, or while not reading; each with the
        /// writer's promise, if it wrote with ``write(_:)``.
        var queue: [(frame: Frame, taken: EventLoopPromise<Void>?)] = []
        var reading = true
        /// A delivery is under way on the loop: a nested call leaves the rest to it, keeping the order.
        var pumping = false
        /// The other end closed: once the queue is delivered, this end closes too.
        var otherClosed = false
        var closed = false
        /// The sink has been told the connection ended.
        var ended = false
    }

    package let eventLoop: EventLoop
    package let closeFuture: EventLoopFuture<Void>
    let closing: EventLoopPromise<Void>
    let state = NIOLockedValueBox(State())

    init(eventLoop: EventLoop) {
        self.eventLoop = eventLoop
        closing = eventLoop.makePromise()
        closeFuture = closing.futureResult
    }

    /// An end dropped unclosed is closed then (an unfulfilled promise must not be leaked), and what waited in it was
    /// never taken.
    deinit {
        closing.succeed()
        for waiting in state.withLockedValue(\.queue) { waiting.taken?.fail(ChannelError.ioOnClosedChannel) }
    }

    /// Two connected ends, running on `a` and `b`.
    package static func pair(_ a: EventLoop, _ b: EventLoop) -> (MemoryAppConduit, MemoryAppConduit) {
        let first = MemoryAppConduit(eventLoop: a)
        let second = MemoryAppConduit(eventLoop: b)
        first.state.withLockedValue { $0.other = second }
        second.state.withLockedValue { $0.other = first }
        return (first, second)
    }

    package var isActive: Bool { !state.withLockedValue(\.closed) }
    /// Nothing waits unread in memory but the frames themselves.
    package var isWritable: Bool { true }

    package func peerCredentials() -> EventLoopFuture<PeerCredentials> {
        eventLoop.makeSucceededFuture(PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
    }

    package func attach(_ sink: MessageSink) {
        eventLoop.preconditionInEventLoop()
        let ended = state.withLockedValue { state -> Bool in
            state.sink = sink
            return state.ended
        }
        // A connection already gone ends here too (its owner counts it closed).
        if ended { sink.closed() } else { pump() }
    }

    package func send(_ message: PropertyList) {
        other()?.arrive(.message(message), taken: nil)
    }

    package func write(_ frame: OutboundFrame) -> EventLoopFuture<Void> {
        guard let other = other() else {
            return eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        switch frame {
        case .message(let bytes):
            guard let message = try? BinaryPropertyListDecoder.decode(Data(bytes.readableBytesView), limits: MessageHandler.limits) else {
                return eventLoop.makeFailedFuture(BatonClientError(.protocolViolation, "a frame that is not a readable property list"))
            }
            let taken = eventLoop.makePromise(of: Void.self)
            other.arrive(.message(message), taken: taken)
            return taken.futureResult
        case .data(let stream, let opener, let bytes):
            let taken = eventLoop.makePromise(of: Void.self)
            other.arrive(.data(stream: stream, opener: opener, bytes), taken: taken)
            return taken.futureResult
        }
    }

    package func setReading(_ reading: Bool) {
        state.withLockedValue { $0.reading = reading }
        if reading { eventLoop.execute { [self] in pump() } }
    }

    /// Closes both ends: this end's owner hears `closed()` at once (what had not been read is dropped, as on a
    /// socket), the other's after the frames already on their way to it.
    package func close() {
        let (closing, other) = state.withLockedValue { state -> (Bool, MemoryAppConduit?) in
            guard !state.closed else { return (false, nil) }
            state.closed = true
            defer { state.other = nil }
            return (true, state.other)
        }
        guard closing else { return }
        eventLoop.execute { [self] in end() }
        other?.eventLoop.execute { other?.otherClosed() }
    }

    private func other() -> MemoryAppConduit? {
        state.withLockedValue { $0.closed ? nil : $0.other }
    }

    /// A frame from the other end, by its own task on this end's loop; `taken` completes once the owner took it.
    private func arrive(_ frame: Frame, taken: EventLoopPromise<Void>?) {
        eventLoop.execute { [self] in
            let open = state.withLockedValue { state -> Bool in
                guard !state.ended else { return false }
                state.queue.append((frame, taken))
                return true
            }
            guard open else {
                taken?.fail(ChannelError.ioOnClosedChannel)
                return
            }
            pump()
        }
    }

    private func otherClosed() {
        state.withLockedValue { $0.otherClosed = true }
        pump()
    }

    /// Delivers what waits, in order, while there is a sink that reads; then the other end's close, if it came.
    private func pump() {
        guard state.withLockedValue({ state in
            defer { state.pumping = true }
            return !state.pumping
        }) else { return }
        while true {
            let next = state.withLockedValue { state -> (Frame, EventLoopPromise<Void>?, MessageSink)? in
                guard !state.ended, state.reading, let sink = state.sink, !state.queue.isEmpty else { return nil }
                let (frame, taken) = state.queue.removeFirst()
                return (frame, taken, sink)
            }
            guard let (frame, taken, sink) = next else { break }
            frame.deliver(to: sink) { close() }
            taken?.succeed()
        }
        let closes = state.withLockedValue { state -> Bool in
            state.pumping = false
            return state.otherClosed && state.queue.isEmpty && !state.ended
        }
        if closes { close() }
    }

    /// Tells the owner, on this end's loop, that the connection ended (once); the close future completes.
    private func end() {
        let (sink, dropped) = state.withLockedValue { state -> (MessageSink?, [EventLoopPromise<Void>]) in
            guard !state.ended else { return (nil, []) }
            state.ended = true
            // Unread, as a socket's unread bytes when it closes: their writers hear the connection is gone.
            let dropped = state.queue.compactMap(\.taken)
            state.queue = []
            // The owner holds this end: letting go of it breaks the cycle (issue 25 item 10).
            defer { state.sink = nil }
            return (state.sink, dropped)
        }
        closing.succeed()
        for taken in dropped { taken.fail(ChannelError.ioOnClosedChannel) }
        sink?.closed()
    }
}
