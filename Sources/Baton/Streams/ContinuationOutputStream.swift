import Foundation
import Synchronization

/// The writing half of a continuation stream as a Foundation `OutputStream` (F2, F3).
///
/// Used without a run loop, `write` blocks until the stream has room for some of the bytes (backpressure: a slow
/// reader on the other device makes it wait), then takes as many as fit without waiting again and returns that count
/// (at least 1), or -1 on an error (`streamError` is a ``ContinuationError``). `close()` ends this side's writing (a
/// half-close: the other side's reader ends cleanly), as closing a socket stream's output does on Apple's systems.
/// Scheduled on a run loop with a delegate, it sends `.openCompleted`, `.hasSpaceAvailable` (at the start and after
/// each write, once there is room) and `.errorOccurred` there.
///
/// Safe to use from any thread: its mutable state is in `state`, behind a lock, and `pair` is a `let` of a Sendable
/// type (nil only for an object made with `init(toMemory:)`, which Foundation requires and which writes nothing).
/// Closures carry it in a ``StreamReference``.
final class ContinuationOutputStream: OutputStream {
    private let pair: FoundationStreamPair?
    private let state = Mutex(State())

    private struct State {
        var status = Stream.Status.notOpen
        var error: (any Error)?
        var events = RunLoopEvents()
        /// A watch for room is armed (events are on).
        var watching = false
    }

    init(pair: FoundationStreamPair) {
        self.pair = pair
        super.init(toMemory: ())
    }

    /// Foundation's required initializer: a stream on no continuation stream, whose writes fail.
    required init(toMemory: ()) {
        pair = nil
        super.init(toMemory: ())
    }

    override func open() {
        let opened = state.withLock { state -> Bool in
            guard state.status == .notOpen else { return false }
            state.status = pair == nil ? .error : .open
            if pair == nil { state.error = ContinuationError(.streamClosed, "this output stream belongs to no continuation stream") }
            return true
        }
        guard opened else { return }
        post(.openCompleted)
        watch()
    }

    /// Ends this side's writing (`eof`): the other side's reader ends after the bytes already written.
    override func close() {
        let closing = state.withLock { state -> Bool in
            guard state.status != .closed else { return false }
            state.status = .closed
            return true
        }
        guard closing, let pair else { return }
        pair.end.finishWithoutWaiting()
        pair.sideClosed()
    }

    override func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        let allowed = state.withLock { state -> Bool in
            switch state.status {
            case .open:
                state.status = .writing
                return true
            case .notOpen, .opening, .reading, .writing, .atEnd, .closed, .error:
                return false
            }
        }
        guard allowed, let pair else { return -1 }
        guard len > 0 else {
            state.withLock { $0.status = .open }
            return 0
        }
        let result = pair.end.writeBlocking(UnsafeRawBufferPointer(start: buffer, count: len))
        let count = state.withLock { state -> Int in
            switch result {
            case .success(let count):
                if state.status == .writing { state.status = .open }
                return count
            case .failure(let error):
                state.status = .error
                state.error = error
                return -1
            }
        }
        if count < 0 { post(.errorOccurred) } else { watch() }
        return count
    }

    /// True when a `write` would not wait.
    override var hasSpaceAvailable: Bool {
        guard state.withLock({ $0.status == .open }), let pair else { return false }
        return pair.end.hasRoom
    }

    override var streamStatus: Stream.Status {
        state.withLock { $0.status }
    }

    override var streamError: (any Error)? {
        state.withLock { $0.error }
    }

    /// ``Foundation/Stream/PropertyKey/batonStreamPath``: `"direct"` or `"relayed"` (issue 30); nothing else is set.
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? {
        key == .batonStreamPath ? pair.map { $0.end.path.rawValue as NSString } : nil
    }

    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool {
        false
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        let target = ScheduledRunLoop(runLoop: aRunLoop, mode: mode)
        state.withLock { $0.events.schedule(target) }
        watch()
    }

    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        let target = ScheduledRunLoop(runLoop: aRunLoop, mode: mode)
        state.withLock { $0.events.remove(target) }
    }

    // MARK: Run-loop events

    private func post(_ event: Stream.Event) {
        guard let events = state.withLock({ $0.events.isScheduled ? $0.events : nil }) else { return }
        let stream = StreamReference(self)
        events.post { stream.object?.deliver(event) }
    }

    private func deliver(_ event: Stream.Event) {
        delegate?.stream(self, handle: event)
    }

    /// While scheduled and open, waits for room, then tells the delegate on its run loop (once per write).
    private func watch() {
        let arm = state.withLock { state -> Bool in
            guard state.events.isScheduled, state.status == .open, !state.watching else { return false }
            state.watching = true
            return true
        }
        guard arm, let pair else { return }
        let stream = StreamReference(self)
        pair.end.whenWritable { room in
            stream.object?.roomChanged(room)
        }
    }

    private func roomChanged(_ room: StreamEnd.Room) {
        let events = state.withLock { state -> RunLoopEvents? in
            state.watching = false
            guard state.status == .open else { return nil }
            if case .failed(let error) = room {
                state.status = .error
                state.error = error
            }
            return state.events
        }
        guard let events else { return }
        let stream = StreamReference(self)
        switch room {
        case .available: events.post { stream.object?.deliver(.hasSpaceAvailable) }
        case .failed: events.post { stream.object?.deliver(.errorOccurred) }
        case .cancelled: break
        }
    }
}
