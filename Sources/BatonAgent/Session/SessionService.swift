import Dispatch
import NIOCore
import ServiceLifecycle

/// Sessions with the account's other devices (issue 26 item 1): the listener, the links (ISSUE 10's one link per
/// pair, closed when idle) and the work their requests start. At shutdown the work is cancelled and awaited, then
/// every link and the listener close.
///
/// It owns what it runs: the work pool and the doorbell its sweep sleeps on, both behind its ``ServiceWork``, the one handle
/// the agent keeps (to start a peer's request, and to say a link opened); and the sweep of idle links, whose
/// decisions are ``LinkSweep``'s, pure. What it needs beyond that comes in at construction as narrow values: the
/// links, the listener, the sweep's timing and an uptime clock; it holds no agent.
struct SessionService: Service, CustomStringConvertible {
    /// How the rest of the agent starts session work (a peer's roster sync, a probe of a device's clock) and wakes
    /// the sweep: the one handle to this service it keeps.
    typealias Work = ServiceWork

    let work: Work
    let links: PeerLinks
    /// Where peers' sessions are accepted; closed at shutdown after the links.
    let listener: PeerListener?
    var sweep = LinkSweep()
    /// The agent's clock: its uptime is what ``PeerLink`` stamps its activity with, and the sweep's sleeps are timed
    /// on it.
    var clock: AgentClock = .system

    var description: String { "sessions" }

    /// Uptime nanoseconds.
    private func now() -> UInt64 {
        clock.uptimeNanoseconds()
    }

    func run() async {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await work.pool.run() }
                group.addTask { await sweepLoop() }
            }
        }
        links.closeAll()
        await listener?.close()
    }

    /// Closes idle and retired links as they come due (ISSUE 10 item 1) and gives memory back after bursts: it
    /// sleeps until the next link could be due, and while no link is open, until one opens (issue 11 part 8).
    private func sweepLoop() async {
        while !Task.isCancelled {
            // Until the instant computed from this reading (issue 26 item 2), however long the computing took.
            let looked = now()
            await work.bell.wait(timeout: sweep.wait(for: links.sweepView().map(\.facts), peak: links.peak, now: looked), from: looked, clock: clock)
            guard !Task.isCancelled else { return }
            let now = now()
            for (link, facts) in links.sweepView() where sweep.closes(facts, now: now) {
                link.close()
            }
            let (peak, open) = links.takePeak()
            if sweep.givesMemoryBack(peak: peak, open: open) { Allocator.giveBackFreeMemory() }
        }
    }
}

extension ServiceWork {
    /// The links changed (one opened, or a burst of connections ended): the session service's sweep looks again now.
    func linksChanged() {
        bell.ring()
    }
}
