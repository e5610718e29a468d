@testable import BatonAgent
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

/// Issue 26 items 1 and 2: roster sync's decisions as a pure state machine, on virtual time (uptime nanoseconds
/// passed in, no sleeps), and the service that runs it owning its state, driven through its trigger alone.
@Suite("Issue 26 item 2: roster sync schedule, on virtual time")
struct RosterSyncScheduleTests {
    static let second: UInt64 = 1_000_000_000
    static let peer = "127.0.0.1:47810"
    static let roster = Data("roster 1".utf8)
    static let newer = Data("roster 2".utf8)
    /// Two links, told apart by identity as the service tells `PeerLink`s apart.
    static let linkA = LinkToken()
    static let linkB = LinkToken()
    final class LinkToken: Sendable {}

    static func synced(over link: LinkToken, sent: Data = roster) -> RosterSyncSchedule.Outcome {
        .synced("synced: 2 devices, key epoch 1", link: ObjectIdentifier(link), sent: sent)
    }

    @Test("a new target is due; once synced over a link still open with the same roster, it is skipped")
    func inStepIsSkipped() {
        var schedule = RosterSyncSchedule(interval: 5)
        let link = ObjectIdentifier(Self.linkA)
        #expect(schedule.isDue(Self.peer, roster: Self.roster, openLink: nil, now: 0))
        _ = schedule.ended(Self.peer, Self.synced(over: Self.linkA), now: 0)
        #expect(!schedule.isDue(Self.peer, roster: Self.roster, openLink: link, now: 1 * Self.second))
        #expect(!schedule.isDue(Self.peer, roster: Self.roster, openLink: link, now: 3600 * Self.second), "no timer while in step")
        #expect(schedule.nextRetry(now: 0) == nil, "nothing to wait for")
        #expect(schedule.isDue(Self.peer, roster: Self.newer, openLink: link, now: 2 * Self.second), "this device's roster changed")
        #expect(schedule.isDue(Self.peer, roster: nil, openLink: link, now: 2 * Self.second), "a roster that cannot be read is not in step")
    }

    @Test("the link it was synced over closed, or was replaced: synced again")
    func linkChangeForcesSync() {
        var schedule = RosterSyncSchedule(interval: 5)
        _ = schedule.ended(Self.peer, Self.synced(over: Self.linkA), now: 0)
        #expect(schedule.isDue(Self.peer, roster: Self.roster, openLink: nil, now: 1), "closed")
        #expect(schedule.isDue(Self.peer, roster: Self.roster, openLink: ObjectIdentifier(Self.linkB), now: 1), "another session (the peer restarted)")
        _ = schedule.ended(Self.peer, Self.synced(over: Self.linkB), now: 2)
        #expect(!schedule.isDue(Self.peer, roster: Self.roster, openLink: ObjectIdentifier(Self.linkB), now: 3))
    }

    @Test("failures back off from the interval, doubling, up to 12 times it: 5, 10, 20, 40, 60, 60 s")
    func backoff() {
        var schedule = RosterSyncSchedule(interval: 5)
        var now: UInt64 = 0
        var delays: [Double] = []
        for _ in 1...6 {
            #expect(schedule.isDue(Self.peer, roster: Self.roster, openLink: nil, now: now))
            _ = schedule.ended(Self.peer, .failed("connection refused"), now: now)
            let wait = schedule.nextRetry(now: now) ?? .zero
            delays.append(Double(wait.components.seconds))
            let due = now + UInt64(wait.components.seconds) * Self.second
            #expect(!schedule.isDue(Self.peer, roster: Self.roster, openLink: nil, now: due - 1), "not before its time")
            #expect(schedule.nextRetry(now: due - Self.second) == .seconds(1))
            #expect(schedule.nextRetry(now: due + Self.second) == .zero, "overdue: at once")
            now = due
        }
        #expect(delays == [5, 10, 20, 40, 60, 60])
        #expect(schedule.failures(of: Self.peer) == 6)
        // A success ends the back-off.
        _ = schedule.ended(Self.peer, Self.synced(over: Self.linkA), now: now)
        #expect(schedule.failures(of: Self.peer) == 0)
        #expect(schedule.nextRetry(now: now) == nil)
        _ = schedule.ended(Self.peer, .failed("connection refused"), now: now)
        #expect(schedule.nextRetry(now: now) == .seconds(5), "the next failure starts from the interval again")
        #expect(RosterSyncSchedule.retryDelay(failures: 4, interval: 0.2) == 0.2 * 8)
    }

    @Test("a failed target is tried again when due even if the link it last synced over is still open")
    func failedIsRetriedWhenDue() {
        var schedule = RosterSyncSchedule(interval: 5)
        let link = ObjectIdentifier(Self.linkA)
        _ = schedule.ended(Self.peer, Self.synced(over: Self.linkA), now: 0)
        _ = schedule.ended(Self.peer, .failed("timed out [stepTimeout]"), now: 10 * Self.second)
        #expect(!schedule.isDue(Self.peer, roster: Self.roster, openLink: link, now: 14 * Self.second))
        #expect(schedule.isDue(Self.peer, roster: Self.roster, openLink: link, now: 15 * Self.second))
    }

    @Test("resync all (a damaged peer cache, ISSUE 10 item 8): every target due at once, in step or waiting out a failure")
    func resyncAll() {
        var schedule = RosterSyncSchedule(interval: 5)
        let other = "127.0.0.1:47811"
        let link = ObjectIdentifier(Self.linkA)
        _ = schedule.ended(Self.peer, Self.synced(over: Self.linkA), now: 0)
        _ = schedule.ended(other, .failed("connection refused"), now: 0)
        #expect(!schedule.isDue(Self.peer, roster: Self.roster, openLink: link, now: 1))
        #expect(!schedule.isDue(other, roster: Self.roster, openLink: nil, now: 1))
        schedule.resyncAll()
        #expect(schedule.isDue(Self.peer, roster: Self.roster, openLink: link, now: 1))
        #expect(schedule.isDue(other, roster: Self.roster, openLink: nil, now: 1))
        #expect(schedule.nextRetry(now: 1) == nil)
        #expect(schedule.failures(of: other) == 1, "the count of failures stays: the next one still backs off further")
    }

    @Test("a target no longer listed is forgotten: listed again, it is new (due, and its first outcome logged)")
    func removedTargetIsForgotten() {
        var schedule = RosterSyncSchedule(interval: 5)
        let other = "127.0.0.1:47811"
        _ = schedule.ended(Self.peer, Self.synced(over: Self.linkA), now: 0)
        _ = schedule.ended(other, .failed("connection refused"), now: 0)
        schedule.listed([Self.peer])
        #expect(schedule.failures(of: other) == nil)
        #expect(schedule.failures(of: Self.peer) == 0)
        #expect(schedule.nextRetry(now: 0) == nil, "the removed target's retry went with it")
        #expect(schedule.isDue(other, roster: Self.roster, openLink: nil, now: 0))
        #expect(schedule.ended(other, .failed("connection refused"), now: 0) != nil)
    }

    @Test("an outcome is logged once, until it changes: a peer that stays away is one line")
    func logOnce() {
        var schedule = RosterSyncSchedule(interval: 5)
        #expect(schedule.ended(Self.peer, .failed("connection refused"), now: 0) == .failed("connection refused", retryIn: 5))
        #expect(schedule.ended(Self.peer, .failed("connection refused"), now: 5 * Self.second) == nil)
        #expect(schedule.ended(Self.peer, .failed("timed out"), now: 15 * Self.second) == .failed("timed out", retryIn: 20))
        #expect(schedule.ended(Self.peer, Self.synced(over: Self.linkA), now: 35 * Self.second) == .synced("synced: 2 devices, key epoch 1"))
        #expect(schedule.ended(Self.peer, Self.synced(over: Self.linkB), now: 40 * Self.second) == nil, "the same text over another link")
        schedule.resyncAll()
        #expect(schedule.ended(Self.peer, Self.synced(over: Self.linkA), now: 41 * Self.second) == nil, "a resync does not log again")
        #expect(schedule.ended(Self.peer, .synced("synced: 3 devices, key epoch 2", link: ObjectIdentifier(Self.linkA), sent: Self.newer), now: 42 * Self.second) != nil)
    }
}

/// The sync service owns its records, its doorbell and its resync flag: the agent only rings its trigger.
@Suite("Issue 26 item 1: the sync service, driven by its trigger")
struct SyncServiceTests {
    /// What the fake targets answer, and every sync asked, in order.
    final class Peers: Sendable {
        let calls = NIOLockedValueBox<[String]>([])
        let clock = VirtualClock()
        let link = RosterSyncScheduleTests.LinkToken()
        let (asked, asking) = AsyncStream.makeStream(of: String.self)

        func sync(_ target: String) -> RosterSyncSchedule.Outcome {
            calls.withLockedValue { $0.append(target) }
            asking.yield(target)
            return target.hasSuffix(":1")
                ? .synced("synced", link: ObjectIdentifier(link), sent: RosterSyncScheduleTests.roster)
                : .failed("connection refused")
        }
    }

    /// A sync service with a 60 s retry on `peers`' clock, syncing `targets` (good:1 over `peers`' link) with `peers`.
    static func service(_ trigger: SyncService.Trigger, _ peers: Peers, targets: [String]) -> SyncService {
        SyncService(
            trigger: trigger,
            interval: 60,
            roster: { RosterSyncScheduleTests.roster },
            targets: { targets },
            openLink: { [peers] target in target == "good:1" ? ObjectIdentifier(peers.link) : nil },
            sync: { [peers] target in peers.sync(target) },
            logger: Logger(label: "sync-test", factory: { _ in SwiftLogNoOpLogHandler() }),
            clock: peers.clock.clock
        )
    }

    @Test("a ring syncs what is due; in step and backing off are skipped until the clock passes the retry or all are resynced")
    func triggerDrivesRounds() async throws {
        let peers = Peers()
        let trigger = SyncService.Trigger()
        let service = Self.service(trigger, peers, targets: ["good:1", "away:2"])
        var asked = peers.asked.makeAsyncIterator()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await service.run() }
            trigger.ring()
            #expect(await asked.next() == "good:1")
            #expect(await asked.next() == "away:2")
            // Nothing due now: a ring syncs nobody. The clock then passes the failed target's retry (60 s).
            trigger.ring()
            try await peers.clock.advance(by: .seconds(61))
            trigger.ring()
            #expect(await asked.next() == "away:2")
            trigger.resyncAll()
            #expect(await asked.next() == "good:1")
            #expect(await asked.next() == "away:2")
            group.cancelAll()
        }
        #expect(peers.calls.withLockedValue { $0 } == ["good:1", "away:2", "away:2", "good:1", "away:2"])
    }
}
