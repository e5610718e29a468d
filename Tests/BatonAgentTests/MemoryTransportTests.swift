@testable import BatonAgent
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
import Testing

/// Issue 26 item 3: peer links over the memory network, the same ``PeerLinks`` and ``PeerLink`` as over TLS, with no
/// socket and no fixed sleep: every wait is for something a side was told.
@Suite("Issue 26 item 3: peer links over the memory transport")
struct MemoryTransportTests {
    /// A device on the memory network: its links, and what its responder was told, in order.
    struct Device {
        let identity: DeviceIdentity
        let links: PeerLinks
        let responder: Responder
        var id: DeviceID { identity.id }
    }

    /// Answers a fetch of sequence 1 at once with "state"; holds every other fetch until it is cancelled. Tells the
    /// test what it saw.
    final class Responder: PeerLinkResponder {
        let events: AsyncStream<String>
        let event: AsyncStream<String>.Continuation

        init() {
            (events, event) = AsyncStream.makeStream(of: String.self)
        }

        func respond(
            to request: SessionMultiplexer.Request,
            on link: PeerLink,
            reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
        ) -> PeerLink.Cancel {
            guard case .fetch(let sequence, _, _) = request else {
                reply(.failed(.refused, "only fetches here"))
                return {}
            }
            event.yield("asked \(sequence)")
            if sequence == 1 {
                reply(.payload(Data("state".utf8)))
                return {}
            }
            return { [event] in event.yield("stopped \(sequence)") }
        }

        /// Accepts every stream, with ``streamEnd`` as its end here.
        func respondToStream(
            id: UInt64,
            sequence: UInt64,
            window: UInt64,
            direct: DirectStreamOffer?,
            on link: PeerLink,
            reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
        ) -> PeerLink.Cancel {
            _ = link.attach(streamEnd, to: PeerLink.StreamKey(id: id, openedHere: false))
            reply(.streamOpened(window: window))
            return {}
        }

        let streamEnd = StreamEnd()

        func peerContinued(sequence: UInt64, on link: PeerLink) {}
        func peerClock(_ milliseconds: UInt64, on link: PeerLink) {}
        func linkClosed(_ link: PeerLink) { event.yield("closed \(link.peer.short)") }
        func linkOpened(_ link: PeerLink) { event.yield("opened \(link.peer.short)") }
    }

    /// A stream's end that keeps why it ended.
    final class StreamEnd: StreamEndpoint {
        let endings = NIOLockedValueBox<[FetchFailure]>([])

        func linkData(_ bytes: ByteBuffer) {}
        func linkControl(_ message: SessionMessage) {}
        func linkClosed(_ reason: FetchFailure, _ message: String) { endings.withLockedValue { $0.append(reason) } }
    }

    /// Two devices of one account on one memory network, each allowing `allowed` (both, by default).
    static func pair(
        allowedByListener: ((DeviceID, DeviceID) -> Set<DeviceID>)? = nil,
        clock: AgentClock = .system,
        loop: EventLoop? = nil
    ) throws -> (network: MemoryNetwork, dialler: Device, listener: Device) {
        let network = MemoryNetwork()
        let one = try DeviceIdentity.generate(name: "laptop")
        let two = try DeviceIdentity.generate(name: "desktop")
        let both: Set<DeviceID> = [one.id, two.id]
        let listenerAllows = allowedByListener?(one.id, two.id) ?? both
        func device(_ identity: DeviceIdentity, host: String, allows: Set<DeviceID>) -> Device {
            let loop = loop ?? MultiThreadedEventLoopGroup.singleton.next()
            let transport = network.peerTransport(host: host, device: identity.id, policy: .members { allows }, loop: loop)
            let links = PeerLinks(identity: identity, policy: .members { allows }, transport: transport, clock: clock)
            let responder = Responder()
            links.responder = responder
            return Device(identity: identity, links: links, responder: responder)
        }
        return (network, device(one, host: "10.0.0.1", allows: both), device(two, host: "10.0.0.2", allows: listenerAllows))
    }

    /// The next thing `device`'s responder was told.
    static func next(_ device: Device) async -> String? {
        var heard = device.responder.events.makeAsyncIterator()
        return await heard.next()
    }

    /// The listener serving on 10.0.0.2:4000, and the dialler's link to it, opened on both sides.
    static func linked(clock: AgentClock = .system, loop: EventLoop? = nil) async throws -> (dialler: Device, listener: Device, link: PeerLink) {
        let (_, dialler, listener) = try pair(clock: clock, loop: loop)
        _ = try await listener.links.serve(host: "10.0.0.2", port: 4000)
        let link = try await dialler.links.link(to: listener.id, host: "10.0.0.2", port: 4000)
        #expect(await next(dialler) == "opened \(listener.id.short)")
        #expect(await next(listener) == "opened \(dialler.id.short)")
        return (dialler, listener, link)
    }

    @Test("a request is answered over the memory conduit, and both sides hold the one link (issue 10 item 1)")
    func requestAndAnswer() async throws {
        let (dialler, listener, link) = try await Self.linked()
        #expect(link.peer == listener.id)
        #expect(link.dialedByMe)
        #expect(link.channel.remoteAddress?.hostText == "10.0.0.2", "the roster learns the peer's host from the link")
        let reply = await link.request(.fetch(sequence: 1, deadlineMilliseconds: 1000), timeout: 60)
        #expect(reply == .payload(Data("state".utf8)))
        #expect(await Self.next(listener) == "asked 1")
        let back = try #require(listener.links.existing(dialler.id), "the listener keeps the dialler's link")
        #expect(!back.dialedByMe)
        #expect(dialler.links.open(at: "10.0.0.2:4000") === link, "found again by the address it was reached at")
    }

    @Test("C6: the asker's cancel fails its waiter with cancelled and stops the work on the other side")
    func cancel() async throws {
        let (_, listener, link) = try await Self.linked()
        let (replies, replied) = AsyncStream.makeStream(of: SessionMultiplexer.Reply.self)
        let stop = link.request(.fetch(sequence: 2, deadlineMilliseconds: 1000), timeout: 60) { replied.yield($0) }
        #expect(await Self.next(listener) == "asked 2")
        stop()
        var heard = replies.makeAsyncIterator()
        guard case .failed(.cancelled, _) = await heard.next() else {
            Issue.record("expected the waiter to fail with cancelled")
            return
        }
        #expect(await Self.next(listener) == "stopped 2", "the peer stopped working on it")
        #expect(link.idleSince() != nil, "nothing is left in flight")
    }

    @Test("a link closed by the other side fails what waits on it with peerGone, and both sides forget it")
    func closeFailsWaiters() async throws {
        let (dialler, listener, link) = try await Self.linked()
        let (replies, replied) = AsyncStream.makeStream(of: SessionMultiplexer.Reply.self)
        link.request(.fetch(sequence: 2, deadlineMilliseconds: 1000), timeout: 60) { replied.yield($0) }
        #expect(await Self.next(listener) == "asked 2")
        try #require(listener.links.existing(dialler.id)).close()
        var heard = replies.makeAsyncIterator()
        guard case .failed(.peerGone, _) = await heard.next() else {
            Issue.record("expected the waiter to fail with peerGone")
            return
        }
        #expect(await Self.next(dialler) == "closed \(listener.id.short)")
        #expect(!link.isOpen)
        #expect(await Self.next(listener) == "stopped 2", "the work for a closed link stops")
        #expect(await Self.next(listener) == "closed \(dialler.id.short)")
    }

    @Test("a request unanswered times out when the agent's clock passes its timeout, not before, and the peer stops its work")
    func timeoutOnVirtualClock() async throws {
        let clock = VirtualClock()
        let (_, listener, link) = try await Self.linked(clock: clock.clock)
        let replies = NIOLockedValueBox<[SessionMultiplexer.Reply]>([])
        link.request(.fetch(sequence: 2, deadlineMilliseconds: 1000), timeout: 5) { reply in replies.withLockedValue { $0.append(reply) } }
        #expect(await Self.next(listener) == "asked 2")
        try await clock.advance(by: 4_999)
        #expect(replies.withLockedValue { $0 }.isEmpty)
        try await clock.advance(by: 1)
        guard case .failed(.timedOut, let text) = replies.withLockedValue({ $0.first }) else {
            Issue.record("expected the waiter to fail with timedOut: \(replies.withLockedValue { $0 })")
            return
        }
        #expect(text.contains("5.0 s"))
        #expect(await Self.next(listener) == "stopped 2", "the peer was told to stop")
    }

    @Test("F3: a peer that stops reading ends the stream with peerGone once the keepalive's ping goes unanswered, on virtual time")
    func deadPeerOnVirtualClock() async throws {
        let clock = VirtualClock()
        // One loop for both devices: once a task submitted after an advance has run, what it sent has arrived.
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let (dialler, listener, link) = try await Self.linked(clock: clock.clock, loop: loop)
        let here = StreamEnd()
        let (opened, open) = AsyncStream.makeStream(of: Bool.self)
        link.openStream(sequence: 3, window: 65_536, endpoint: here, timeout: 5) { result in
            if case .success = result { open.yield(true) } else { open.yield(false) }
        }
        var heard = opened.makeAsyncIterator()
        #expect(await heard.next() == true)
        let frozen = try #require(listener.links.existing(dialler.id)?.conduit as? MemoryConduit)
        frozen.stopReading()
        try await clock.advance(by: 1_999)
        try await loop.submit {}.get()
        #expect(here.endings.withLockedValue { $0 }.isEmpty, "quiet for less than the keepalive: nothing is asked yet")
        #expect(link.isOpen)
        try await clock.advance(by: 2_001)
        try await loop.submit {}.get()
        #expect(here.endings.withLockedValue { $0 } == [.peerGone], "ended within 4 s of quiet (PROTOCOL §8)")
        #expect(!link.isOpen)
    }

    @Test("the peer policy still applies: a dialler expecting another device, or a listener refusing the dialler, gets no link")
    func policy() async throws {
        let (_, dialler, listener) = try Self.pair(allowedByListener: { _, listener in [listener] })
        let refusals = NIOLockedValueBox<[SessionRefusal]>([])
        let (told, tell) = AsyncStream.makeStream(of: Void.self)
        listener.links.refused = { refusal in
            refusals.withLockedValue { $0.append(refusal) }
            tell.yield()
        }
        _ = try await listener.links.serve(host: "10.0.0.2", port: 4000)
        let stranger = try DeviceIdentity.generate(name: "stranger")
        await #expect(throws: BatonAgentError.self, "a certificate other than the expected device's") {
            try await dialler.links.link(to: stranger.id, host: "10.0.0.2", port: 4000)
        }
        await #expect(throws: BatonAgentError.self, "the listener does not accept the dialler") {
            try await dialler.links.link(to: listener.id, host: "10.0.0.2", port: 4000)
        }
        var heard = told.makeAsyncIterator()
        await heard.next()
        let refusal = try #require(refusals.withLockedValue { $0.first })
        #expect(refusal.device == dialler.id && !refusal.dialled)
        #expect(dialler.links.existing(listener.id) == nil && listener.links.existing(dialler.id) == nil)
        await #expect(throws: BatonAgentError.self, "no one at that address") {
            try await dialler.links.link(to: listener.id, host: "10.0.0.3", port: 4000)
        }
    }
}
