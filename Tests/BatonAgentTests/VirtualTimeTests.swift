@testable import BatonAgent
import BatonProtocol
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Issue 26 item 3: the agent's parts on a virtual clock. Every timed wait in the services goes through the agent's
/// clock, so a test moves time by a call: a minute of idle link, five seconds of quiet from a peer, a retry a minute
/// away, with no real wait and no fixed sleep. Each wait here is for something a part was told or did.
@Suite("Issue 26 item 3: the services on virtual time")
struct VirtualTimeTests {
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Returns once `discovery`'s loop sleeps with a timer due by `uptime` on `clock`. Its own advert rings its
    /// doorbell, so a wait it arms may end at once: only a waiter stored is asleep, and time moves only then (a loop
    /// that computes its next sleep while the clock moves sleeps longer).
    static func asleep(_ discovery: Discovery, on clock: VirtualClock, dueBy uptime: UInt64) async {
        await clock.untilTimer(dueBy: uptime)
        while !discovery.bell.isWaiting { await Task.yield() }
    }

    @Test("the virtual clock runs the timers an advance passes, earliest first, with the readings at each one's time; a cancelled timer never runs; setting the wall clock runs none")
    func virtualClock() async throws {
        let clock = VirtualClock(uptime: 1_000, wall: 1_800_000_000_000)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let ran = NIOLockedValueBox<[String]>([])
        func note(_ name: String) -> @Sendable () -> Void {
            { [agent = clock.clock] in ran.withLockedValue { $0.append("\(name) at \(agent.uptime()) wall \(agent.wall() - 1_800_000_000_000)") } }
        }
        _ = clock.clock.schedule(after: 300, on: loop, note("third"))
        _ = clock.clock.schedule(in: .milliseconds(100), on: loop, note("first"))
        let cancelled = clock.clock.schedule(after: 200, on: loop, note("cancelled"))
        _ = clock.clock.schedule(in: .microseconds(100_500), on: loop, note("second"))
        cancelled.cancel()
        #expect(clock.pending == 3)
        clock.setWall(1_800_000_000_000)  // the wall clock set to what it was: nothing runs
        try await clock.advance(by: 99)
        #expect(ran.withLockedValue { $0 }.isEmpty, "none due yet")
        #expect(clock.uptime == 1_099)
        try await clock.advance(by: .seconds(1))
        #expect(ran.withLockedValue { $0 } == ["first at 1100 wall 100", "second at 1100 wall 100", "third at 1300 wall 300"])
        #expect(clock.uptime == 2_099 && clock.wall == 1_800_000_001_099, "after the last timer, time goes on to the advance's end")
        #expect(clock.pending == 0)
        #expect(clock.scheduled == 4)
        clock.setWall(1_700_000_000_000)
        #expect(clock.wall == 1_700_000_000_000 && clock.uptime == 2_099, "a wall clock set moves no uptime")
    }

    @Test("issue 25 item 0 on virtual time: a doorbell's timed wait ends when the clock passes its timeout, not before; a ring ends it and leaves no timer behind")
    func doorbell() async throws {
        let clock = VirtualClock()
        let bell = Doorbell()
        let (returns, returned) = AsyncStream.makeStream(of: Void.self)
        var heard = returns.makeAsyncIterator()
        let waiting = Task {
            await bell.wait(timeout: .seconds(3_600), clock: clock.clock)
            returned.yield()
            await bell.wait(timeout: .seconds(3_600), clock: clock.clock)
            returned.yield()
        }
        await clock.untilTimers(1)
        try await clock.advance(by: .seconds(3_600) - .milliseconds(1))
        #expect(clock.pending == 1, "an hour less a millisecond: still waiting")
        try await clock.advance(by: 1)
        await heard.next()
        await clock.untilTimers(1)
        bell.ring()
        await heard.next()
        #expect(clock.pending == 0, "the rung wait's timer is gone with it")
        await waiting.value
    }

    /// A link over the memory transport, its dialler's session service running on a virtual clock, asleep until the
    /// link could be due (idle since it opened, now), a millisecond late, when `body` starts; stopped after it.
    static func sweeping(
        _ body: (VirtualClock, SessionService.Work, MemoryTransportTests.Device, MemoryTransportTests.Device, PeerLink) async throws -> Void
    ) async throws {
        let clock = VirtualClock()
        let (dialler, listener, link) = try await MemoryTransportTests.linked(clock: clock.clock)
        let work = SessionService.Work()
        let service = SessionService(work: work, links: dialler.links, listener: nil, clock: clock.clock)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await service.run() }
            await clock.untilTimer(dueBy: clock.uptime + 120_001)
            try await body(clock, work, dialler, listener, link)
            group.cancelAll()
        }
    }

    @Test("ISSUE 10 item 1 on virtual time: the session service closes a link this side dialled once it has been idle 120 s, and not at 119.999 s")
    func sessionSweep() async throws {
        try await Self.sweeping { clock, work, dialler, listener, link in
            try await clock.advance(by: 119_999)
            // The sweep looks now (a link changed) and keeps it: 1 ms of its limit is left.
            let looked = clock.scheduled
            work.linksChanged()
            await clock.untilScheduled(looked + 1)
            #expect(link.isOpen, "idle 119.999 s")
            try await clock.advance(by: 2)
            #expect(await MemoryTransportTests.next(dialler) == "closed \(listener.id.short)")
            #expect(!link.isOpen, "idle 120 s: closed by the sweep")
        }
    }

    @Test("issue 26 item 2: a doorbell's wait until an instant the clock has passed (while its service computed it) returns at once, with no advance; one not yet passed waits for it")
    func doorbellInstant() async throws {
        let clock = VirtualClock()
        let bell = Doorbell()
        let looked = clock.clock.uptimeNanoseconds()
        try await clock.advance(by: 2_000)
        await bell.wait(timeout: .seconds(1), from: looked, clock: clock.clock)
        #expect(clock.pending == 0, "woke at once: nothing left behind")
        let waiting = Task { await bell.wait(timeout: .seconds(1), from: clock.clock.uptimeNanoseconds(), clock: clock.clock) }
        await clock.untilTimer(dueBy: clock.uptime + 1_000)
        try await clock.advance(by: 1_000)
        await waiting.value
    }

    @Test("issue 26 item 2: one advance past several of a service's wake-ups still has it do each one's work: the session service closes a link in use for its first 30 s once idle 120 s, in one step of 10 min, with no stepping between")
    func oneStepPastSeveralWakeUps() async throws {
        try await Self.sweeping { clock, _, dialler, listener, link in
            // In use for 30 s: the sweep's first wake-up (120 s after the link opened) finds it idle 90 s and sleeps
            // until 150 s, an instant the same advance passes.
            let stop = link.request(.fetch(sequence: 2, deadlineMilliseconds: 1_000), timeout: 3_600) { _ in }
            #expect(await MemoryTransportTests.next(listener) == "asked 2")
            try await clock.advance(by: 30_000)
            stop()
            #expect(await MemoryTransportTests.next(listener) == "stopped 2")
            #expect(link.isOpen)
            try await clock.advance(by: .seconds(600))
            #expect(await MemoryTransportTests.next(dialler) == "closed \(listener.id.short)")
            #expect(!link.isOpen, "idle 120 s: closed by the sweep")
        }
    }

    @Test("A9 on virtual time: the current activity is advertised again once per second of the clock, and a device that goes quiet leaves the nearby list once its time to live (5 s) has passed, not at 4.999 s")
    func discoveryReadvertisesAndExpires() async throws {
        // Two devices, two clocks moved together (each device's timers on its own), the desktop's first: an advert
        // the laptop's timer sends arrives at the same time on the desktop's clock.
        let laptopClock = VirtualClock()
        let desktopClock = VirtualClock()
        func advance(by milliseconds: UInt64) async throws {
            try await desktopClock.advance(by: milliseconds)
            try await laptopClock.advance(by: milliseconds)
        }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let network = MemoryNetwork()
        let roster = DiscoveryTests.roster()
        let laptop = Discovery(me: DiscoveryTests.laptop.id, roster: roster, timeToLiveMilliseconds: 5_000, logger: Self.quiet, clock: laptopClock.clock)
        let desktop = Discovery(me: DiscoveryTests.desktop.id, roster: roster, timeToLiveMilliseconds: 5_000, logger: Self.quiet, clock: desktopClock.clock)
        let (adverts, advert) = AsyncStream.makeStream(of: Void.self)
        let received = NIOLockedValueBox(0)
        _ = try network.advertTransport(host: "10.0.0.2", port: 47_800, loop: loop) { datagram, source in
            if case .accepted = desktop.receive(datagram, from: source) {
                received.withLockedValue { $0 += 1 }
                advert.yield()
            }
        }
        laptop.attach(try network.advertTransport(host: "10.0.0.1", port: 47_800, loop: loop) { _, _ in }, sessionPort: 47_810)
        let (removals, removed) = AsyncStream.makeStream(of: Void.self)
        desktop.observe { _, change in if change == .removed { removed.yield() } }
        func service(_ discovery: Discovery) -> DiscoveryService {
            DiscoveryService(discovery: discovery, advertInterval: 1_000, timeToLive: 5, logger: Self.quiet, stop: {})
        }
        let current = try #require(DiscoveryTests.advertised(by: "laptop"))
        var heard = adverts.makeAsyncIterator()
        let laptopRunning = Task { await service(laptop).run() }
        let desktopRunning = Task { await service(desktop).run() }
        laptop.advertise(current, isCurrent: true)
        await heard.next()
        #expect(desktop.offers().map(\.deviceName) == ["laptop"])
        let first = try #require(laptop.offered(at: laptopClock.wall)?.lastAdvert)
        // Both asleep before time moves: the laptop until its next advert is due, the desktop until the offer could
        // expire.
        await Self.asleep(laptop, on: laptopClock, dueBy: first + 1_000)
        await Self.asleep(desktop, on: desktopClock, dueBy: first + 5_001)
        for second in UInt64(1)...3 {
            try await advance(by: 999)
            try await loop.submit {}.get()
            #expect(received.withLockedValue { UInt64($0) } == second, "nothing more within the second")
            try await advance(by: 1)
            await heard.next()
            #expect(received.withLockedValue { UInt64($0) } == second + 1, "one advert a second")
            await Self.asleep(laptop, on: laptopClock, dueBy: first + 1_000 * (second + 1))
        }
        // The laptop goes quiet (its loop stops; no goodbye is sent): the desktop keeps its offer for 5 s of quiet.
        laptopRunning.cancel()
        await laptopRunning.value
        // The desktop looks when its first advert could have expired, finds it refreshed, and sleeps again.
        try await advance(by: 2_001)
        await Self.asleep(desktop, on: desktopClock, dueBy: first + 3_000 + 5_001)
        try await advance(by: 2_998)
        #expect(desktop.offers().count == 1, "4.999 s of quiet: still nearby")
        try await advance(by: 2)
        var gone = removals.makeAsyncIterator()
        await gone.next()
        #expect(desktop.offers().isEmpty, "5 s of quiet: expired")
        desktopRunning.cancel()
        await desktopRunning.value
    }

    @Test("issue 25 item 1 on virtual time: a real advert socket that closed by itself is reopened on its port once the agent's clock passes the first back-off (1 s), not at 0.999 s")
    func advertSocketReopens() async throws {
        let clock = VirtualClock()
        let (lines, line) = AsyncStream.makeStream(of: String.self)
        let socket = try await AdvertSocket.open(
            host: "127.0.0.1", port: 0, discoveryPort: nil,
            log: { line.yield("info: " + $0) }, warn: { line.yield("warning: " + $0) }, clock: clock.clock
        ) { _, _ in }
        defer { socket.close() }
        let address = try #require(socket.slots.withLockedValue { $0[.unicast]?.address })
        let channel = try #require(socket.slots.withLockedValue { $0[.unicast]?.open?.channel })
        try await channel.close()
        var said = lines.makeAsyncIterator()
        #expect(await said.next()?.hasPrefix("warning: adverts: the unicast socket closed by itself") == true)
        await clock.untilTimers(1)
        try await clock.advance(by: 999)
        #expect(clock.pending == 1, "0.999 s: not reopened yet")
        try await clock.advance(by: 1)
        #expect(await said.next()?.contains("is open again") == true)
        #expect(socket.slots.withLockedValue { $0[.unicast]?.address } == address, "on the same port")
    }

    @Test("roster sync on virtual time: a target that failed is tried again when the clock passes its retry (60 s), with no ring, and not before")
    func syncRetry() async throws {
        let peers = SyncServiceTests.Peers()
        let trigger = SyncService.Trigger()
        let service = SyncServiceTests.service(trigger, peers, targets: ["away:2"])
        var asked = peers.asked.makeAsyncIterator()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await service.run() }
            trigger.ring()
            #expect(await asked.next() == "away:2")
            await peers.clock.untilTimers(1)
            try await peers.clock.advance(by: 59_999)
            #expect(peers.calls.withLockedValue { $0 } == ["away:2"], "59.999 s: backing off")
            try await peers.clock.advance(by: 1)
            #expect(await asked.next() == "away:2", "60 s: tried again")
            group.cancelAll()
        }
    }
}
