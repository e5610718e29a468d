import CSystemd
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#endif

/// What a session-bus adapter with a thread of its own shares (the notifier's ``NotificationBus``, the agent's media
/// players, issue 27 item 1): sd-bus blocks and is not thread-safe, so a connection lives on one thread, which waits in
/// `poll` on the bus and an eventfd (``waitForWork(bus:)``; a connection from ``SessionBus/open(_:purpose:)``), takes the commands queued from other threads
/// (``send(_:)``, ``take()``), and ends when asked (``finish()``, then ``ended()`` from the thread).
///
/// Sendable, checked: the queue and the finish state are under locks; the eventfd is set in `init` and closed once, by
/// ``ended()``, after the queue is marked ended under its lock (so no ``send(_:)`` writes to it after).
package final class SessionBusThread<Command: Sendable>: Sendable {
    private let queue = NIOLockedValueBox<(commands: [Command], finishing: Bool, ended: Bool)>(([], false, false))
    private let finish = NIOLockedValueBox<(done: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    private let wakeDescriptor: Int32

    /// A queue and its eventfd; no thread yet (``start(named:_:)``).
    /// - Throws: ``NotificationBusError/Code/busUnavailable`` when no eventfd can be made.
    package init() throws(NotificationBusError) {
        wakeDescriptor = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        guard wakeDescriptor >= 0 else {
            throw NotificationBusError(.busUnavailable, "cannot make an eventfd for a session bus thread: \(String(cString: strerror(errno)))")
        }
    }

    /// Starts a thread named `name` running `body`, which must call ``ended()`` last.
    /// - Throws: ``NotificationBusError/Code/busUnavailable`` when no thread can be started (the eventfd is closed).
    package func start(named name: String, _ body: @escaping @Sendable () -> Void) throws(NotificationBusError) {
        do {
            try SessionBus.startThread(named: name, body)
        } catch {
            close(wakeDescriptor)
            throw error
        }
    }

    /// Queues `command` for the thread and wakes it; dropped once the thread has ended.
    package func send(_ command: Command) {
        queue.withLockedValue { queue in
            guard !queue.ended else { return }
            queue.commands.append(command)
            // Under the lock: the thread closes the eventfd only after setting `ended` under it.
            wake()
        }
    }

    /// On the thread: the commands queued, and whether ``finish()`` was called.
    package func take() -> (commands: [Command], finishing: Bool) {
        queue.withLockedValue { queue in
            defer { queue.commands = [] }
            return (queue.commands, queue.finishing)
        }
    }

    /// On the thread: whether it should end now (finishing and nothing left queued); from then on nothing is queued.
    package func shouldEnd() -> Bool {
        queue.withLockedValue { queue in
            queue.ended = queue.finishing && queue.commands.isEmpty
            return queue.ended
        }
    }

    /// Asks the thread to end (it runs what is queued first) and returns once it has.
    package func finish() async {
        queue.withLockedValue { queue in
            queue.finishing = true
            if !queue.ended { wake() }
        }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let done = finish.withLockedValue { state -> Bool in
                if !state.done { state.waiter = waiter }
                return state.done
            }
            if done { waiter.resume() }
        }
    }

    /// On the thread, last (after ``shouldEnd()`` said so): closes the eventfd and lets ``finish()`` return.
    package func ended() {
        close(wakeDescriptor)
        let waiter = finish.withLockedValue { state in
            state.done = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// On the thread, as its whole body: the commands queued, in order (`perform`), then what the bus has (`process`),
    /// then a wait on the bus `bus()` names, until ``finish()``; then `close` and ``ended()``. Once finishing, what is
    /// still queued is dropped: nothing is worth doing once the owner stops.
    package func run(perform: (Command) -> Void, process: () -> Void, bus: () -> OpaquePointer?, close: () -> Void) {
        while true {
            let (commands, finishing) = take()
            if finishing {
                while !shouldEnd() { _ = take() }
                break
            }
            for command in commands { perform(command) }
            process()
            waitForWork(bus: bus())
        }
        close()
        ended()
    }

    /// On the thread: sleeps until `bus` has something to read (or a timeout of its own, at most a minute) or a
    /// command is queued.
    package func waitForWork(bus: OpaquePointer?) {
        var descriptors = [pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
        var timeout: Int32 = -1
        if let bus {
            let descriptor = baton_sd_bus_get_fd(bus)
            let events = baton_sd_bus_get_events(bus)
            if descriptor >= 0, events >= 0 {
                descriptors.append(pollfd(fd: descriptor, events: Int16(events), revents: 0))
            }
            var until: UInt64 = 0
            if baton_sd_bus_get_timeout(bus, &until) >= 0, until != UInt64.max {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
                timeout = Int32(min(((until > nowMicroseconds ? until - nowMicroseconds : 0) + 999) / 1_000, 60_000))
            }
        }
        _ = poll(&descriptors, nfds_t(descriptors.count), timeout)
        if descriptors[0].revents & Int16(POLLIN) != 0 {
            var count: UInt64 = 0
            _ = read(wakeDescriptor, &count, MemoryLayout<UInt64>.size)
        }
    }

}
