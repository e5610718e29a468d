import BatonProtocol
import NIOCore

/// The app's end of one continuation stream (F2, F3) as a pure state machine: the agent's answer to the stream's
/// hello, then each direction on its own (bytes, a clean end, an abnormal one), and whether the connection is read.
///
/// No sockets, no clocks: ``StreamEnd`` tells it what happened (a frame arrived, the connection closed, the reader
/// wants bytes, the opening timed out) and does what the returned ``Effects`` say.
///
/// The protocol (docs/PROTOCOL.md §7–8): the app's first frame is the stream's hello; the agent answers `welcome`
/// (open) or `refused {code}`. After the welcome, data frames go both ways; `eof` ends one direction (a half-close),
/// `reset {reason}` from the agent ends both abnormally. The connection closing without either is the agent gone.
struct StreamEndStateMachine {
    /// Bytes the reader may leave waiting before the connection stops being read: the rest waits in the kernel, then
    /// at the agents, and the writer on the other device stops (F3's backpressure). Reading starts again once the
    /// reader has brought the buffer down to ``lowWater``.
    static let highWater = 1 << 20
    static let lowWater = 256 << 10
    /// The most bytes one read hands over, so a reader gets a bounded chunk however much waits.
    static let maximumChunk = 1 << 20

    /// One direction's state, as the reader sees it.
    enum InputState: Equatable {
        /// Bytes may still come.
        case open
        /// The other side finished (`eof`): what is buffered is all there is.
        case ended
        /// The stream ended abnormally (reset, the agent gone, a broken protocol): after what is buffered, this.
        case failed(ContinuationError)
        /// This side stopped reading (a closed `InputStream`): what arrives is dropped, so the other side never
        /// waits on it.
        case abandoned
    }

    /// The other direction, as the writer sees it.
    enum OutputState: Equatable {
        case open
        /// This side sent `eof`.
        case finished
        case failed(ContinuationError)
    }

    private enum State {
        /// The hello is sent; the agent's first answer decides.
        case opening
        /// The agent refused, did not answer, or went away first: the stream never opened.
        case failedToOpen(ContinuationError)
        /// Welcomed: each direction ends on its own.
        case open(input: InputState, output: OutputState)
    }

    /// What a read gets.
    enum ReadResult: Equatable {
        /// Bytes, in order (at most ``StreamEndStateMachine/maximumChunk`` unless one frame is larger).
        case bytes([ByteBuffer])
        /// The other side finished: no more bytes, ever.
        case end
        case failed(ContinuationError)
    }

    /// How the opening ended.
    enum OpenResult: Equatable {
        case opened
        case failed(ContinuationError)
    }

    /// What to do after an input. Each field is one independent thing; most inputs set one or none.
    struct Effects: Equatable {
        /// Answer whoever waits for the stream to open.
        var opened: OpenResult?
        /// Answer the waiting reader.
        var reader: ReadResult?
        /// Fail every writer waiting for room, with this.
        var writers: ContinuationError?
        /// Read the connection again (a read was held back while the reader's buffer was full).
        var resumeReading = false
        /// Close the connection.
        var close = false
        /// Something arrived for the input (bytes, its end, a failure): tell whoever watches for that.
        var inputChanged = false
    }

    private var state = State.opening
    /// How the stream's bytes travel: set when it opens (issue 30).
    private(set) var path = StreamPath.relayed
    private var buffer = CircularBuffer<ByteBuffer>()
    private var bufferedBytes = 0
    /// A reader waits for bytes (it was told to wait and has not been answered).
    private var readerWaiting = false
    /// Whether the connection may be read now, and whether a read was held back because it may not.
    private var readingPaused = false
    private var readHeldBack = false

    init() {}

    // MARK: From the agent

    /// A message frame arrived.
    mutating func received(_ message: IPCMessage) -> Effects {
        switch state {
        case .opening:
            switch message {
            case .welcome:
                state = .open(input: .open, output: .open)
                return Effects(opened: .opened)
            case .refused(let code, let text):
                return failOpening(Self.refusal(code: code, message: text), close: true)
            default:
                return failOpening(ContinuationError(.protocolViolation, "the agent answered the stream's hello with '\(message.kind)'"), close: true)
            }
        case .failedToOpen:
            return Effects()
        case .open(let input, let output):
            switch message {
            case .endOfStream:
                switch input {
                case .open:
                    state = .open(input: .ended, output: output)
                    var effects = Effects(inputChanged: true)
                    if readerWaiting, buffer.isEmpty {
                        readerWaiting = false
                        effects.reader = .end
                    }
                    return effects
                case .abandoned:
                    return Effects()
                case .ended, .failed:
                    return violation("the agent ended the stream's input twice")
                }
            case .resetStream(let reason, let text):
                return fail(Self.reset(reason: reason, message: text), close: false)
            case .refused(let code, let text):
                // Not expected once open, but its meaning is plain: the stream is over, for this reason.
                return fail(Self.refusal(code: code, message: text), close: true)
            default:
                return violation("the agent sent '\(message.kind)' on an open stream, where only data, eof and reset may come")
            }
        }
    }

    /// The stream opened on the direct path (issue 30): the connection is the other app's, over TLS, and what
    /// comes on it is that app's data, `eof` and nothing else.
    mutating func openedDirect() -> Effects {
        guard case .opening = state else { return Effects() }
        path = .direct
        state = .open(input: .open, output: .open)
        return Effects(opened: .opened)
    }

    /// A data frame arrived.
    mutating func received(data: ByteBuffer) -> Effects {
        switch state {
        case .opening:
            return failOpening(ContinuationError(.protocolViolation, "the agent sent stream data before its welcome"), close: true)
        case .failedToOpen:
            return Effects()
        case .open(let input, _):
            switch input {
            case .open:
                guard data.readableBytes > 0 else { return Effects() }
                if readerWaiting {
                    // The buffer is empty whenever a reader waits: hand the bytes straight over.
                    readerWaiting = false
                    return Effects(reader: .bytes([data]), inputChanged: true)
                }
                buffer.append(data)
                bufferedBytes += data.readableBytes
                if bufferedBytes >= Self.highWater { readingPaused = true }
                return Effects(inputChanged: true)
            case .abandoned:
                return Effects()
            case .ended, .failed:
                return violation("the agent sent stream data after the input ended")
            }
        }
    }

    /// A frame that is not a readable message arrived.
    mutating func receivedMalformed(_ description: String) -> Effects {
        switch state {
        case .opening:
            return failOpening(ContinuationError(.protocolViolation, "the agent's answer cannot be read: \(description)"), close: true)
        case .failedToOpen:
            return Effects()
        case .open:
            return violation("a frame from the agent cannot be read: \(description)")
        }
    }

    /// The connection closed (whoever closed it); `failure`: why, when the connection knows (a direct stream's TCP
    /// connection timed out or was reset, its TLS failed).
    mutating func connectionClosed(failure: ContinuationError? = nil) -> Effects {
        switch state {
        case .opening:
            return failOpening(failure ?? ContinuationError(.agentGone, "the agent closed the stream's connection before answering"), close: false)
        case .failedToOpen:
            return Effects()
        case .open:
            switch path {
            case .relayed:
                return fail(ContinuationError(.agentGone, "the connection to this device's agent ended before the stream did"), close: false)
            case .direct:
                // F3: the other app closed or quit (a clean close of its connection), or its device went (keepalive).
                return fail(failure ?? ContinuationError(.appGone, "the other app closed the stream (or quit) before it ended"), close: false)
            }
        }
    }

    /// No answer came within `limit` (said as a person reads it: "15 s").
    mutating func openingTimedOut(after limit: String) -> Effects {
        switch state {
        case .opening:
            return failOpening(ContinuationError(.timedOut, "the agent did not answer the stream's hello within \(limit)"), close: true)
        case .failedToOpen, .open:
            return Effects()
        }
    }

    /// How the opening ended, or nil while it has not.
    var openResult: OpenResult? {
        switch state {
        case .opening: nil
        case .failedToOpen(let error): .failed(error)
        case .open: .opened
        }
    }

    // MARK: From the app

    /// The reader wants bytes: the answer now, or nil when it must wait (it is answered through ``Effects/reader``).
    mutating func read() -> (ReadResult?, Effects) {
        switch state {
        case .opening:
            return (.failed(ContinuationError(.other, "the stream is not open yet")), Effects())
        case .failedToOpen(let error):
            return (.failed(error), Effects())
        case .open(let input, _):
            if case .abandoned = input {
                return (.failed(ContinuationError(.streamClosed, "this side stopped reading the stream")), Effects())
            }
            guard !readerWaiting else {
                return (.failed(ContinuationError(.other, "another task is already reading this stream")), Effects())
            }
            if !buffer.isEmpty { return (.bytes(takeChunk()), resumeIfDrained()) }
            switch input {
            case .open:
                readerWaiting = true
                return (nil, Effects())
            case .ended:
                return (.end, Effects())
            case .failed(let error):
                return (.failed(error), Effects())
            case .abandoned:
                return (.failed(ContinuationError(.streamClosed, "this side stopped reading the stream")), Effects())
            }
        }
    }

    /// The waiting reader gave up (its task was cancelled).
    mutating func readCancelled() {
        readerWaiting = false
    }

    /// Whether a read would be answered at once, and how: for `hasBytesAvailable` and run-loop events.
    var inputReady: Bool {
        switch state {
        case .opening: false
        case .failedToOpen: true
        case .open(let input, _):
            switch input {
            case .open: !buffer.isEmpty
            case .ended, .failed, .abandoned: true
            }
        }
    }

    /// Both directions ended cleanly: this side finished, and the other side's end was read (or is buffered).
    var endedCleanly: Bool {
        guard case .open(.ended, .finished) = state else { return false }
        return true
    }

    /// The writer wants to send bytes: nil when it may, else why not.
    func writeRefusal() -> ContinuationError? {
        switch state {
        case .opening:
            return ContinuationError(.other, "the stream is not open yet")
        case .failedToOpen(let error):
            return error
        case .open(_, let output):
            switch output {
            case .open: return nil
            case .finished: return ContinuationError(.streamClosed, "this side already finished writing to the stream")
            case .failed(let error): return error
            }
        }
    }

    /// Why the stream failed, in either direction, if it did.
    var failure: ContinuationError? {
        switch state {
        case .opening: nil
        case .failedToOpen(let error): error
        case .open(.failed(let error), _), .open(_, .failed(let error)): error
        case .open: nil
        }
    }

    /// The writer is done (half-close): nil when `eof` should go out now, else why it cannot.
    mutating func finish() -> ContinuationError? {
        if let refusal = writeRefusal() { return refusal }
        guard case .open(let input, _) = state else { return nil }
        state = .open(input: input, output: .finished)
        return nil
    }

    /// This side stops reading: buffered bytes go, and arriving ones are dropped from now on.
    mutating func abandonInput() -> Effects {
        guard case .open(let input, let output) = state, case .open = input else { return Effects() }
        state = .open(input: .abandoned, output: output)
        buffer.removeAll()
        bufferedBytes = 0
        var effects = resumeIfDrained()
        if readerWaiting {
            readerWaiting = false
            effects.reader = .failed(ContinuationError(.streamClosed, "this side stopped reading the stream"))
        }
        return effects
    }

    /// The app closes the stream (both directions, abruptly).
    mutating func close() -> Effects {
        switch state {
        case .opening:
            return failOpening(ContinuationError(.streamClosed, "the stream was closed before it opened"), close: true)
        case .failedToOpen:
            return Effects(close: true)
        case .open:
            let effects = fail(ContinuationError(.streamClosed, "this side closed the stream"), close: true)
            buffer.removeAll()
            bufferedBytes = 0
            return effects
        }
    }

    /// Whether the reader's buffer is at its high-water mark, so the connection is not read until it drains.
    var isReadingPaused: Bool { readingPaused }

    /// The channel wants to read: whether it may (the reader's buffer is below the high-water mark). A read held back
    /// now is resumed through ``Effects/resumeReading``.
    mutating func mayRead() -> Bool {
        guard readingPaused else { return true }
        readHeldBack = true
        return false
    }

    // MARK: Helpers

    private mutating func takeChunk() -> [ByteBuffer] {
        var taken: [ByteBuffer] = []
        var count = 0
        while let first = buffer.first, taken.isEmpty || count + first.readableBytes <= Self.maximumChunk {
            taken.append(buffer.removeFirst())
            count += first.readableBytes
        }
        bufferedBytes -= count
        return taken
    }

    private mutating func resumeIfDrained() -> Effects {
        guard readingPaused, bufferedBytes <= Self.lowWater else { return Effects() }
        readingPaused = false
        guard readHeldBack else { return Effects() }
        readHeldBack = false
        return Effects(resumeReading: true)
    }

    private mutating func failOpening(_ error: ContinuationError, close: Bool) -> Effects {
        state = .failedToOpen(error)
        return Effects(opened: .failed(error), close: close)
    }

    /// Both directions end with `error` where they have not ended already; a waiting reader with nothing buffered
    /// hears it now.
    private mutating func fail(_ error: ContinuationError, close: Bool) -> Effects {
        guard case .open(let input, let output) = state else { return Effects(close: close) }
        let newInput: InputState
        switch input {
        case .open: newInput = .failed(error)
        case .ended, .failed, .abandoned: newInput = input
        }
        let newOutput: OutputState
        var writers: ContinuationError?
        switch output {
        case .open:
            newOutput = .failed(error)
            writers = error
        case .finished, .failed:
            newOutput = output
        }
        state = .open(input: newInput, output: newOutput)
        var effects = Effects(writers: writers, close: close, inputChanged: newInput != input)
        if readerWaiting, buffer.isEmpty {
            readerWaiting = false
            switch newInput {
            case .open: break
            case .ended: effects.reader = .end
            case .failed(let failure): effects.reader = .failed(failure)
            case .abandoned: effects.reader = .failed(ContinuationError(.streamClosed, "this side stopped reading the stream"))
            }
        }
        return effects
    }

    /// The agent broke the protocol: everything fails and the connection closes.
    private mutating func violation(_ text: String) -> Effects {
        fail(ContinuationError(.protocolViolation, text), close: true)
    }

    /// The error for a `refused {code, message}` answer: one code per reason the agent gives (F2).
    static func refusal(code: IPCRefusal, message: String) -> ContinuationError {
        if let failure = ContinuationFailure(rawValue: code.rawValue) {
            return ContinuationError(ContinuationError.Code(failure), message)
        }
        // Hello refusals that are no continuation failure: unknownApp, unsupportedVersion, alreadyConnected, ...
        return ContinuationError(.other, "\(message) [\(code)]")
    }

    /// The error for a `reset {reason, message}`: the reason is a ``FetchFailure`` raw value (F3).
    static func reset(reason: String, message: String) -> ContinuationError {
        guard let failure = ContinuationFailure(rawValue: reason) else {
            return ContinuationError(.protocolViolation, "the stream was reset for a reason this version does not know (\(reason)): \(message)")
        }
        return ContinuationError(ContinuationError.Code(failure), message)
    }
}

extension IPCMessage {
    /// The message's `t`, for errors that name an unexpected message.
    var kind: String {
        propertyList.dictionaryValue?["t"]?.stringValue ?? "?"
    }
}
