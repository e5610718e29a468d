import BatonCore
import BatonProtocol
import Foundation
import Testing

@Suite("Session multiplexer: both roles of one agent-to-agent session")
struct SessionMultiplexerTests {
    typealias Request = SessionMultiplexer.Request
    typealias Reply = SessionMultiplexer.Reply

    static let roster = Data("roster".utf8)
    static let summary = ActivitySummary(activityType: "com.razeware.shopsnap.view", title: "Groceries", bundleIdentifier: "com.razeware.shopsnap", team: "RAZE", webpageHost: nil)

    /// The reply of the right kind for each request kind.
    static func reply(to request: Request) -> Reply {
        switch request {
        case .sync(let roster, let port): .synced(roster: roster + Data("+merged".utf8), agentPort: port.map { $0 + 1 })
        case .fetch(let sequence, _, _): .payload(Data("state of \(sequence)".utf8))
        case .describe(let sequence): .summary(ActivitySummary(activityType: "type \(sequence)", title: nil, bundleIdentifier: "b", team: "T", webpageHost: nil))
        case .openStream(_, let window, _): .streamOpened(window: window)
        case .ping: .pong
        }
    }

    /// The message that carries `reply` for request `id`, as the answering side sends it.
    static func message(_ id: UInt64, _ reply: Reply) -> SessionMessage {
        switch reply {
        case .synced(let roster, let port): .synced(id: id, roster: roster, agentPort: port)
        case .payload(let data): .payload(id: id, payload: data)
        case .summary(let summary): .summary(id: id, summary)
        case .failed(let reason, let text): .failure(id: id, reason: reason, message: text)
        case .streamOpened(let window, let direct): .streamOpened(id: id, window: window, direct: direct)
        case .pong: .pong(id: id)
        }
    }

    static let requests: [Request] = [
        .sync(roster: roster, agentPort: 47_810), .fetch(sequence: 7, deadlineMilliseconds: 1_000), .describe(sequence: 7),
        .openStream(sequence: 7, window: 524_288), .ping,
    ]

    @Test("ids are fresh and increasing, never reused after a cancel or a close; each request becomes its message")
    func freshIDs() {
        var multiplexer = SessionMultiplexer()
        let sync = multiplexer.ask(.sync(roster: Self.roster, agentPort: 47_810))
        let fetch = multiplexer.ask(.fetch(sequence: 9, deadlineMilliseconds: 1_000))
        let describe = multiplexer.ask(.describe(sequence: 9))
        #expect([sync.id, fetch.id, describe.id] == [1, 2, 3])
        #expect(sync.message == .sync(id: 1, roster: Self.roster, agentPort: 47_810))
        #expect(fetch.message == .fetch(id: 2, sequence: 9, deadlineMilliseconds: 1_000))
        #expect(describe.message == .describe(id: 3, sequence: 9))
        #expect(multiplexer.outstanding == 3)
        _ = multiplexer.cancel(3)
        #expect(multiplexer.ask(.describe(sequence: 9)).id == 4, "a cancelled id is not reused: its late reply must stay ignorable")
        _ = multiplexer.closed()
        #expect(multiplexer.ask(.describe(sequence: 9)).id == 5)
    }

    @Test("C4: a reply completes exactly its request; a second reply to it is ignored")
    func replyCompletesItsRequest() throws {
        var multiplexer = SessionMultiplexer()
        let asked = Self.requests.map { multiplexer.ask($0) }
        // Replies in another order than the requests: each lands on its own id.
        for (id, request) in zip(asked.map(\.id), Self.requests).reversed() {
            let reply = Self.reply(to: request)
            #expect(try multiplexer.receive(Self.message(id, reply)) == .reply(id: id, reply))
        }
        #expect(multiplexer.outstanding == 0)
        for (id, request) in zip(asked.map(\.id), Self.requests) {
            let late = try multiplexer.receive(Self.message(id, Self.reply(to: request)))
            if case .openStream = request {
                // F3: a stream opened for a request no longer waited for is reset, not left open on the peer.
                #expect(late == .respond(.resetStream(stream: id, opener: true, reason: .cancelled, message: "the stream was no longer wanted")))
            } else {
                #expect(late == .ignore)
            }
        }
        #expect(try multiplexer.receive(.payload(id: 99, payload: Data())) == .ignore, "a reply to an id never used is harmless")
    }

    @Test("a reply of the wrong kind is unexpectedMessage, and the request is not completed by it")
    func wrongKind() throws {
        for request in Self.requests {
            for other in Self.requests where other != request {
                var multiplexer = SessionMultiplexer()
                let (id, _) = multiplexer.ask(request)
                let error = #expect(throws: BatonProtocolError.self, "\(request) answered as \(other)") {
                    try multiplexer.receive(Self.message(id, Self.reply(to: other)))
                }
                #expect(error?.code == .unexpectedMessage)
                #expect(multiplexer.outstanding == 1)
            }
        }
    }

    @Test("C8: a failure reply completes any kind of request, with its reason and text")
    func failureForAnyKind() throws {
        for request in Self.requests {
            for reason in FetchFailure.allCases {
                var multiplexer = SessionMultiplexer()
                let (id, _) = multiplexer.ask(request)
                #expect(try multiplexer.receive(.failure(id: id, reason: reason, message: "why")) == .reply(id: id, .failed(reason, "why")))
                #expect(multiplexer.outstanding == 0)
            }
        }
    }

    @Test("C6: cancel yields the cancel message once; the late reply after it is ignored")
    func cancelThenLateReply() throws {
        var multiplexer = SessionMultiplexer()
        let (first, _) = multiplexer.ask(.fetch(sequence: 1, deadlineMilliseconds: 1_000))
        let (second, _) = multiplexer.ask(.fetch(sequence: 2, deadlineMilliseconds: 1_000))
        #expect(multiplexer.cancel(first) == .cancel(id: first))
        #expect(multiplexer.cancel(first) == nil, "only once")
        #expect(multiplexer.outstanding == 1)
        #expect(try multiplexer.receive(.payload(id: first, payload: Data("late".utf8))) == .ignore)
        #expect(try multiplexer.receive(.failure(id: first, reason: .cancelled, message: "late")) == .ignore)
        #expect(try multiplexer.receive(.summary(id: first, Self.summary)) == .ignore, "even of the wrong kind: the request is gone")
        // The other request is untouched.
        #expect(try multiplexer.receive(.payload(id: second, payload: Data("2".utf8))) == .reply(id: second, .payload(Data("2".utf8))))
        #expect(multiplexer.cancel(second) == nil, "a completed request has nothing to cancel")
        #expect(multiplexer.cancel(12_345) == nil)
    }

    @Test("C8: closing returns every outstanding id for the caller to fail, and leaves nothing outstanding")
    func closedFailsOutstanding() throws {
        var multiplexer = SessionMultiplexer()
        let ids = (0..<5).map { multiplexer.ask(.describe(sequence: UInt64($0))).id }
        _ = try multiplexer.receive(.summary(id: ids[1], Self.summary))
        _ = multiplexer.cancel(ids[3])
        // It was also answering a request of the peer's: that ends too.
        #expect(try multiplexer.receive(.fetch(id: 1, sequence: 7, deadlineMilliseconds: 1)) == .request(id: 1, .fetch(sequence: 7, deadlineMilliseconds: 1)))
        #expect(multiplexer.closed() == [ids[0], ids[2], ids[4]])
        #expect(multiplexer.outstanding == 0)
        #expect(multiplexer.closed() == [])
        #expect(multiplexer.answer(1, with: .payload(Data())) == nil, "no reply on a closed session")
        #expect(try multiplexer.receive(.summary(id: ids[0], Self.summary)) == .ignore)
    }

    @Test("answering: a request id reused while in flight is unexpectedMessage; once answered it may be used again")
    func duplicateInFlight() throws {
        var multiplexer = SessionMultiplexer()
        #expect(try multiplexer.receive(.describe(id: 5, sequence: 1)) == .request(id: 5, .describe(sequence: 1)))
        for reuse: SessionMessage in [.describe(id: 5, sequence: 1), .fetch(id: 5, sequence: 1, deadlineMilliseconds: 1), .sync(id: 5, roster: Self.roster, agentPort: nil)] {
            let error = #expect(throws: BatonProtocolError.self, "\(reuse)") { try multiplexer.receive(reuse) }
            #expect(error?.code == .unexpectedMessage)
        }
        #expect(multiplexer.answer(5, with: .summary(Self.summary)) == .summary(id: 5, Self.summary))
        #expect(try multiplexer.receive(.fetch(id: 5, sequence: 2, deadlineMilliseconds: 1)) == .request(id: 5, .fetch(sequence: 2, deadlineMilliseconds: 1)))
    }

    @Test("answering: beyond maximumInFlight a request is refused at once with protocolViolation, not queued")
    func inFlightLimit() throws {
        var multiplexer = SessionMultiplexer(maximumInFlight: 3)
        for id: UInt64 in 1...3 {
            #expect(try multiplexer.receive(.fetch(id: id, sequence: id, deadlineMilliseconds: 1)) == .request(id: id, .fetch(sequence: id, deadlineMilliseconds: 1)))
        }
        guard case .respond(.failure(4, .protocolViolation, let text)) = try multiplexer.receive(.describe(id: 4, sequence: 1)) else {
            Issue.record("the fourth request was not refused")
            return
        }
        #expect(text.contains("3"))
        #expect(multiplexer.answer(4, with: .summary(Self.summary)) == nil, "a refused request is not in flight")
        // The legacy one-shot sync is not a multiplexed request and is not counted.
        #expect(try multiplexer.receive(.sync(id: nil, roster: Self.roster, agentPort: nil)) == .request(id: nil, .sync(roster: Self.roster, agentPort: nil)))
        // A finished or cancelled request makes room.
        #expect(multiplexer.answer(1, with: .payload(Data())) == .payload(id: 1, payload: Data()))
        #expect(try multiplexer.receive(.cancel(id: 2)) == .cancelled(id: 2))
        #expect(try multiplexer.receive(.describe(id: 4, sequence: 1)) == .request(id: 4, .describe(sequence: 1)))
        #expect(try multiplexer.receive(.describe(id: 5, sequence: 1)) == .request(id: 5, .describe(sequence: 1)))
        guard case .respond(.failure(6, .protocolViolation, _)) = try multiplexer.receive(.describe(id: 6, sequence: 1)) else {
            Issue.record("the limit did not hold after making room")
            return
        }
    }

    @Test("C6: the peer cancels: the work is told to stop and no reply is sent; a second cancel is ignored")
    func peerCancels() throws {
        var multiplexer = SessionMultiplexer()
        _ = try multiplexer.receive(.fetch(id: 8, sequence: 1, deadlineMilliseconds: 1_000))
        #expect(try multiplexer.receive(.cancel(id: 8)) == .cancelled(id: 8))
        #expect(multiplexer.answer(8, with: .payload(Data("state".utf8))) == nil)
        #expect(try multiplexer.receive(.cancel(id: 8)) == .ignore)
        #expect(try multiplexer.receive(.cancel(id: 77)) == .ignore, "a cancel for nothing in flight, say one racing its answer")
    }

    @Test("a newer peer's request type is answered unsupported and the session goes on; a newer notice is ignored")
    func newerPeer() throws {
        var multiplexer = SessionMultiplexer()
        let answer = try multiplexer.receive(try SessionMessage(["t": "streams", "id": 9, "seq": 3]))
        guard case .respond(.failure(9, .unsupported, let text)) = answer else {
            Issue.record("expected an unsupported failure for id 9, got \(answer)")
            return
        }
        #expect(text.contains("streams"))
        #expect(try multiplexer.receive(try SessionMessage(["t": "hint", "note": "x"])) == .ignore)
        // Nothing was left in flight, and the session still answers known requests.
        #expect(try multiplexer.receive(.describe(id: 9, sequence: 3)) == .request(id: 9, .describe(sequence: 3)))
        // An older peer reads the reason `unsupported` it does not know as protocolViolation, and still fails only
        // that request.
        let reason = SessionMessage.failure(id: 9, reason: .unsupported, message: text).propertyList["reason"]
        #expect(reason == .string("unsupported"))
    }

    @Test("the answer to a request is sent exactly once, in the shape of its reply")
    func answerOnce() throws {
        var multiplexer = SessionMultiplexer()
        for (id, request) in zip(UInt64(1)..., Self.requests) {
            let message: SessionMessage =
                switch request {
                case .sync(let roster, let port): .sync(id: id, roster: roster, agentPort: port)
                case .fetch(let sequence, let deadline, let confirms): .fetch(id: id, sequence: sequence, deadlineMilliseconds: deadline, confirms: confirms)
                case .describe(let sequence): .describe(id: id, sequence: sequence)
                case .openStream(let sequence, let window, let direct): .openStream(id: id, sequence: sequence, window: window, direct: direct)
                case .ping: .ping(id: id)
                }
            #expect(try multiplexer.receive(message) == .request(id: id, request))
            let reply = Self.reply(to: request)
            #expect(multiplexer.answer(id, with: reply) == Self.message(id, reply))
            #expect(multiplexer.answer(id, with: reply) == nil)
            #expect(try multiplexer.receive(.cancel(id: id)) == .ignore, "a cancel crossing the answer")
        }
        _ = try multiplexer.receive(.describe(id: 9, sequence: 1))
        #expect(multiplexer.answer(9, with: .failed(.notCurrent, "gone")) == .failure(id: 9, reason: .notCurrent, message: "gone"))
    }

    @Test("the legacy one-shot sync has no id: a request the caller answers itself, outside the multiplexer")
    func legacySync() throws {
        var multiplexer = SessionMultiplexer()
        #expect(try multiplexer.receive(.sync(id: nil, roster: Self.roster, agentPort: 47_810)) == .request(id: nil, .sync(roster: Self.roster, agentPort: 47_810)))
        #expect(try multiplexer.receive(.sync(id: nil, roster: Self.roster, agentPort: nil)) == .request(id: nil, .sync(roster: Self.roster, agentPort: nil)), "twice: nothing is in flight")
        #expect(multiplexer.outstanding == 0)
        #expect(multiplexer.closed() == [])
    }

    @Test("error refuses the whole session; outstanding requests are left for closed() to fail")
    func errorRefuses() throws {
        var multiplexer = SessionMultiplexer()
        let (id, _) = multiplexer.ask(.sync(roster: Self.roster, agentPort: nil))
        #expect(try multiplexer.receive(.error(message: "not a member")) == .refused("not a member"))
        #expect(multiplexer.closed() == [id])
    }

    /// One end of the simulated connection.
    struct End {
        var multiplexer: SessionMultiplexer
        var asked: [UInt64: Request] = [:]
        var completed: [UInt64: Reply] = [:]
        var cancelled: Set<UInt64> = []
        /// Requests of the peer's, received, not yet answered.
        var pending: [(UInt64, Request)] = []
        var answered: Set<UInt64> = []
        var stoppedByPeer: Set<UInt64> = []
        /// The peer's requests this end refused over the limit.
        var refused: Set<UInt64> = []
        var budget: Int
    }

    @Test(
        "back to back: A and B ask each other at once over one connection, interleaved, with cancels and refusals",
        arguments: 0..<30
    )
    func backToBack(seed: UInt64) throws {
        var random = SeededRandom(state: seed)
        // B allows few requests in flight, so A sometimes meets the limit.
        var ends = [End(multiplexer: SessionMultiplexer(), budget: 40), End(multiplexer: SessionMultiplexer(maximumInFlight: 4), budget: 40)]
        // What is on the wire towards end 0 and end 1, in order (TCP keeps order per direction).
        var wire: [[Data]] = [[], []]

        func send(_ message: SessionMessage, to end: Int) throws {
            wire[end].append(try BinaryPropertyListEncoder.encode(message.propertyList))
        }

        func deliver(to end: Int) throws {
            let bytes = wire[end].removeFirst()
            let message = try SessionMessage(BinaryPropertyListDecoder.decode(bytes, limits: MessageTestSupport.frameLimits))
            let peer = 1 - end
            switch try ends[end].multiplexer.receive(message) {
            case .reply(let id, let reply):
                #expect(ends[end].asked[id] != nil && ends[end].completed[id] == nil && !ends[end].cancelled.contains(id), "one reply per live request")
                ends[end].completed[id] = reply
            case .request(let id, let request):
                let id = try #require(id)
                ends[end].pending.append((id, request))
            case .cancelled(let id):
                let index = try #require(ends[end].pending.firstIndex { $0.0 == id })
                ends[end].pending.remove(at: index)
                ends[end].stoppedByPeer.insert(id)
            case .continued, .clock:
                Issue.record("no notice is sent here")
            case .respond(let refusal):
                let id = try #require(refusal.id)
                ends[end].refused.insert(id)
                try send(refusal, to: peer)
            case .ignore:
                // Only the races of C6: our reply crossing the peer's cancel, or the peer's reply crossing ours.
                switch message {
                case .cancel(let id):
                    #expect(ends[end].answered.contains(id) || ends[end].refused.contains(id), "cancel \(id)")
                case .payload(let id, _), .summary(let id, _), .synced(let id, _, _), .failure(let id, _, _):
                    #expect(ends[end].cancelled.contains(id), "late reply \(id)")
                default:
                    Issue.record("\(message) ignored")
                }
            case .refused(let text):
                Issue.record("refused: \(text)")
            case .stream(let message):
                Issue.record("stream control \(message) where no stream was opened")
            }
        }

        while true {
            var moves: [() throws -> Void] = []
            for end in 0..<2 {
                let peer = 1 - end
                if ends[end].budget > 0 {
                    moves.append {
                        let request: Request =
                            switch random.next() % 3 {
                            case 0: .sync(roster: Data("roster \(end)".utf8), agentPort: random.next() % 2 == 0 ? nil : 47_810)
                            case 1: .fetch(sequence: random.next() % 1_000, deadlineMilliseconds: 1_000)
                            default: .describe(sequence: random.next() % 1_000)
                            }
                        let (id, message) = ends[end].multiplexer.ask(request)
                        #expect(ends[end].asked[id] == nil && id > (ends[end].asked.keys.max() ?? 0), "fresh, increasing ids")
                        ends[end].asked[id] = request
                        ends[end].budget -= 1
                        try send(message, to: peer)
                    }
                }
                if !wire[end].isEmpty { moves.append { try deliver(to: end) } }
                if !ends[end].pending.isEmpty {
                    moves.append {
                        let (id, request) = ends[end].pending.remove(at: Int(random.next() % UInt64(ends[end].pending.count)))
                        var reply = Self.reply(to: request)
                        if case .fetch(let sequence, _, _) = request, sequence % 5 == 0 { reply = .failed(.notCurrent, "\(sequence)") }
                        let answer = ends[end].multiplexer.answer(id, with: reply)
                        let message = try #require(answer)
                        #expect(message == Self.message(id, reply))
                        ends[end].answered.insert(id)
                        try send(message, to: peer)
                    }
                }
                let live = ends[end].asked.keys.filter { ends[end].completed[$0] == nil && !ends[end].cancelled.contains($0) }.sorted()
                if !live.isEmpty, random.next() % 4 == 0 {
                    moves.append {
                        let id = live[Int(random.next() % UInt64(live.count))]
                        #expect(ends[end].multiplexer.cancel(id) == .cancel(id: id))
                        #expect(ends[end].multiplexer.cancel(id) == nil)
                        ends[end].cancelled.insert(id)
                        try send(.cancel(id: id), to: peer)
                    }
                }
            }
            if moves.isEmpty { break }
            try moves[Int(random.next() % UInt64(moves.count))]()
        }

        for end in 0..<2 {
            let peer = 1 - end
            var me = ends[end]
            #expect(me.multiplexer.outstanding == 0)
            #expect(me.pending.isEmpty)
            #expect(me.multiplexer.closed() == [], "nothing left to fail")
            #expect(Set(me.completed.keys).isDisjoint(with: me.cancelled))
            #expect(Set(me.completed.keys).union(me.cancelled) == Set(me.asked.keys), "every request ended: replied or cancelled")
            for (id, reply) in me.completed {
                let request = try #require(me.asked[id])
                if ends[peer].refused.contains(id) {
                    guard case .failed(.protocolViolation, _) = reply else { Issue.record("refusal of \(id) arrived as \(reply)"); continue }
                } else if case .fetch(let sequence, _, _) = request, sequence % 5 == 0 {
                    #expect(reply == .failed(.notCurrent, "\(sequence)"))
                } else {
                    #expect(reply == Self.reply(to: request), "request \(id) got its own reply")
                }
            }
            // The peer never worked on a request of ours after it was told to stop.
            #expect(ends[peer].answered.isDisjoint(with: ends[peer].stoppedByPeer))
        }
        // Both ends used the same ids at once without confusion.
        #expect(!Set(ends[0].asked.keys).isDisjoint(with: ends[1].asked.keys))
    }
}
