@testable import Baton
import BatonProtocol
import NIOCore
import Testing

/// The app's end of a continuation stream as a pure state machine (F2, F3): no sockets, every input by hand.
@Suite("A continuation stream's app end, as a state machine (F2, F3)")
struct StreamEndStateMachineTests {
    typealias Machine = StreamEndStateMachine

    static func open() -> Machine {
        var machine = Machine()
        _ = machine.received(.welcome(device: "d", deviceName: "laptop"))
        return machine
    }

    static func bytes(_ count: Int, _ value: UInt8 = 7) -> ByteBuffer {
        ByteBuffer(repeating: value, count: count)
    }

    @Test("F2: the welcome opens the stream; until then nothing may be read or written")
    func welcomeOpens() {
        var machine = Machine()
        #expect(machine.openResult == nil)
        #expect(machine.writeRefusal()?.code == .other)
        #expect(machine.read().0 == .failed(ContinuationError(.other, "the stream is not open yet")))
        #expect(machine.received(.welcome(device: "d", deviceName: "n")) == Machine.Effects(opened: .opened))
        #expect(machine.openResult == .opened)
        #expect(machine.writeRefusal() == nil)
    }

    @Test(
        "F2: a refusal is typed by its code; hello refusals that are no continuation failure read as other",
        arguments: [
            ("noStreams", ContinuationError.Code.noStreams), ("notContinued", .notContinued), ("tooManyStreams", .tooManyStreams),
            ("appGone", .appGone), ("notCurrent", .notCurrent), ("peerGone", .peerGone), ("timedOut", .timedOut),
            ("unsupported", .unsupported), ("refused", .refused), ("appNotAnswering", .appNotAnswering),
            ("protocolViolation", .protocolViolation), ("notPermitted", .notPermitted), ("unknownApp", .other),
            ("unsupportedVersion", .other), ("somethingNew", .other),
        ]
    )
    func refusals(code: String, expected: ContinuationError.Code) {
        var machine = Machine()
        let effects = machine.received(.refused(code: IPCRefusal(rawValue: code), message: "no"))
        guard case .failed(let error) = effects.opened else {
            Issue.record("not failed: \(effects)")
            return
        }
        #expect(error.code == expected)
        #expect(effects.close)
        #expect(machine.writeRefusal()?.code == expected, "everything after fails the same way")
    }

    @Test("F2: data before the welcome, an unexpected answer, the connection closing, or no answer in time fail the opening")
    func openingFailures() {
        var early = Machine()
        #expect(early.received(data: Self.bytes(3)).opened == .failed(ContinuationError(.protocolViolation, "the agent sent stream data before its welcome")))
        var odd = Machine()
        guard case .failed(let oddError) = odd.received(.endOfStream).opened else {
            Issue.record("eof opened the stream")
            return
        }
        #expect(oddError.code == .protocolViolation)
        var closed = Machine()
        guard case .failed(let gone) = closed.connectionClosed().opened else {
            Issue.record("close opened the stream")
            return
        }
        #expect(gone.code == .agentGone)
        var slow = Machine()
        let timedOut = slow.openingTimedOut(after: "15 s")
        guard case .failed(let late) = timedOut.opened else {
            Issue.record("the timeout opened the stream")
            return
        }
        #expect(late.code == .timedOut && timedOut.close)
        #expect(slow.received(.welcome(device: "d", deviceName: "n")) == Machine.Effects(), "a late welcome changes nothing")
        #expect(slow.openingTimedOut(after: "15 s") == Machine.Effects())
    }

    @Test("F3: bytes wait for the reader in order; a waiting reader gets them at once; eof ends the reader after them")
    func bytesThenEnd() {
        var machine = Self.open()
        let (nothing, _) = machine.read()
        #expect(nothing == nil, "nothing yet: the reader waits")
        #expect(!machine.inputReady)
        let handed = machine.received(data: Self.bytes(5, 1))
        #expect(handed.reader == .bytes([Self.bytes(5, 1)]) && handed.inputChanged)
        _ = machine.received(data: Self.bytes(2, 2))
        _ = machine.received(data: Self.bytes(3, 3))
        #expect(machine.received(.endOfStream).reader == nil, "no reader waits: the end waits behind the bytes")
        #expect(machine.inputReady)
        #expect(machine.read().0 == .bytes([Self.bytes(2, 2), Self.bytes(3, 3)]))
        #expect(machine.read().0 == .end)
        #expect(machine.read().0 == .end, "and stays ended")
        #expect(machine.writeRefusal() == nil, "a half-close: this side may still write back")
    }

    @Test("F3: eof while the reader waits ends it at once")
    func endWakesReader() {
        var machine = Self.open()
        _ = machine.read()
        #expect(machine.received(.endOfStream).reader == .end)
    }

    @Test("F3: a reset fails reader (after the bytes that came first) and writer with its reason")
    func reset() {
        var machine = Self.open()
        _ = machine.received(data: Self.bytes(4))
        let effects = machine.received(.resetStream(reason: "appGone", message: "the app quit"))
        #expect(effects.writers?.code == .appGone && !effects.close, "the agent closes after a reset")
        #expect(machine.read().0 == .bytes([Self.bytes(4)]))
        #expect(machine.read().0 == .failed(ContinuationError(.appGone, "the app quit")))
        #expect(machine.writeRefusal()?.code == .appGone)
        var unknown = Self.open()
        _ = unknown.received(.resetStream(reason: "somethingNew", message: "?"))
        #expect(unknown.writeRefusal()?.code == .protocolViolation)
    }

    @Test("F3: after a clean end both ways, the agent closing the connection is no error")
    func cleanEnd() {
        var machine = Self.open()
        #expect(machine.finish() == nil)
        #expect(!machine.endedCleanly)
        _ = machine.received(.endOfStream)
        #expect(machine.endedCleanly)
        let effects = machine.connectionClosed()
        #expect(effects.writers == nil && effects.reader == nil)
        #expect(machine.read().0 == .end)
        #expect(machine.writeRefusal()?.code == .streamClosed)
    }

    @Test("F3: the connection closing before the stream ended is the agent gone, for reader and writer")
    func agentGone() {
        var machine = Self.open()
        _ = machine.read()
        let effects = machine.connectionClosed()
        #expect(effects.reader == .failed(ContinuationError(.agentGone, "the connection to this device's agent ended before the stream did")))
        #expect(effects.writers?.code == .agentGone)
    }

    @Test("F3: finish is a half-close: no more writes, a second finish fails, the input stays open")
    func halfClose() {
        var machine = Self.open()
        #expect(machine.finish() == nil)
        #expect(machine.finish()?.code == .streamClosed)
        #expect(machine.writeRefusal()?.code == .streamClosed)
        _ = machine.received(data: Self.bytes(3))
        #expect(machine.read().0 == .bytes([Self.bytes(3)]))
    }

    @Test("F3 backpressure: past the high-water mark reads are held back; draining the buffer resumes one")
    func backpressure() {
        var machine = Self.open()
        var may = machine.mayRead()
        #expect(may)
        let frame = Frame.maximumData
        for _ in 0..<(Machine.highWater / frame) {
            _ = machine.received(data: Self.bytes(frame))
        }
        may = machine.mayRead()
        #expect(!may, "the buffer is full: the read is held back")
        let (first, effects) = machine.read()
        guard case .bytes(let buffers) = first else {
            Issue.record("no bytes")
            return
        }
        #expect(buffers.reduce(0) { $0 + $1.readableBytes } <= Machine.maximumChunk)
        #expect(effects.resumeReading, "drained below the low-water mark: reading resumes")
        may = machine.mayRead()
        #expect(may)
        let again = machine.read().1
        #expect(again == Machine.Effects(), "resumed once")
    }

    @Test("a broken protocol after the welcome fails everything and closes: data after eof, eof twice, a stray message")
    func violations() {
        var afterEnd = Self.open()
        _ = afterEnd.received(.endOfStream)
        let late = afterEnd.received(data: Self.bytes(1))
        #expect(late.close && late.writers?.code == .protocolViolation)
        var twice = Self.open()
        _ = twice.received(.endOfStream)
        #expect(twice.received(.endOfStream).close)
        var stray = Self.open()
        let effects = stray.received(.save(request: 1, activity: 1, deadlineMilliseconds: 5))
        #expect(effects.close && effects.writers?.code == .protocolViolation)
        var unreadable = Self.open()
        #expect(unreadable.receivedMalformed("garbage").close)
    }

    @Test("close aborts both directions here: streamClosed for the reader and the writer")
    func close() {
        var machine = Self.open()
        _ = machine.received(data: Self.bytes(2))
        let effects = machine.close()
        #expect(effects.close && effects.writers?.code == .streamClosed)
        #expect(machine.read().0 == .failed(ContinuationError(.streamClosed, "this side closed the stream")))
    }

    @Test("an abandoned input drops what waits and what comes, and never holds reads back")
    func abandon() {
        var machine = Self.open()
        for _ in 0..<8 { _ = machine.received(data: Self.bytes(Frame.maximumData)) }
        var may = machine.mayRead()
        #expect(!may)
        #expect(machine.abandonInput().resumeReading)
        #expect(machine.received(data: Self.bytes(Frame.maximumData)) == Machine.Effects())
        may = machine.mayRead()
        #expect(may)
        #expect(machine.read().0 == .failed(ContinuationError(.streamClosed, "this side stopped reading the stream")))
        #expect(machine.writeRefusal() == nil, "the output is not affected")
    }

    @Test("one reader at a time: a second waiting read fails instead of stealing the first one's bytes")
    func oneReader() {
        var machine = Self.open()
        #expect(machine.read().0 == nil)
        #expect(machine.read().0 == .failed(ContinuationError(.other, "another task is already reading this stream")))
        machine.readCancelled()
        #expect(machine.read().0 == nil, "after a cancelled wait another read may wait")
    }
}
