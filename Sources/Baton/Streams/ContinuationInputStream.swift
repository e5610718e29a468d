import Foundation
import Synchronization

/// The reading half of a continuation stream as a Foundation `InputStream` (F2, F3), for code written against
/// Apple's `getContinuationStreams` and `userActivity(_:didReceive:outputStream:)`.
///
/// Used without a run loop, it blocks as Apple's streams do: `read` waits for some bytes, returns 0 at the end (the
/// other side closed its output) and -1 on an error (`streamError` is a ``ContinuationError``). Scheduled on a run
/// loop with a delegate, it sends `.openCompleted`, `.hasBytesAvailable` (again after each read, while bytes wait),
/// `.endEncountered` and `.errorOccurred` to the delegate on that run loop's thread; `read` then returns at once.
/// The bytes come from an event loop of the library's, never the main actor, so reading on the main thread is
/// allowed (if unwise for long transfers).
///
/// Safe to use from any thread: its mutable state is in `state`, behind a lock, and `pair` is a `let` of a Sendable
/// type. (Foundation marks `Stream` as not Sendable, so this cannot say so; closures carry it in a ``StreamReference``.)
final class ContinuationInputStream: InputStream {
    private let pair: FoundationStreamPair
    private let state = Mutex(State())

    private struct State {
        var status = Stream.Status.notOpen
        var error: (any Error)?
        /// Bytes read from the stream that the caller's buffer had no room for.
        var leftover = Data()
        var events = RunLoopEvents()
        /// A watch for the input being ready is armed (events are on).
        var watching = false
    }

    init(pair: FoundationStreamPair) {
        self.pair = pair
        super.init(data: Data())
    }

    /// The two Foundation streams of `end`.
    static func pair(_ end: StreamEnd) -> (InputStream, OutputStream) {
        let pair = FoundationStreamPair(end)
        return (ContinuationInputStream(pair: pair), ContinuationOutputStream(pair: pair))
    }

    override func open() {
        let opened = state.withLock { state -> Bool in
            guard state.status == .notOpen else { return false }
            state.status = .open
            return true
        }
        guard opened else { return }
        post(.openCompleted)
        watch()
    }

    override func close() {
        let closing = state.withLock { state -> Bool in
            guard state.status != .closed else { return false }
            state.status = .closed
            state.leftover = Data()
            return true
        }
        guard closing else { return }
        pair.end.abandonInput()
        pair.sideClosed()
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard len > 0 else { return 0 }
        let ready = state.withLock { state -> Int? in
            switch state.status {
            case .notOpen, .closed, .error: return -1
            case .atEnd: return 0
            case .opening, .open, .reading, .writing: break
            }
            guard !state.leftover.isEmpty else {
                state.status = .reading
                return nil
            }
            return Self.take(&state.leftover, into: buffer, maxLength: len)
        }
        if let ready {
            if ready > 0 { watch() }
            return ready
        }
        let result = pair.end.readBlocking()
        let count = state.withLock { state -> Int in
            guard state.status == .reading else { return -1 }  // closed meanwhile
            switch result {
            case .bytes(let buffers):
                state.status = .open
                var data = Data(buffers)
                let count = Self.take(&data, into: buffer, maxLength: len)
                state.leftover = data
                return count
            case .end:
                state.status = .atEnd
                return 0
            case .failed(let error):
                state.status = .error
                state.error = error
                return -1
            }
        }
        if count > 0 { watch() }
        return count
    }

    /// Copies up to `maxLength` bytes from the front of `data` into `buffer` and drops them from `data`.
    private static func take(_ data: inout Data, into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let count = min(maxLength, data.count)
        let start = data.startIndex
        data.copyBytes(to: buffer, from: start..<start + count)
        data = count == data.count ? Data() : data[(start + count)...]
        return count
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    /// True when a `read` would not wait: bytes are here, or the stream's end or failure is (the read then returns 0
    /// or -1 at once).
    override var hasBytesAvailable: Bool {
        let (status, leftover) = state.withLock { ($0.status, !$0.leftover.isEmpty) }
        guard status == .open else { return false }
        return leftover || pair.end.inputReady
    }

    override var streamStatus: Stream.Status {
        state.withLock { $0.status }
    }

    override var streamError: (any Error)? {
        state.withLock { $0.error }
    }

    /// ``Foundation/Stream/PropertyKey/batonStreamPath``: `"direct"` or `"relayed"` (issue 30); nothing else is set.
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? {
        key == .batonStreamPath ? pair.end.path.rawValue as NSString : nil
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

    /// While scheduled and open, waits for the input to be ready, then tells the delegate on its run loop.
    private func watch() {
        let arm = state.withLock { state -> Bool in
            guard state.events.isScheduled, state.status == .open, !state.watching else { return false }
            state.watching = true
            return true
        }
        guard arm else { return }
        let stream = StreamReference(self)
        let ready: @Sendable () -> Void = { stream.object?.inputReady() }
        if state.withLock({ !$0.leftover.isEmpty }) { return ready() }
        pair.end.whenInputReady(ready)
    }

    private func inputReady() {
        guard let events = state.withLock({ state -> RunLoopEvents? in
            state.watching = false
            return state.events.isScheduled ? state.events : nil
        }) else { return }
        let stream = StreamReference(self)
        events.post { stream.object?.announceInput() }
    }

    /// On the run loop's thread: finds out what is ready without waiting, and tells the delegate.
    private func announceInput() {
        let hasLeftover = state.withLock { $0.status == .open && !$0.leftover.isEmpty }
        if hasLeftover { return deliver(.hasBytesAvailable) }
        guard state.withLock({ $0.status == .open }) else { return }
        // Bytes (the delegate reads them), the end or a failure: taken now, without waiting.
        let peek = pair.end.readIfReady()
        state.withLock { state in
            switch peek {
            case .bytes(let buffers): state.leftover = Data(buffers)
            case .end: state.status = .atEnd
            case .failed(let error):
                state.status = .error
                state.error = error
            case nil: break
            }
        }
        switch peek {
        case .bytes: deliver(.hasBytesAvailable)
        case .end: deliver(.endEncountered)
        case .failed: deliver(.errorOccurred)
        case nil: watch()
        }
    }
}

/// The two Foundation streams of one continuation stream: the connection stays while either is alive; once both are
/// closed (or gone) it is released (``StreamEnd/release()``): left for the agent to close when the stream ended
/// cleanly both ways, else closed once what was written has left.
final class FoundationStreamPair: Sendable {
    let holder: StreamHolder
    private let closedSides = Mutex(0)

    var end: StreamEnd { holder.end }

    init(_ end: StreamEnd) {
        holder = StreamHolder(end)
    }

    func sideClosed() {
        if closedSides.withLock({ closed in
            closed += 1
            return closed == 2
        }) {
            end.release()
        }
    }
}

/// Carries a Foundation stream into a closure run on another thread (its run loop's, an event loop's). Foundation
/// marks `Stream` as not Sendable, so its subclasses cannot say they are; ``ContinuationInputStream`` and
/// ``ContinuationOutputStream`` keep their state behind a lock and are safe from any thread. Weak: a stream the app
/// let go of gets no more events.
struct StreamReference<Object: AnyObject>: @unchecked Sendable {
    weak var object: Object?

    init(_ object: Object) {
        self.object = object
    }
}

/// One run loop and mode a Foundation stream is scheduled on. `@unchecked Sendable`: swift-corelibs-foundation does
/// not mark `RunLoop` Sendable, but the one thing done with it from another thread, adding a timer, is what
/// `CFRunLoopAddTimer` is made for (it locks the run loop).
struct ScheduledRunLoop: @unchecked Sendable, Equatable {
    let runLoop: RunLoop
    let mode: RunLoop.Mode

    static func == (left: ScheduledRunLoop, right: ScheduledRunLoop) -> Bool {
        left.runLoop === right.runLoop && left.mode == right.mode
    }
}

/// The run loops a Foundation stream is scheduled on (`schedule(in:forMode:)`), and how its events reach them.
struct RunLoopEvents: Sendable {
    private var scheduled: [ScheduledRunLoop] = []

    var isScheduled: Bool { !scheduled.isEmpty }

    mutating func schedule(_ target: ScheduledRunLoop) {
        if !scheduled.contains(target) { scheduled.append(target) }
    }

    mutating func remove(_ target: ScheduledRunLoop) {
        scheduled.removeAll { $0 == target }
    }

    /// Runs `body` on the first run loop scheduled, in its mode. A zero-interval timer rather than
    /// `RunLoop.perform`: on Linux, `perform` does not wake a run loop that waits, adding a timer does.
    func post(_ body: @escaping @Sendable () -> Void) {
        guard let target = scheduled.first else { return }
        let timer = Timer(timeInterval: 0, repeats: false) { _ in body() }
        target.runLoop.add(timer, forMode: target.mode)
    }
}

extension Stream.PropertyKey {
    /// How a continuation stream's bytes travel (issue 30): `"direct"` when the two apps hold a TLS connection of
    /// their own, `"relayed"` when they go through both agents. ``ContinuationStreams/path`` in Baton's own API.
    public static let batonStreamPath = Stream.PropertyKey("BatonStreamPath")
}
