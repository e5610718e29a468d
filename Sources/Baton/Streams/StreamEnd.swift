import BatonClient
import BatonCore
import BatonProtocol
import Foundation
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One continuation stream's own connection to the device's agent, as the app library drives it (F2, F3): what
/// ``ContinuationStreams`` and the Foundation streams stand on.
///
/// The connection is an ``AppConduit``, as the app's control connection is (issue 26 item 3): the agent's Unix
/// socket (a ``ChannelAppConduit`` whose ``MessageHandler`` feeds this end), or, when the agent at the path runs in
/// this process on the memory transport (``MemoryAppSockets``), an end in memory. One code path either way: the same
/// frames, the same backpressure, the same close and reset.
///
/// Why a sink of our own rather than `NIOAsyncChannel`: its unscoped `inbound`/`outbound` are deprecated in
/// favour of `executeThenClose`, which ties the connection to one task's scope, while a stream is a value the app
/// keeps, splits between tasks and hands to blocking Foundation streams; and its inbound sequence allows a single
/// iterator (a second is a crash). The protocol logic is ``StreamEndStateMachine``; this class keeps who waits for
/// what and does the I/O, from any thread.
///
/// Backpressure both ways: the connection is not read while the reader has ``StreamEndStateMachine/highWater`` bytes
/// waiting (so the agents stop crediting the other device's writer), and a write returns only while fewer than
/// ``writeHighWater`` bytes handed to the conduit have not yet gone out (into the socket, or taken by the agent's end
/// in memory; else it waits until ``writeLowWater``), so a fast writer waits for a slow network. The count is kept
/// here, under the lock, rather than read from the conduit's writability, which a writer on another thread sees only
/// after the event loop ran its writes: that lag would let a fast writer queue far more.
final class StreamEnd: MessageSink, Sendable {
    static let writeHighWater = 1 << 20
    static let writeLowWater = 256 << 10
    /// How long the agent has to answer the stream's hello (its own limits are shorter: it answers first).
    static let openTimeout = TimeAmount.seconds(15)

    typealias ReadResult = StreamEndStateMachine.ReadResult

    /// The answer to a writer waiting for room.
    enum Room: Sendable {
        case available
        /// The stream takes no more: why.
        case failed(ContinuationError)
        /// The waiting task was cancelled.
        case cancelled
    }

    let conduit: any AppConduit
    /// A direct stream's connection (issue 30): why it failed, when it did.
    let watch: DirectStreamWatch?
    /// A direct stream's connection to this device's agent, held for the stream's life (the agent counts the app's
    /// streams by it) and closed with the stream's connection.
    private let agentConnection: Mutex<Int32?>
    private let core = Mutex(Core())

    private struct Core {
        var machine = StreamEndStateMachine()
        var opener: CheckedContinuation<Void, any Error>?
        var openTimer: Scheduled<Void>?
        /// The waiting reader: its id and how to answer it (nil: its task was cancelled).
        var reader: (id: UInt64, answer: @Sendable (ReadResult?) -> Void)?
        /// Who waits for the input to be ready (bytes, end, failure) without taking anything.
        var watchers: [@Sendable () -> Void] = []
        /// Who waits for room to write, by id.
        var writers: [UInt64: @Sendable (Room) -> Void] = [:]
        var nextID: UInt64 = 1
        /// The last write handed to the conduit: the connection closes gracefully only after it.
        var lastWrite: EventLoopFuture<Void>?
        /// Bytes handed to the conduit and not yet gone out.
        var inFlight = 0
        /// A direct stream that ended cleanly both ways is closing (with TLS's close_notify) once its last write is out.
        var closingDirect = false
        /// This side finished and its `eof` is not yet handed to the conduit: the stream may have ended cleanly, but
        /// its last write is still to come, and closing after the one before would cut the `eof` off.
        var endOfStreamUnsent = false
    }

    init(conduit: any AppConduit, watch: DirectStreamWatch? = nil, agentConnection: Int32? = nil) {
        self.conduit = conduit
        self.watch = watch
        self.agentConnection = Mutex(agentConnection)
    }

    /// How the stream's bytes travel (issue 30).
    var path: StreamPath {
        core.withLock { $0.machine.path }
    }

    // MARK: Opening

    /// Connects to the agent at `path` (checking it is this user's agent, as ``AgentClient`` does) and says `hello`
    /// (``IPCMessage/openStream(bundleIdentifier:version:continuation:)`` or
    /// ``IPCMessage/acceptStream(bundleIdentifier:version:token:)``); returns once the agent welcomed the stream.
    /// An agent of this process listening at `path` in memory (``MemoryAppSockets``, as
    /// ``AgentClient/connect(path:bundleIdentifier:timeout:group:)`` finds it) is reached there, with no socket.
    /// - Throws: ``ContinuationError``: the agent's refusal reason (`noStreams`, `notContinued`, `tooManyStreams`,
    ///   `peerGone`, ...), `timedOut` without an answer within `timeout`, `agentGone` when no agent answers or it
    ///   closes the connection, `notPermitted` when the socket is not this user's agent's.
    static func open(path: String, hello: IPCMessage, timeout: TimeAmount = openTimeout) async throws(ContinuationError) -> StreamEnd {
        // A hello that offers the direct path is answered with a socket (issue 30), which only a raw read can take;
        // an agent in this process, in memory, has no socket to give and relays.
        if hello.offersDirectPath, !MemoryAppSockets.process.isListening(at: path) {
            return try await openOfferingDirect(path: path, hello: hello, timeout: timeout)
        }
        let conduit = try await connect(path)
        let end = StreamEnd(conduit: conduit)
        let owner = try? await conduit.peerCredentials().get()
        guard owner != nil || conduit.isActive else {
            throw ContinuationError(.agentGone, "the agent at \(path) closed the stream's connection at once")
        }
        guard let owner, owner.uid == getuid() else {
            conduit.close()
            throw ContinuationError(
                .notPermitted,
                "the process listening at \(path) belongs to user \(owner.map { String($0.uid) } ?? "unknown"), not to you (\(getuid())): it is not your agent"
            )
        }
        do {
            // Frames that came before (a close, a refusal) waited in the conduit, in order.
            try await conduit.eventLoop.submit { conduit.attach(end) }.get()
            try await end.sayHello(hello, timeout: timeout)
        } catch let error as ContinuationError {
            conduit.close()
            throw error
        } catch {
            conduit.close()
            throw ContinuationError(.other, "\(error)")
        }
        return end
    }

    /// The stream's connection to the agent at `path`: in memory when an agent of this process listens there,
    /// otherwise its Unix socket, checked to be this user's.
    private static func connect(_ path: String) async throws(ContinuationError) -> any AppConduit {
        let group = MultiThreadedEventLoopGroup.singleton
        if let conduit = MemoryAppSockets.process.connect(path: path, loop: group.next()) { return conduit }
        do {
            try AgentSocket.checkOwner(path)
        } catch {
            throw ContinuationError(.notPermitted, "\(error)")
        }
        do {
            // Close-on-exec (issue 25 item 8): a program the app starts must not inherit the stream's connection.
            return try await agentConduit(try AgentSocket.connectedDescriptor(path))
        } catch {
            throw ContinuationError(.agentGone, "no agent answers at \(path) (start one with `baton agent`): \(error)")
        }
    }

    /// A stream's connection to its agent, `socket` already connected, as a conduit: frames with data allowed.
    static func agentConduit(_ socket: Int32) async throws -> ChannelAppConduit {
        let messages = MessageHandler()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // Reads of up to 1 MiB: a 256 KiB data frame then usually arrives in one read, and is handed on as a
            // slice of it rather than gathered (copied) from several.
            .channelOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64 << 10, initial: 256 << 10, maximum: 1 << 20))
            .withConnectedSocket(socket) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder(allowsData: true)))
                    try channel.pipeline.syncOperations.addHandler(FrameEncoder())
                    try channel.pipeline.syncOperations.addHandler(messages)
                    return channel
                }
            }
        return ChannelAppConduit(channel, messages: messages)
    }

    /// Sends the hello and waits for the agent's answer (or `timeout`).
    private func sayHello(_ hello: IPCMessage, timeout: TimeAmount) async throws {
        let milliseconds = timeout.nanoseconds / 1_000_000
        let limit = milliseconds % 1_000 == 0 ? "\(milliseconds / 1_000) s" : "\(milliseconds) ms"
        try await withCheckedThrowingContinuation { (opener: CheckedContinuation<Void, any Error>) in
            let timer = conduit.eventLoop.scheduleTask(in: timeout) { [self] in
                update { $0.openingTimedOut(after: limit) }
            }
            let decided = core.withLock { core -> StreamEndStateMachine.OpenResult? in
                // The connection may have closed already, with no one to tell then.
                if let decided = core.machine.openResult { return decided }
                core.opener = opener
                core.openTimer = timer
                return nil
            }
            switch decided {
            case nil:
                send(hello)
            case .opened:
                timer.cancel()
                opener.resume()
            case .failed(let error):
                timer.cancel()
                opener.resume(throwing: error)
            }
        }
    }

    // MARK: Reading

    /// Asks for the next bytes; `answer` is called once, at once or when they come (on any thread), with nil only
    /// when the wait was cancelled. Returns the id to cancel a wait with, or nil when answered at once.
    @discardableResult
    func read(_ answer: @escaping @Sendable (ReadResult?) -> Void) -> UInt64? {
        let (result, effects, id) = core.withLock { core -> (ReadResult?, StreamEndStateMachine.Effects, UInt64?) in
            let (result, effects) = core.machine.read()
            guard result == nil else { return (result, effects, nil) }
            let id = core.nextID
            core.nextID += 1
            core.reader = (id, answer)
            return (nil, effects, id)
        }
        perform(effects, taken: Taken())
        if let result { answer(result) }
        return id
    }

    /// The next bytes, for async code.
    /// - Throws: `CancellationError` when the task is cancelled while it waits (the stream stays usable).
    func read() async throws -> ReadResult {
        let id = Mutex<UInt64?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<ReadResult, any Error>) in
                let waiting = read { result in
                    if let result { waiter.resume(returning: result) } else { waiter.resume(throwing: CancellationError()) }
                }
                id.withLock { $0 = waiting }
                if Task.isCancelled, let waiting { cancelRead(waiting) }
            }
        } onCancel: {
            if let waiting = id.withLock({ $0 }) { cancelRead(waiting) }
        }
    }

    /// The next bytes, blocking the calling thread (Foundation's `InputStream.read`): never call it on the channel's
    /// event loop, which would wait for itself.
    func readBlocking() -> ReadResult {
        guard !conduit.eventLoop.inEventLoop else {
            return .failed(ContinuationError(.other, "a blocking read on the stream's own event loop would never return"))
        }
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<ReadResult?>(nil)
        read { result in
            box.withLock { $0 = result }
            done.signal()
        }
        // Never nil: this read is never cancelled.
        done.wait()
        return box.withLock { $0 } ?? .failed(ContinuationError(.other, "the read ended without an answer"))
    }

    /// The waiting reader `id` gives up (its task was cancelled): it is answered nil.
    private func cancelRead(_ id: UInt64) {
        let answer = core.withLock { core -> (@Sendable (ReadResult?) -> Void)? in
            guard let reader = core.reader, reader.id == id else { return nil }
            core.reader = nil
            core.machine.readCancelled()
            return reader.answer
        }
        answer?(nil)
    }

    /// The next bytes, the end or the failure if one is here now; nil when a read would wait (run-loop events).
    func readIfReady() -> ReadResult? {
        let (result, effects) = core.withLock { core -> (ReadResult?, StreamEndStateMachine.Effects) in
            guard core.machine.inputReady else { return (nil, StreamEndStateMachine.Effects()) }
            return core.machine.read()
        }
        perform(effects, taken: Taken())
        return result
    }

    /// Whether a reader waits for bytes (its task parked in ``read()``, or a callback given to ``read(_:)``).
    var readerWaits: Bool {
        core.withLock { $0.reader != nil }
    }

    /// Whether the connection is held back because the reader left ``StreamEndStateMachine/highWater`` bytes waiting.
    var readingPaused: Bool {
        core.withLock { $0.machine.isReadingPaused }
    }

    /// Whether a read would be answered at once (bytes, the end, or a failure wait).
    var inputReady: Bool {
        core.withLock { $0.machine.inputReady }
    }

    /// Calls `watcher` once the input is ready (at once if it is), on any thread.
    func whenInputReady(_ watcher: @escaping @Sendable () -> Void) {
        let now = core.withLock { core -> Bool in
            if core.machine.inputReady { return true }
            core.watchers.append(watcher)
            return false
        }
        if now { watcher() }
    }

    /// This side stops reading: what is buffered and what comes is dropped (a closed `InputStream`).
    func abandonInput() {
        update { $0.abandonInput() }
    }

    // MARK: Writing

    /// Writes `data` as data frames of at most ``Frame/maximumData`` bytes, waiting for room after each that left
    /// ``writeHighWater`` bytes or more in flight (backpressure).
    /// - Throws: ``ContinuationError``: the stream's failure (reset reason, `agentGone`), or `streamClosed` after
    ///   ``finish()`` or ``close()``.
    func write(_ data: Data) async throws {
        var start = data.startIndex
        while start < data.endIndex {
            let end = data.index(start, offsetBy: min(Frame.maximumData, data.endIndex - start))
            try send(data[start..<end])
            start = end
            if !hasRoom { try await waitForRoom() }
        }
    }

    /// ``write(_:)`` of bytes already in a buffer: slices of it go out as they are, no copy.
    func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        while buffer.readableBytes > 0, let slice = buffer.readSlice(length: min(Frame.maximumData, buffer.readableBytes)) {
            try send(slice)
            if !hasRoom { try await waitForRoom() }
        }
    }

    /// Writes up to `count` bytes from `bytes`, blocking until there is room for at least some (Foundation's
    /// `OutputStream.write`): returns how many were taken.
    func writeBlocking(_ bytes: UnsafeRawBufferPointer) -> Result<Int, ContinuationError> {
        guard !conduit.eventLoop.inEventLoop else {
            return .failure(ContinuationError(.other, "a blocking write on the stream's own event loop would never return"))
        }
        if let error = waitForRoomBlocking() { return .failure(error) }
        var taken = 0
        repeat {
            let count = min(Frame.maximumData, bytes.count - taken)
            do throws(ContinuationError) {
                try send(UnsafeRawBufferPointer(rebasing: bytes[taken..<taken + count]))
            } catch {
                return taken > 0 ? .success(taken) : .failure(error)
            }
            taken += count
        } while taken < bytes.count && hasRoom
        return .success(taken)
    }

    /// Whether a write would be taken without waiting.
    var hasRoom: Bool {
        core.withLock { $0.machine.writeRefusal() == nil && $0.inFlight < Self.writeHighWater }
    }

    /// Half-closes: sends `eof`, after which this side writes nothing more (the other side's reader ends cleanly).
    /// Returns once `eof` is written.
    func finish() async throws {
        let future = try sendEndOfStream()
        do {
            try await future.get()
        } catch {
            // The machine has finished, so its write refusal would only say so: the reason is the stream's failure.
            let (failure, path) = core.withLock { ($0.machine.failure, $0.machine.path) }
            throw failure ?? watch?.failure
                ?? ContinuationError(path == .direct ? .peerGone : .agentGone, "the end of the stream could not be sent: \(error)")
        }
    }

    /// Half-closes without waiting (Foundation's `OutputStream.close`).
    func finishWithoutWaiting() {
        _ = try? sendEndOfStream()
    }

    private func sendEndOfStream() throws -> EventLoopFuture<Void> {
        let refusal = core.withLock { core -> ContinuationError? in
            if let refusal = core.machine.finish() { return refusal }
            core.endOfStreamUnsent = true
            return nil
        }
        if let refusal { throw refusal }
        let written = send(.endOfStream)
        core.withLock { $0.endOfStreamUnsent = false }
        closeIfEndedDirect()
        return written
    }

    /// A direct stream has no agent to close it once both sides have finished (issue 30): each side closes once it
    /// has sent its last bytes and read the other's end. NIOSSL's close sends close_notify and waits for the other's,
    /// so neither socket closes with bytes unread in it (which would reset the connection under the other's last
    /// bytes). Not between the machine's finish and the `eof`'s write: the other side's end read on the event loop
    /// then made the stream end cleanly, and the close after the write before cut the `eof` off (measured: 1-2 of
    /// 20 streams under load failed with `appGone` at the other side, this side's `finish` with `streamClosed`).
    private func closeIfEndedDirect() {
        let last = core.withLock { core -> EventLoopFuture<Void>?? in
            guard core.machine.path == .direct, core.machine.endedCleanly, !core.closingDirect, !core.endOfStreamUnsent
            else { return nil }
            core.closingDirect = true
            return .some(core.lastWrite)
        }
        guard let last else { return }
        guard let written = last else { return conduit.close() }
        written.whenComplete { [self] _ in conduit.close() }
    }

    /// Calls `waiter` once there is room to write, or the stream can take no more (on any thread). Returns the id to
    /// cancel the wait with, or nil when answered at once.
    @discardableResult
    func whenWritable(_ waiter: @escaping @Sendable (Room) -> Void) -> UInt64? {
        let (now, id) = core.withLock { core -> (Room?, UInt64?) in
            if let refusal = core.machine.writeRefusal() { return (.failed(refusal), nil) }
            if core.inFlight < Self.writeHighWater { return (.available, nil) }
            let id = core.nextID
            core.nextID += 1
            core.writers[id] = waiter
            return (nil, id)
        }
        if let now { waiter(now) }
        return id
    }

    private func waitForRoom() async throws {
        let id = Mutex<UInt64?>(nil)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                let waiting = whenWritable { room in
                    switch room {
                    case .available: waiter.resume()
                    case .failed(let error): waiter.resume(throwing: error)
                    case .cancelled: waiter.resume(throwing: CancellationError())
                    }
                }
                id.withLock { $0 = waiting }
                if Task.isCancelled, let waiting { cancelWait(waiting) }
            }
        } onCancel: {
            if let waiting = id.withLock({ $0 }) { cancelWait(waiting) }
        }
    }

    private func waitForRoomBlocking() -> ContinuationError? {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<ContinuationError?>(nil)
        whenWritable { room in
            if case .failed(let error) = room { box.withLock { $0 = error } }
            done.signal()
        }
        done.wait()
        return box.withLock { $0 }
    }

    private func cancelWait(_ id: UInt64) {
        let waiter = core.withLock { $0.writers.removeValue(forKey: id) }
        waiter?(.cancelled)
    }

    /// Hands bytes to the conduit as one data frame (at most ``Frame/maximumData``): copied once, into the frame.
    private func send(_ bytes: Data.SubSequence) throws(ContinuationError) {
        var buffer = Self.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        try send(buffer)
    }

    private func send(_ bytes: UnsafeRawBufferPointer) throws(ContinuationError) {
        var buffer = Self.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        try send(buffer)
    }

    private func send(_ buffer: ByteBuffer) throws(ContinuationError) {
        let count = buffer.readableBytes
        let refusal = core.withLock { core -> ContinuationError? in
            if let refusal = core.machine.writeRefusal() { return refusal }
            core.inFlight += count
            return nil
        }
        if let refusal { throw refusal }
        // The app connection carries one stream: the agent ignores the id and flag here.
        let written = conduit.write(OutboundFrame.data(stream: 0, opener: false, buffer))
        core.withLock { $0.lastWrite = written }
        written.whenComplete { [self] _ in wentOut(count) }
    }

    /// `count` bytes went out (or failed with the connection): writers waiting for room go on once the
    /// bytes in flight are down to ``writeLowWater``.
    private func wentOut(_ count: Int) {
        let waiters = core.withLock { core -> [@Sendable (Room) -> Void] in
            core.inFlight -= count
            guard core.inFlight <= Self.writeLowWater else { return [] }
            defer { core.writers = [:] }
            return Array(core.writers.values)
        }
        for waiter in waiters { waiter(.available) }
    }

    @discardableResult
    private func send(_ message: IPCMessage) -> EventLoopFuture<Void> {
        guard let bytes = try? BinaryPropertyListEncoder.encode(message.propertyList) else {
            return conduit.eventLoop.makeFailedFuture(ContinuationError(.other, "the message \(message.kind) cannot be encoded"))
        }
        let written = conduit.write(OutboundFrame.message(ByteBuffer(bytes: bytes)))
        core.withLock { $0.lastWrite = written }
        return written
    }

    // MARK: Closing

    /// Closes the connection at once, both directions (F3: the app never sends `reset`; the agent resets the other
    /// side with `appGone` unless both sides had finished).
    func close() {
        update { $0.close() }
    }

    /// What the last holder of the stream does when it lets go. A stream that ended cleanly both ways (this side
    /// finished and read the other's end) is left for the agent to close: it does once its own last bytes for the
    /// other side are out, and closing first would make it reset them (`appGone`). Anything else is closed once
    /// everything written so far has left.
    func release() {
        let (endedCleanly, last) = core.withLock { ($0.machine.endedCleanly, $0.lastWrite) }
        guard !endedCleanly else { return }
        guard let last else { return close() }
        last.whenComplete { [self] _ in close() }
    }

    // MARK: From the conduit (its event loop)

    func received(_ plist: PropertyList) {
        do {
            let message = try IPCMessage(plist)
            update { $0.received(message) }
        } catch {
            update { $0.receivedMalformed("\(error)") }
        }
    }

    /// One stream per connection: the id and opener flag mean nothing here.
    func receivedData(stream: UInt64, opener: Bool, _ bytes: ByteBuffer) -> Bool {
        update { $0.received(data: bytes) }
        // At the reader's high-water mark the conduit stops being read; the reader draining it resumes reading
        // (``StreamEndStateMachine/Effects/resumeReading``). Decided under the lock, so a pause and the resume that
        // follows it reach the conduit in that order.
        core.withLock { core in
            if !core.machine.mayRead() { conduit.setReading(false) }
        }
        return true
    }

    /// A frame above the limits, or not a readable property list: the stream cannot go on (the conduit closes).
    func malformed(_ error: Error) {
        update { $0.receivedMalformed("\(error)") }
    }

    func closed() {
        let failure = watch?.failure
        update { $0.connectionClosed(failure: failure) }
        if let agent = agentConnection.withLock({ descriptor -> Int32? in
            defer { descriptor = nil }
            return descriptor
        }) {
            Glibc.close(agent)
        }
    }

    // MARK: Effects

    static let allocator = ByteBufferAllocator()

    /// The reader took the buffer down to its low-water mark: the conduit is read again. Under the lock, as the pause.
    private func resumeReading() {
        core.withLock { _ in conduit.setReading(true) }
    }

    /// Who is answered for an input: taken from `core` under the lock, answered outside it.
    private struct Taken {
        var opener: CheckedContinuation<Void, any Error>?
        var reader: (@Sendable (ReadResult?) -> Void)?
        var watchers: [@Sendable () -> Void] = []
        var writers: [@Sendable (Room) -> Void] = []
    }

    /// Feeds the machine one input and does what it says.
    func update(_ input: (inout StreamEndStateMachine) -> StreamEndStateMachine.Effects) {
        let (effects, taken) = core.withLock { core -> (StreamEndStateMachine.Effects, Taken) in
            let effects = input(&core.machine)
            var taken = Taken()
            if effects.opened != nil {
                taken.opener = core.opener
                core.opener = nil
                core.openTimer?.cancel()
                core.openTimer = nil
            }
            if effects.reader != nil {
                taken.reader = core.reader?.answer
                core.reader = nil
            }
            if effects.inputChanged {
                taken.watchers = core.watchers
                core.watchers = []
            }
            if effects.writers != nil {
                taken.writers = Array(core.writers.values)
                core.writers = [:]
            }
            return (effects, taken)
        }
        perform(effects, taken: taken)
        closeIfEndedDirect()
    }

    private func perform(_ effects: StreamEndStateMachine.Effects, taken: Taken) {
        if effects.close { conduit.close() }
        if effects.resumeReading { resumeReading() }
        switch effects.opened {
        case .opened: taken.opener?.resume()
        case .failed(let error): taken.opener?.resume(throwing: error)
        case nil: break
        }
        if let result = effects.reader { taken.reader?(result) }
        if let error = effects.writers {
            for writer in taken.writers { writer(.failed(error)) }
        }
        for watcher in taken.watchers { watcher() }
    }
}
