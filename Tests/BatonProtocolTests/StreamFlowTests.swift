import BatonProtocol
import Testing

/// One continuation stream's credit-based flow control (F3, docs/PROTOCOL.md §8): the pure state machine alone, then
/// two of them connected back to back.
@Suite("Stream flow control")
struct StreamFlowTests {
    typealias Send = StreamFlow.Send

    @Test("F3: a writer never sends more than it was credited; what waits goes out as credit arrives")
    func sendsWithinCredit() throws {
        var flow = StreamFlow(window: 1_000, peerWindow: 100)
        #expect(try flow.appSent(60) == Send(bytes: 60, end: false))
        #expect(flow.sendCredit == 40 && flow.wantsAppData)
        #expect(try flow.appSent(70) == Send(bytes: 40, end: false), "only the 40 bytes of credit left go out")
        #expect(flow.queued == 30 && flow.sendCredit == 0)
        #expect(!flow.wantsAppData, "the agent stops reading its app while bytes wait")
        #expect(try flow.credited(10) == Send(bytes: 10, end: false))
        #expect(flow.queued == 20 && !flow.wantsAppData)
        #expect(try flow.credited(50) == Send(bytes: 20, end: false), "the rest of the queue, no more")
        #expect(flow.queued == 0 && flow.sendCredit == 30 && flow.wantsAppData)
    }

    @Test("F3: the eof goes out only once the queue has drained, and only once")
    func endAfterQueue() throws {
        var flow = StreamFlow(window: 1_000, peerWindow: 10)
        #expect(try flow.appSent(25) == Send(bytes: 10, end: false))
        #expect(flow.appFinished() == .nothing, "15 bytes still wait for credit")
        #expect(!flow.endSent && !flow.wantsAppData)
        #expect(try flow.credited(10) == Send(bytes: 10, end: false))
        #expect(try flow.credited(10) == Send(bytes: 5, end: true), "the last 5 bytes, then the eof")
        #expect(flow.endSent)
        #expect(try flow.credited(10) == .nothing, "a credit crossing the eof sends nothing more")

        var idle = StreamFlow(peerWindow: 10)
        #expect(idle.appFinished() == Send(bytes: 0, end: true), "nothing queued: the eof goes at once")
        #expect(idle.appFinished() == .nothing)
        #expect(!idle.wantsAppData)
    }

    @Test("F3: bytes are credited back only after the app took them, batched at a quarter of the window")
    func creditBatching() throws {
        var flow = StreamFlow(window: 100, peerWindow: 100)
        try flow.peerSent(60)
        #expect(flow.receiveAllowance == 40, "received bytes are not credited back by arriving")
        #expect(flow.appTook(10) == nil)
        #expect(flow.appTook(14) == nil, "24 taken: below a quarter of 100")
        #expect(flow.receiveAllowance == 40)
        #expect(flow.appTook(1) == 25, "a quarter of the window taken: credit it all at once")
        #expect(flow.receiveAllowance == 65)
        #expect(flow.appTook(20) == nil, "the batch starts again from zero")
        #expect(flow.appTook(5) == 25)
        #expect(flow.receiveAllowance == 90)
    }

    @Test("F3: when the peer has no allowance left, even one byte taken is credited at once (no stall)")
    func creditWhenPeerIsStalled() throws {
        var flow = StreamFlow(window: 1_000, peerWindow: 10)
        try flow.peerSent(1_000)
        #expect(flow.receiveAllowance == 0)
        #expect(flow.appTook(1) == 1)
        #expect(flow.receiveAllowance == 1)
        #expect(flow.appTook(1) == nil, "the peer may send again: back to batching")
    }

    @Test("F3: taking nothing credits nothing: a credit of 0 bytes is not a message a peer accepts")
    func noEmptyCredit() throws {
        var stalled = StreamFlow(window: 100, peerWindow: 10)
        try stalled.peerSent(100)
        // An empty data frame, which the wire allows, forwarded to the app: it took 0 bytes.
        #expect(stalled.appTook(0) == nil)
        var tiny = StreamFlow(window: 3, peerWindow: 10)
        try tiny.peerSent(1)
        #expect(tiny.appTook(0) == nil, "with a window under 4 a quarter is 0 bytes, and 0 taken is still nothing")
        #expect(tiny.appTook(1) == 1)
        #expect(tiny.receiveAllowance == 3)
    }

    @Test("F3: after the peer's eof nothing is credited back: it sends nothing more")
    func noCreditAfterPeerEnd() throws {
        var flow = StreamFlow(window: 100, peerWindow: 10)
        try flow.peerSent(100)
        flow.peerFinished()
        #expect(flow.appTook(100) == nil)
        #expect(!flow.isFinished, "this side has not ended yet")
        #expect(flow.appFinished() == Send(bytes: 0, end: true))
        #expect(flow.isFinished)
    }

    @Test("F3: a peer sending past its credit, or after its eof, is a flowViolation")
    func peerOverrun() throws {
        var flow = StreamFlow(window: 100, peerWindow: 10)
        try flow.peerSent(100)
        let overrun = #expect(throws: BatonProtocolError.self) { try flow.peerSent(1) }
        #expect(overrun?.code == .flowViolation)
        #expect(flow.appTook(30) == 30)
        let pastCredit = #expect(throws: BatonProtocolError.self) { try flow.peerSent(31) }
        #expect(pastCredit?.code == .flowViolation)
        try flow.peerSent(30)

        var ended = StreamFlow(window: 100, peerWindow: 10)
        try ended.peerSent(10)
        ended.peerFinished()
        for count in [1, 0] {
            let late = #expect(throws: BatonProtocolError.self, "\(count) bytes after the eof") { try ended.peerSent(count) }
            #expect(late?.code == .flowViolation)
        }
    }

    @Test("F3: credit of 0 bytes, or past maximumCredit unused, is a flowViolation; any size is refused without a trap")
    func creditLimits() throws {
        var flow = StreamFlow(peerWindow: StreamFlow.maximumWindow)
        #expect(try flow.credited(StreamFlow.maximumCredit - StreamFlow.maximumWindow) == .nothing)
        #expect(flow.sendCredit == StreamFlow.maximumCredit)
        for count in [1, 0, -1, Int.max, Int.min] {
            let error = #expect(throws: BatonProtocolError.self, "credit of \(count)") { try flow.credited(count) }
            #expect(error?.code == .flowViolation)
        }
        #expect(flow.sendCredit == StreamFlow.maximumCredit, "a refused credit changes nothing")
        // Using credit makes room for more.
        #expect(try flow.appSent(10) == Send(bytes: 10, end: false))
        #expect(try flow.credited(10) == .nothing)
        #expect(flow.sendCredit == StreamFlow.maximumCredit)
    }

    @Test("F3: an app sending after it ended its side is a flowViolation, never data after the eof")
    func appDataAfterEnd() throws {
        var flow = StreamFlow(peerWindow: 100)
        #expect(try flow.appSent(10) == Send(bytes: 10, end: false))
        #expect(flow.appFinished() == Send(bytes: 0, end: true))
        let error = #expect(throws: BatonProtocolError.self) { try flow.appSent(5) }
        #expect(error?.code == .flowViolation)
        #expect(flow.queued == 0 && flow.sendCredit == 90, "nothing queued, nothing sent")
    }

    @Test("a stream is finished only when both sides have ended")
    func finished() {
        var flow = StreamFlow(peerWindow: 10)
        #expect(!flow.isFinished)
        flow.peerFinished()
        #expect(!flow.isFinished && flow.endReceived)
        _ = flow.appFinished()
        #expect(flow.isFinished)
    }

    @Test(
        "F3 model: two flows through in-memory queues, random writes, reads and app speeds: never past a window, every byte once, both finish",
        arguments: 0..<48
    )
    func twoFlows(seed: UInt64) throws {
        var random = SeededRandom(state: seed)
        var model = FlowModel(&random)
        try model.run(&random)
    }
}

/// Two agents' flows for one stream, connected by one ordered queue per direction (a TCP connection's two halves),
/// each with an app that writes and reads at its own random pace.
struct FlowModel {
    enum Event: Equatable { case data(Int), credit(Int), end }

    struct Side {
        var flow: StreamFlow
        /// What the app will write in all, and has handed over so far.
        let total: Int
        var written = 0
        /// The largest write the app makes at once.
        let chunk: Int
        /// 1 in `readEvery` chances the app reads when it may (a slow reader) and 1 in `writeEvery` it writes.
        let readEvery: UInt64
        let writeEvery: UInt64
        /// Bytes received that the app has not taken; bytes the app took; bytes received in all.
        var held = 0
        var read = 0
        var received = 0
        /// Credit this side sent, and the data it sent and was credited (its peer's window included).
        var creditSent = 0
        var sent = 0
        var credited: Int
        /// The peer's eof arrived.
        var sawEnd = false
    }

    var sides: [Side]
    /// `wires[i]` carries what side `i` sends to side `1 - i`, in order.
    var wires: [[Event]] = [[], []]

    init(_ random: inout SeededRandom) {
        func pick<T>(_ options: [T]) -> T { options[Int(random.next() % UInt64(options.count))] }
        let windows = [1, 3, 4, 7, 64, 1_000, StreamFlow.defaultWindow]
        let a = pick(windows)
        let b = pick(windows)
        func side(window: Int, peerWindow: Int) -> Side {
            // Some apps write nothing at all; the others several windows' worth (so large windows fill too) of
            // what the peer's window lets through.
            let total = random.next() % 4 == 0 ? 0 : Int(random.next() % UInt64(peerWindow * 6 + 200))
            return Side(
                flow: StreamFlow(window: window, peerWindow: peerWindow), total: total,
                chunk: max(pick([1, 5, 100, 4_096, 300_000]), total / 2_000),
                readEvery: pick([1, 2, 8, 40]), writeEvery: pick([1, 3, 20]), credited: peerWindow
            )
        }
        sides = [side(window: a, peerWindow: b), side(window: b, peerWindow: a)]
    }

    var done: Bool {
        wires.allSatisfy(\.isEmpty) && sides.allSatisfy { $0.flow.isFinished && $0.held == 0 }
    }

    mutating func emit(_ send: StreamFlow.Send, from index: Int, _ random: inout SeededRandom) {
        // Bytes go out in frames of random sizes, as the agent cuts the app's writes into data frames.
        var left = send.bytes
        while left > 0 {
            let frame = min(left, Int(random.next() % 70_000) + 1)
            wires[index].append(.data(frame))
            left -= frame
        }
        sides[index].sent += send.bytes
        check(sides[index].sent <= sides[index].credited, "side \(index) sent \(sides[index].sent) with \(sides[index].credited) credited")
        if send.end {
            check(sides[index].written == sides[index].total, "the eof goes out only after every byte the app wrote")
            check(sides[index].sent == sides[index].total)
            wires[index].append(.end)
        }
    }

    mutating func step(_ random: inout SeededRandom) throws {
        let index = Int(random.next() % 2)
        let peer = 1 - index
        switch random.next() % 3 {
        case 0:
            // The app writes, when its agent reads from it; once it wrote everything, it ends its side.
            guard random.next() % sides[index].writeEvery == 0 else { return }
            if sides[index].written < sides[index].total {
                guard sides[index].flow.wantsAppData else { return }
                let count = min(sides[index].total - sides[index].written, Int(random.next() % UInt64(sides[index].chunk)) + 1)
                sides[index].written += count
                emit(try sides[index].flow.appSent(count), from: index, &random)
            } else if !sides[index].flow.appEnded {
                emit(sides[index].flow.appFinished(), from: index, &random)
            }
        case 1:
            // The next thing on the wire from the peer arrives.
            guard !wires[peer].isEmpty else { return }
            switch wires[peer].removeFirst() {
            case .data(let count):
                try sides[index].flow.peerSent(count)
                sides[index].held += count
                sides[index].received += count
                // Never past the window: what it holds and what it has not credited back fit in what it offered.
                check(sides[index].received - sides[index].creditSent <= sides[index].flow.window)
                check(sides[index].held <= sides[index].flow.window)
            case .credit(let count):
                sides[index].credited += count
                emit(try sides[index].flow.credited(count), from: index, &random)
            case .end:
                check(sides[index].received == sides[peer].total, "the eof comes after every byte")
                sides[index].sawEnd = true
                sides[index].flow.peerFinished()
            }
        default:
            // The app reads some of what its agent holds, at its own pace; sometimes nothing.
            guard random.next() % sides[index].readEvery == 0 else { return }
            let count = Int(random.next() % UInt64(sides[index].held + 1))
            sides[index].held -= count
            sides[index].read += count
            if let credit = sides[index].flow.appTook(count) {
                check(credit > 0 && credit <= StreamFlow.maximumWindow, "a credit a peer accepts")
                sides[index].creditSent += credit
                wires[index].append(.credit(credit))
            }
        }
    }

    /// An invariant of the model: a plain check (millions of steps), recorded as an issue when it fails.
    func check(_ condition: Bool, _ message: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        if !condition { Issue.record(Comment(rawValue: message()), sourceLocation: sourceLocation) }
    }

    mutating func run(_ random: inout SeededRandom) throws {
        var steps = 0
        while !done, steps < 2_000_000 {
            try step(&random)
            steps += 1
        }
        check(done, "both sides finish (\(steps) steps): \(sides.map { ($0.written, $0.total, $0.read, $0.held) })")
        for index in 0..<2 {
            check(sides[1 - index].read == sides[index].total, "every byte side \(index) wrote was read once")
            check(sides[1 - index].received == sides[index].sent)
            check(sides[index].sawEnd)
        }
    }
}

extension StreamFlow.Send {
    /// What a flow should say to send (its memberwise initializer is internal to BatonProtocol).
    init(bytes: Int, end: Bool) {
        self = .nothing
        self.bytes = bytes
        self.end = end
    }
}
