import BatonClient
import BatonCore
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A bus app's continuation stream as the agent's ``IPCConnection`` sees it (issue 28 item 1; F2, F3;
/// docs/PROTOCOL.md §11 "Streams"): two pipes, one a direction, whose app ends went to the app over D-Bus (`h`) and
/// whose agent ends run here as one NIO pipe channel. The connection, the splice and the handoff coordinator are the
/// Unix socket's: this conduit translates between the pipes' bytes and §7's stream messages.
///
/// - The app's bytes reach the owner as data frames would (`receivedData(stream: 0, ...)`); the end of file on the
///   app's `output` as `eof` (a half-close: the other direction goes on). When the app has closed its `input` too
///   (the kernel says no reader is left), the connection closes after that `eof`: the splice's app-gone path.
/// - Written data goes into the app's `input` pipe; `eof` closes the agent's write end once what was written before
///   is out (the app reads its end of file); `reset` goes to ``whenReset(_:)``'s handler and closes both pipes;
///   `welcome` and `refused` complete ``opened``.
/// - Nothing the app wrote is delivered before the `welcome` (the originating app has its descriptors, and may write,
///   before it is accepted), nor while the owner is not reading (``setReading(_:)``): then the agent does not read the
///   pipe, and the app's writes block once the pipe is full. What the kernel hands over with an end of file regardless
///   (NIO reads a pipe to its end when it hangs up) waits here, at most one pipe's capacity.
///
/// Sendable, checked: its `let`s are Sendable and everything mutable is in `state`, under its lock; the channel's own
/// calls are thread-safe. The pipe handler calls in on the channel's loop.
final class DBusStreamConduit: AppConduit {
    /// What came from the app and waits for the owner.
    enum Inbound {
        case data(ByteBuffer)
        /// The app's `output` reached its end of file.
        case endOfFile
    }

    struct State {
        var sink: MessageSink?
        var held = CircularBuffer<Inbound>()
        /// The agent said `welcome`: the app's bytes may go to the owner from now on.
        var open = false
        /// What the owner asked with ``setReading(_:)``.
        var reading = true
        /// A delivery is under way: a nested call (the owner turning reading back on) leaves the rest to it.
        var pumping = false
        /// The agent's write end is closed (`eof` or `reset`): nothing more is written to the app.
        var outputClosed = false
        /// The agent's write end is being closed for its `eof`, every write before it done.
        var outputShut = false
        /// The last write of data to the app: the half-close waits for it.
        var lastWrite: EventLoopFuture<Void>?
        /// The app's `output` reached its end of file (or it had to be taken so: below).
        var sawEndOfFile = false
        /// The agent closed the channel (or an error did): what the app wrote and the owner had not taken is dropped.
        var closing = false
        /// The channel has closed.
        var inactive = false
        /// The owner heard the close.
        var ended = false
        /// ``opened`` has completed.
        var settled = false
        /// Where a `reset` goes, once set; a reset that came before it waits here.
        var onReset: (@Sendable (DBusStreamReset) -> Void)?
        var reset: DBusStreamReset?
    }

    let channel: Channel
    let credentials: PeerCredentials
    /// Completes with the agent's `welcome` on this stream; fails with a ``DBusStreamRefusal`` (its `refused`, or the
    /// pipes closed before it opened).
    let opened: EventLoopFuture<Void>
    let opening: EventLoopPromise<Void>
    let readers: DBusStreamReaderWatch
    let state = NIOLockedValueBox(State())

    /// Bytes queued for the app past which ``isWritable`` is false: two of the windows the agent offers (the splice
    /// never has more than one unread by the app in flight, ``StreamFlow``), so it is false only for an app that
    /// stopped reading while the agent still had to tell it something.
    static let waterMark = ChannelOptions.Types.WriteBufferWaterMark(low: StreamFlow.defaultWindow, high: 2 * StreamFlow.defaultWindow)
    /// One read of the app's pipe: at most a data frame's bytes (a pipe holds 64 KiB unless its app enlarged it).
    static let reads = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 4_096, maximum: Frame.maximumData)

    init(channel: Channel, credentials: PeerCredentials, readers: DBusStreamReaderWatch) {
        self.channel = channel
        self.credentials = credentials
        self.readers = readers
        opening = channel.eventLoop.makePromise()
        opened = opening.futureResult
    }

    /// Runs the agent's ends of `pipes` as a channel on `loop` (taking them; on failure they are closed here).
    static func make(on loop: EventLoop, pipes: DBusStreamPipes, credentials: PeerCredentials) -> EventLoopFuture<DBusStreamConduit> {
        let readers: DBusStreamReaderWatch
        do {
            readers = try DBusStreamReaderWatch(writeEnd: pipes.agentOutput)
        } catch {
            pipes.closeAgentEnds()
            return loop.makeFailedFuture(error)
        }
        let handler = DBusStreamPipeHandler()
        return NIOPipeBootstrap(group: loop)
            .channelOption(.autoRead, value: false)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelOption(.writeBufferWaterMark, value: waterMark)
            .channelOption(.recvAllocator, value: reads)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
            }
            .takingOwnershipOfDescriptors(input: pipes.agentInput, output: pipes.agentOutput)
            .flatMapErrorThrowing { error in
                // Not taken: still ours to close.
                pipes.closeAgentEnds()
                readers.close()
                throw DBusStreamRefusal(.stream(.tooManyStreams), "the agent cannot run the stream's pipes: \(error)")
            }
            .flatMap { channel in
                let conduit = DBusStreamConduit(channel: channel, credentials: credentials, readers: readers)
                // On the loop: the handler reports only there, so it sees the conduit before anything happens.
                return channel.eventLoop.submit {
                    handler.conduit = conduit
                    if !channel.isActive { conduit.channelClosed() }
                    return conduit
                }
            }
    }

    var eventLoop: EventLoop { channel.eventLoop }
    var isActive: Bool { channel.isActive }
    var isWritable: Bool { channel.isWritable }
    var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// The bus's credentials of the app (its `GetConnectionCredentials`), as its adapter gave them.
    func peerCredentials() -> EventLoopFuture<PeerCredentials> {
        eventLoop.makeSucceededFuture(credentials)
    }

    func attach(_ sink: MessageSink) {
        eventLoop.preconditionInEventLoop()
        let ended = state.withLockedValue { state -> Bool in
            state.sink = sink
            return state.ended
        }
        if ended { sink.closed() } else { pump() }
    }

    /// A message the agent says (a refusal, through ``IPCConnection/send(_:)``).
    func send(_ message: PropertyList) {
        guard let said = try? IPCMessage(message) else { return }
        _ = agentSaid(said)
    }

    func write(_ frame: OutboundFrame) -> EventLoopFuture<Void> {
        switch frame {
        case .message(let bytes):
            guard let plist = try? BinaryPropertyListDecoder.decode(Data(bytes.readableBytesView), limits: MessageHandler.limits),
                let said = try? IPCMessage(plist)
            else {
                return eventLoop.makeFailedFuture(BatonClientError(.protocolViolation, "a frame that is not a readable message"))
            }
            return agentSaid(said)
        case .data(_, _, let bytes):
            let written = state.withLockedValue { state -> EventLoopFuture<Void>? in
                guard !state.outputClosed else { return nil }
                let written = channel.writeAndFlush(bytes)
                state.lastWrite = written
                return written
            }
            guard let written else { return eventLoop.makeFailedFuture(ChannelError.outputClosed) }
            // The app closed its `input` (the pipe has no reader, EPIPE): it has gone, as a socket's peer that closed.
            written.whenFailure { [self] _ in close() }
            return written
        }
    }

    /// What the agent says on a stream, translated for the pipes.
    private func agentSaid(_ message: IPCMessage) -> EventLoopFuture<Void> {
        switch message {
        case .welcome:
            let first = state.withLockedValue { state -> Bool in
                defer { state.open = true }
                return !state.open
            }
            if first { settle(.success(())) }
            // After the task that wrote the welcome: the splice takes the app's bytes only once it has said it.
            eventLoop.execute { [self] in
                applyReading()
                pump()
            }
        case .refused(let code, let text):
            settle(.failure(DBusStreamRefusal(code, text)))
        case .endOfStream:
            // Once the writes before it are out: NIO would wait for them too, but not when the app has ended its side
            // already (it closes the whole channel then, dropping them). The reader watch's duplicate goes with the
            // write end, or the app would never read its end of file.
            let last = state.withLockedValue { state -> EventLoopFuture<Void>? in
                state.outputClosed = true
                return state.lastWrite
            }
            let closing = eventLoop.makePromise(of: Void.self)
            (last ?? eventLoop.makeSucceededVoidFuture()).whenComplete { [self] _ in
                state.withLockedValue { $0.outputShut = true }
                channel.close(mode: .output, promise: closing)
            }
            closing.futureResult.whenComplete { [readers] _ in readers.close() }
            return closing.futureResult
        case .resetStream(let reason, let text):
            let handler = state.withLockedValue { state -> (@Sendable (DBusStreamReset) -> Void)? in
                state.outputClosed = true
                if state.onReset == nil { state.reset = DBusStreamReset(reason: reason, message: text) }
                return state.onReset
            }
            handler?(DBusStreamReset(reason: reason, message: text))
            close()
        default:
            // Nothing else is said on a stream's connection.
            break
        }
        return eventLoop.makeSucceededVoidFuture()
    }

    /// Where a `reset` of this stream goes (§8 "Reset"): the bus adapter's `StreamReset` call. Called at once with a
    /// reset that came before it. The pipes close right after the handler returns.
    func whenReset(_ handler: @escaping @Sendable (DBusStreamReset) -> Void) {
        let early = state.withLockedValue { state -> DBusStreamReset? in
            state.onReset = handler
            defer { state.reset = nil }
            return state.reset
        }
        if let early { handler(early) }
    }

    func setReading(_ reading: Bool) {
        state.withLockedValue { $0.reading = reading }
        eventLoop.execute { [self] in
            applyReading()
            if reading { pump() }
        }
    }

    /// Reads the app's pipe only while the stream is open and its owner reads.
    private func applyReading() {
        let on = state.withLockedValue { $0.open && $0.reading && !$0.ended }
        channel.setOption(ChannelOptions.autoRead, value: on).whenFailure { _ in }
        if on { channel.read() }
    }

    func close() {
        let inactive = state.withLockedValue { state -> Bool in
            state.closing = true
            return state.inactive
        }
        channel.close(promise: nil)
        // Closed already, its close held behind what the app wrote: the owner hears it now, the rest dropped.
        if inactive { eventLoop.execute { [self] in end() } }
    }

    private func settle(_ result: Result<Void, Error>) {
        let first = state.withLockedValue { state -> Bool in
            defer { state.settled = true }
            return !state.settled
        }
        if first { opening.completeWith(result) }
    }

    // MARK: From the pipe handler, on the loop

    func inbound(_ event: Inbound) {
        state.withLockedValue { state in
            if case .endOfFile = event { state.sawEndOfFile = true }
            state.held.append(event)
        }
        pump()
    }

    /// An error on the pipes: the app's end is gone, and so is what it wrote.
    func failed() {
        close()
    }

    /// Hands what the app wrote to the owner, in order, while the stream is open and the owner reads.
    private func pump() {
        guard state.withLockedValue({ state in
            defer { state.pumping = true }
            return !state.pumping
        }) else { return }
        while true {
            let next = state.withLockedValue { state -> (Inbound, MessageSink)? in
                guard state.open, state.reading, !state.ended, let sink = state.sink, let event = state.held.popFirst() else { return nil }
                return (event, sink)
            }
            guard let (event, sink) = next else { break }
            switch event {
            case .data(let bytes):
                if !sink.receivedData(stream: 0, opener: false, bytes) {
                    sink.malformed(BatonClientError(.protocolViolation, "stream bytes where none may come"))
                    close()
                }
            case .endOfFile:
                sink.received(IPCMessage.endOfStream.propertyList)
                // Its `input` closed too: the app has gone, not just ended its side.
                if readers.noReaderLeft() { close() }
            }
        }
        let done = state.withLockedValue { state -> Bool in
            state.pumping = false
            return state.inactive && state.held.isEmpty && !state.ended
        }
        if done { end() }
    }

    /// The channel closed. Closed by the agent, or by an error (a write the app's closed `input` refused), the owner
    /// hears it at once. Closed on its own after the agent's write end was shut for its `eof`, it is the app's end of
    /// file: NIO then closes the whole channel, without a half-close event; the owner hears that `eof` and what came
    /// before it, then the close, as a socket's peer's last bytes, `eof` and end of file.
    func channelClosed() {
        let closing = state.withLockedValue { state -> Bool in
            state.inactive = true
            if !state.closing, !state.sawEndOfFile, state.outputShut {
                state.sawEndOfFile = true
                state.held.append(.endOfFile)
            }
            return state.closing
        }
        readers.close()
        settle(.failure(DBusStreamRefusal(.stream(.cancelled), "the stream's pipes closed before it opened")))
        if closing { end() } else { pump() }
    }

    /// The owner hears the close, once; what it had not taken is dropped.
    private func end() {
        let sink = state.withLockedValue { state -> MessageSink? in
            guard !state.ended else { return nil }
            state.ended = true
            state.held.removeAll()
            // The owner holds this conduit: letting go of it breaks the cycle (issue 25 item 10).
            defer { state.sink = nil }
            return state.sink
        }
        sink?.closed()
    }
}
