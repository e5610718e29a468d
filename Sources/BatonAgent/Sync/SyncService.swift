#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import Logging
import ServiceLifecycle
import Synchronization

/// Roster sync with the known peers (issue 11 part 8; issue 26 item 1): when the roster changes (a merge, or another
/// `baton` command writing the state folder), when a session opens, and again after a failure; never on a timer when
/// all is in step.
///
/// It owns its state: the ``RosterSyncSchedule`` (what each target was synced with, its failures, what was logged),
/// the doorbell its loop sleeps on and the resync-all flag, both behind its ``Trigger``, the one handle others hold.
/// What it needs of the agent comes in at construction as narrow values: the roster, the targets, the link open to
/// a target, and the sync itself (I/O over the agent's links); it holds no agent.
struct SyncService: Service, CustomStringConvertible {
    /// How the rest of the agent asks for a round: the one handle to this service it keeps.
    final class Trigger: Sendable {
        fileprivate let bell = Doorbell()
        /// Set by ``resyncAll()``, taken by the next round.
        private let everyone = Atomic<Bool>(false)

        init() {}

        /// A round soon: something changed (the state folder, a session opened).
        func ring() {
            bell.ring()
        }

        /// A round soon that syncs every target again, in step or not (a damaged peer cache, ISSUE 10 item 8).
        func resyncAll() {
            everyone.store(true, ordering: .releasing)
            bell.ring()
        }

        /// Whether ``resyncAll()`` was asked since the last round; clears it.
        fileprivate func takeResyncAll() -> Bool {
            everyone.exchange(false, ordering: .acquiringAndReleasing)
        }
    }

    let trigger: Trigger
    /// Seconds from a failure to the next try (`--interval`; ``RosterSyncSchedule``).
    let interval: Double
    /// This device's roster as sent, read at the start of each round; nil when it cannot be read.
    let roster: @Sendable () -> Data?
    /// The addresses to sync with, read at the start of each round.
    let targets: @Sendable () -> [String]
    /// The link open to an address now, if any.
    let openLink: @Sendable (String) -> ObjectIdentifier?
    /// One sync with an address, and how it ended.
    let sync: @Sendable (String) async -> RosterSyncSchedule.Outcome
    let logger: Logger
    /// The agent's clock: its uptime is the schedule's time, and the loop's sleeps are timed on it.
    let clock: AgentClock

    var description: String { "roster sync" }

    /// Uptime nanoseconds.
    private func now() -> UInt64 {
        clock.uptimeNanoseconds()
    }

    init(
        trigger: Trigger,
        interval: Double,
        roster: @escaping @Sendable () -> Data?,
        targets: @escaping @Sendable () -> [String],
        openLink: @escaping @Sendable (String) -> ObjectIdentifier?,
        sync: @escaping @Sendable (String) async -> RosterSyncSchedule.Outcome,
        logger: Logger,
        clock: AgentClock = .system
    ) {
        self.trigger = trigger
        self.interval = interval
        self.roster = roster
        self.targets = targets
        self.openLink = openLink
        self.sync = sync
        self.logger = logger
        self.clock = clock
    }

    func run() async {
        await cancelWhenGracefulShutdown { await syncLoop() }
    }

    /// Rounds, each when the trigger rings or a failed target is due: the schedule decides, this does the I/O.
    private func syncLoop() async {
        var schedule = RosterSyncSchedule(interval: interval)
        while !Task.isCancelled {
            let looked = now()
            await trigger.bell.wait(timeout: schedule.nextRetry(now: looked), from: looked, clock: clock)
            guard !Task.isCancelled else { return }
            if trigger.takeResyncAll() { schedule.resyncAll() }
            let started = now()
            let roster = roster()
            let targets = targets()
            // The link is looked up just before each target's turn: an earlier sync in the round takes time.
            for target in targets where schedule.isDue(target, roster: roster, openLink: openLink(target), now: started) {
                let outcome = await sync(target)
                if let report = schedule.ended(target, outcome, now: now()) { log(report, target) }
            }
            schedule.listed(targets)
        }
    }

    private func log(_ report: RosterSyncSchedule.Report, _ target: String) {
        switch report {
        case .synced(let text):
            logger.info("\(target): \(Agent.logLine(text))", metadata: ["peer": "\(target)"])
        case .failed(let text, let delay):
            logger.notice("\(target): \(Agent.logLine(text)); trying again in \(PeerLink.format(delay))", metadata: ["peer": "\(target)"])
        }
    }
}
