@testable import BatonAgent
import NIOCore
import NIOPosix
import Testing

/// Issue 26 item 1: the session service's sweep of idle links (ISSUE 10 items 1 and 7) as a pure decision, on virtual
/// time (uptime nanoseconds passed in, no sockets, no sleeps).
@Suite("Issue 26 item 1: the idle link sweep, on virtual time")
struct LinkSweepTests {
    static let second: UInt64 = 1_000_000_000
    static let start: UInt64 = 1_000 * second
    let sweep = LinkSweep(idleTimeout: 120, retiredGrace: 10)

    static func link(dialedByMe: Bool, retired: Bool = false, idleSince: UInt64? = start) -> LinkSweep.Link {
        LinkSweep.Link(dialedByMe: dialedByMe, retired: retired, idleSince: idleSince)
    }

    @Test("ISSUE 10 item 1: a link this side dialled closes after 120 s idle, not a nanosecond before")
    func dialledLinkClosesWhenIdle() {
        let link = Self.link(dialedByMe: true)
        #expect(!sweep.closes(link, now: Self.start))
        #expect(!sweep.closes(link, now: Self.start + 120 * Self.second - 1))
        #expect(sweep.closes(link, now: Self.start + 120 * Self.second))
        #expect(!sweep.closes(Self.link(dialedByMe: true, idleSince: nil), now: Self.start + 3_600 * Self.second), "a request in flight keeps it open")
    }

    @Test("a link the peer dialled is the peer's to close, however long idle")
    func peersLinkStaysOpen() {
        #expect(!sweep.closes(Self.link(dialedByMe: false), now: Self.start + 3_600 * Self.second))
        #expect(sweep.wait(for: [Self.link(dialedByMe: false)], peak: 0, now: Self.start) == nil, "nothing to wake for")
    }

    @Test("ISSUE 10 item 1: a retired link closes at once when idle if this side dialled it, after the 10 s grace if the peer did")
    func retiredLinks() {
        #expect(sweep.closes(Self.link(dialedByMe: true, retired: true), now: Self.start))
        #expect(!sweep.closes(Self.link(dialedByMe: true, retired: true, idleSince: nil), now: Self.start), "not while in flight")
        let peers = Self.link(dialedByMe: false, retired: true)
        #expect(!sweep.closes(peers, now: Self.start + 10 * Self.second - 1))
        #expect(sweep.closes(peers, now: Self.start + 10 * Self.second))
    }

    @Test("the sweep sleeps until the first link could be due, a millisecond late; a busy link a whole timeout from now")
    func nextWait() {
        let now = Self.start + 100 * Self.second
        let links = [
            Self.link(dialedByMe: true),  // due at start + 120 s: 20 s from now
            Self.link(dialedByMe: false, retired: true, idleSince: Self.start + 95 * Self.second),  // due at 105 s: 5 s
        ]
        #expect(sweep.wait(for: links, peak: 0, now: now) == .seconds(5) + .milliseconds(1))
        #expect(sweep.wait(for: [links[0]], peak: 0, now: now) == .seconds(20) + .milliseconds(1))
        #expect(sweep.wait(for: [Self.link(dialedByMe: true, idleSince: nil)], peak: 0, now: now) == .seconds(120) + .milliseconds(1))
        #expect(sweep.wait(for: [links[0]], peak: 0, now: Self.start + 200 * Self.second) == .milliseconds(1), "overdue: at once")
        #expect(sweep.wait(for: [], peak: 0, now: now) == nil, "no link: it sleeps until one opens")
    }

    @Test("ISSUE 10 item 7: after a burst of 64 connections the sweep looks every 5 s, and gives memory back once 64 have gone")
    func burst() {
        #expect(sweep.wait(for: [], peak: PeerLinks.burst, now: Self.start) == .seconds(5))
        #expect(sweep.wait(for: [], peak: PeerLinks.burst - 1, now: Self.start) == nil)
        #expect(sweep.givesMemoryBack(peak: 100, open: 36))
        #expect(!sweep.givesMemoryBack(peak: 100, open: 37))
    }
}

/// Issue 26 item 1: the session service owns what it runs, driven through its handle alone (no agent).
@Suite("Issue 26 item 1: the session service owns its work and its listener")
struct SessionServiceTests {
    @Test("work started through the handle runs in the service and is cancelled when it stops; then the listener closes")
    func ownsWorkAndListener() async throws {
        let identity = try DeviceIdentity.generate(name: "sessions")
        let links = try PeerLinks(identity: identity, policy: .members { [] }, group: MultiThreadedEventLoopGroup.singleton.next())
        let listener = try await links.listen(host: "127.0.0.1", port: 0)
        let work = SessionService.Work()
        let service = SessionService(work: work, links: links, listener: PeerListener(port: listener.localAddress?.port ?? 0) { try? await listener.close() })
        let (events, event) = AsyncStream.makeStream(of: String.self)
        var heard = events.makeAsyncIterator()
        await withDiscardingTaskGroup { group in
            group.addTask { await service.run() }
            work.start {
                event.yield("started")
                await Doorbell().wait()  // until the service stops
                event.yield(Task.isCancelled ? "cancelled" : "ended")
            }
            #expect(await heard.next() == "started")
            #expect(listener.isActive, "sessions are accepted while it runs")
            group.cancelAll()
            #expect(await heard.next() == "cancelled")
        }
        #expect(!listener.isActive, "the listener closed with the service")
    }
}
