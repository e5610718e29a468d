#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Both roles of one session between two agents, as a pure state machine (ARCHITECTURE: sockets only move bytes).
///
/// Either side may ask (fetch, describe, sync) and answer on the same connection, so a device pair needs one
/// connection, reused. The asking half numbers its requests and matches replies to them; the answering half keeps
/// the ids in flight, bounds how many, and drops answers to requests the peer cancelled.
public struct SessionMultiplexer: Sendable {
    /// What a request asks for; a reply must be of the matching kind.
    public enum Request: Sendable, Hashable {
        case sync(roster: Data, agentPort: Int?)
        /// `confirms`: this side will send `continued` once its app has the state (A8; issue 25 item 4).
        case fetch(sequence: UInt64, deadlineMilliseconds: UInt64, confirms: Bool = false)
        case describe(sequence: UInt64)
        /// Open a continuation stream to the app of the activity with this sequence (F1, docs/PROTOCOL.md §8); the
        /// asker may receive `window` bytes at once.
        case openStream(sequence: UInt64, window: UInt64, direct: DirectStreamOffer? = nil)
        /// Is the peer still there?
        case ping
    }

    /// What came back for a request.
    public enum Reply: Sendable, Hashable {
        case synced(roster: Data, agentPort: Int?)
        case payload(Data)
        case summary(ActivitySummary)
        case failed(FetchFailure, String)
        /// The stream is open; the asker may send `window` bytes at once. Its id is the request's. `direct`: the
        /// answerer's app end's certificate fingerprint, when it took the direct path (issue 30).
        case streamOpened(window: UInt64, direct: Data? = nil)
        /// The peer is there.
        case pong
    }

    /// What the connection should do with an inbound message.
    public enum Inbound: Sendable, Hashable {
        /// The reply to request `id` of ours.
        case reply(id: UInt64, Reply)
        /// The peer asks; answer with ``answer(_:with:)`` (a legacy `sync` without id is answered by the caller).
        case request(id: UInt64?, Request)
        /// The peer cancelled its request `id`: stop working on it.
        case cancelled(id: UInt64)
        /// The peer refused the whole session.
        case refused(String)
        /// Send this back (a refusal of a request over the limits); nothing else to do.
        case respond(SessionMessage)
        /// A continuation stream's control message (`credit`, `eof`, `reset`): for the stream it names.
        case stream(SessionMessage)
        /// The peer's app has the state of the activity with this sequence, which it fetched with `confirms` (A8).
        case continued(sequence: UInt64)
        /// The peer's wall clock as it sent this (milliseconds since 1970): its adverts are judged by it (issue 25 item 9).
        case clock(milliseconds: UInt64)
        /// A late reply to a request already finished or cancelled: ignore.
        case ignore
    }

    /// Requests the peer may have in flight at once here; more are refused, not queued.
    public let maximumInFlight: Int
    var nextID: UInt64 = 1
    /// This side's requests awaiting a reply: the connection's one record of them (it keeps beside it, by the same
    /// ids, only what each one completes, and drops that only on this table's word).
    var asked: [UInt64: Request] = [:]
    var answering: Set<UInt64> = []

    /// A multiplexer allowing the peer `maximumInFlight` concurrent requests.
    public init(maximumInFlight: Int = 32) {
        self.maximumInFlight = maximumInFlight
    }

    /// Requests of ours awaiting a reply.
    public var outstanding: Int { asked.count }

    /// Starts a request; returns its id and the message to send.
    public mutating func ask(_ request: Request) -> (id: UInt64, message: SessionMessage) {
        let id = nextID
        nextID += 1
        asked[id] = request
        let message: SessionMessage =
            switch request {
            case .sync(let roster, let port): .sync(id: id, roster: roster, agentPort: port)
            case .fetch(let sequence, let deadline, let confirms): .fetch(id: id, sequence: sequence, deadlineMilliseconds: deadline, confirms: confirms)
            case .describe(let sequence): .describe(id: id, sequence: sequence)
            case .openStream(let sequence, let window, let direct): .openStream(id: id, sequence: sequence, window: window, direct: direct)
            case .ping: .ping(id: id)
            }
        return (id, message)
    }

    /// Gives up on request `id`; returns the cancel message to send if it was still waiting.
    public mutating func cancel(_ id: UInt64) -> SessionMessage? {
        asked.removeValue(forKey: id) == nil ? nil : .cancel(id: id)
    }

    /// The connection ended: every request still waiting fails; returns their ids.
    public mutating func closed() -> [UInt64] {
        let ids = asked.keys.sorted()
        asked = [:]
        answering = []
        return ids
    }

    /// Handles one inbound message.
    /// - Throws: `unexpectedMessage` for a reply of the wrong kind or a request id used twice: the connection is
    ///   then unusable and should close.
    public mutating func receive(_ message: SessionMessage) throws -> Inbound {
        switch message {
        case .sync(let id, let roster, let port):
            guard let id else { return .request(id: nil, .sync(roster: roster, agentPort: port)) }
            return try start(id, .sync(roster: roster, agentPort: port))
        case .fetch(let id, let sequence, let deadline, let confirms):
            return try start(id, .fetch(sequence: sequence, deadlineMilliseconds: deadline, confirms: confirms))
        case .continued(let sequence):
            return .continued(sequence: sequence)
        case .clock(let milliseconds):
            return .clock(milliseconds: milliseconds)
        case .describe(let id, let sequence):
            return try start(id, .describe(sequence: sequence))
        case .cancel(let id):
            return answering.remove(id) == nil ? .ignore : .cancelled(id: id)
        case .synced(let id, let roster, let port):
            return try finish(id, .synced(roster: roster, agentPort: port))
        case .payload(let id, let payload):
            return try finish(id, .payload(payload))
        case .summary(let id, let summary):
            return try finish(id, .summary(summary))
        case .failure(let id, let reason, let text):
            return try finish(id, .failed(reason, text))
        case .error(let text):
            return .refused(text)
        case .openStream(let id, let sequence, let window, let direct):
            return try start(id, .openStream(sequence: sequence, window: window, direct: direct))
        case .ping(let id):
            return try start(id, .ping)
        case .streamOpened(let id, let window, let direct):
            // Opened after this side gave up on it (a timeout, a cancel that crossed the answer): the peer has a
            // stream nobody here will use, so it is reset at once rather than left open.
            guard asked[id] != nil else {
                return .respond(.resetStream(stream: id, opener: true, reason: .cancelled, message: "the stream was no longer wanted"))
            }
            return try finish(id, .streamOpened(window: window, direct: direct))
        case .pong(let id):
            return try finish(id, .pong)
        case .credit, .endOfStream, .resetStream:
            return .stream(message)
        case .unknown(let type, let id):
            // A newer peer's request: say so and carry on; a newer peer's notice (no id): nothing to do.
            guard let id else { return .ignore }
            return .respond(.failure(id: id, reason: .unsupported, message: "this device does not know \"\(type)\" requests"))
        }
    }

    /// The message answering the peer's request `id`, or nil when the peer cancelled it meanwhile.
    public mutating func answer(_ id: UInt64, with reply: Reply) -> SessionMessage? {
        guard answering.remove(id) != nil else { return nil }
        return switch reply {
        case .synced(let roster, let port): .synced(id: id, roster: roster, agentPort: port)
        case .payload(let payload): .payload(id: id, payload: payload)
        case .summary(let summary): .summary(id: id, summary)
        case .failed(let reason, let text): .failure(id: id, reason: reason, message: text)
        case .streamOpened(let window, let direct): .streamOpened(id: id, window: window, direct: direct)
        case .pong: .pong(id: id)
        }
    }

    mutating func start(_ id: UInt64, _ request: Request) throws -> Inbound {
        guard !answering.contains(id) else {
            throw BatonProtocolError(.unexpectedMessage, "the peer reused request id \(id) while it was in flight")
        }
        guard answering.count < maximumInFlight else {
            return .respond(.failure(id: id, reason: .protocolViolation, message: "more than \(maximumInFlight) requests in flight"))
        }
        answering.insert(id)
        return .request(id: id, request)
    }

    mutating func finish(_ id: UInt64, _ reply: Reply) throws -> Inbound {
        guard let request = asked[id] else {
            // Cancelled or unknown: a reply racing a cancel is normal; one for an id never used is the peer's bug,
            // but harmless, and telling the two apart would mean remembering every id ever used.
            return .ignore
        }
        let matches =
            switch (request, reply) {
            case (_, .failed): true
            case (.sync, .synced), (.fetch, .payload), (.describe, .summary), (.openStream, .streamOpened), (.ping, .pong): true
            default: false
            }
        guard matches else {
            throw BatonProtocolError(.unexpectedMessage, "the peer answered request \(id) with the wrong kind of reply")
        }
        asked[id] = nil
        return .reply(id: id, reply)
    }
}
