import BatonProtocol
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The driver of ``NearbyNotifications`` (issue 16 part 2): feeds it the nearby offers, the bus's events and the
/// time, under one lock, and performs what it returns outside it: `Notify` and closes go to the ``NotificationBus``
/// thread, a Continue to the ``NearbyFeed``. What it knows of the agent is that feed alone (issue 26 item 4).
///
/// One loop takes its inputs in turn (the nearby list changed, a wake is due, a Continue was chosen); wakes are timers
/// on a NIO event loop, so an idle notifier makes no thread and wakes for nothing.
public final class NearbyNotifier: Sendable {
    /// What the loop is told.
    private enum Input: Sendable {
        case nearbyChanged
        case wake
        case continueHere(String)
    }

    private let feed: NearbyFeed
    private let logger: Logger
    private let eventLoop: EventLoop
    private let machine = NIOLockedValueBox(NearbyNotifications())
    /// The uptime milliseconds the machine asked to be woken at, and the timer for it.
    private let wakeAt = NIOLockedValueBox<(at: UInt64, timer: Scheduled<Void>)?>(nil)
    /// Set when the nearby table changed since the offers were last read (so a burst of changes is read once).
    private let nearbyChanged = NIOLockedValueBox(false)
    /// Whether "no notification server" was logged already (once at info, then at debug).
    private let toldNoServer = NIOLockedValueBox(false)
    private let inputs: AsyncStream<Input>
    private let input: AsyncStream<Input>.Continuation
    private let bus: NIOLockedValueBox<NotificationBus?> = NIOLockedValueBox(nil)

    /// A notifier of `feed`'s offers, logging to `logger`, its timers on `eventLoop`.
    public init(feed: NearbyFeed, logger: Logger, eventLoop: EventLoop = MultiThreadedEventLoopGroup.singleton.next()) {
        self.feed = feed
        self.logger = logger
        self.eventLoop = eventLoop
        (inputs, input) = AsyncStream.makeStream(of: Input.self)
    }

    /// Runs until the task is cancelled (the service's graceful shutdown), then closes every notification it showed.
    /// Once only.
    public func run() async {
        let environment = ProcessInfo.processInfo.environment
        guard
            let address = NotificationServer.sessionBusAddress(
                environment: environment,
                exists: { FileManager.default.fileExists(atPath: $0) }
            )
        else {
            logger.info(
                "desktop notifications: no session bus (no DBUS_SESSION_BUS_ADDRESS, no $XDG_RUNTIME_DIR/bus); none shown"
            )
            return await waitForCancellation()
        }
        if let why = NotificationServer.libraryUnavailable() {
            logger.info("desktop notifications: \(why); none shown")
            return await waitForCancellation()
        }
        let bus: NotificationBus
        do {
            bus = try NotificationBus(address: address) { [self] event in handle(event) }
            try bus.start()
        } catch {
            logger.info("desktop notifications: \(error.message); none shown")
            return await waitForCancellation()
        }
        self.bus.withLockedValue { $0 = bus }
        let changes = feed.nearbyChanges()
        markNearbyChanged()  // what is nearby already
        perform(machine.withLockedValue { $0.start() })
        await withDiscardingTaskGroup { group in
            group.addTask { [self] in
                for await _ in changes { markNearbyChanged() }
            }
            await loop(group: &group)
            group.cancelAll()
        }
        wakeAt.withLockedValue { wake in
            wake?.timer.cancel()
            wake = nil
        }
        // The offers cannot be continued here once the agent is gone: withdraw them.
        perform(machine.withLockedValue { $0.stop() })
        await bus.finish()
        self.bus.withLockedValue { $0 = nil }  // the bus's event handler holds this notifier: let both go
    }

    /// Returns once the task is cancelled (the stream's iteration ends then; nothing is sent to it on this path).
    private func waitForCancellation() async {
        for await _ in inputs {}
    }

    /// Now, in uptime milliseconds (the clock of NIO's timers).
    private static func now() -> UInt64 {
        NIODeadline.now().uptimeNanoseconds / 1_000_000
    }

    /// Tells the loop the nearby table changed, unless it was told and has not read the offers since.
    private func markNearbyChanged() {
        let first = nearbyChanged.withLockedValue { changed in
            defer { changed = true }
            return !changed
        }
        if first { input.yield(.nearbyChanged) }
    }

    /// Takes the inputs until the task is cancelled: reads the offers when the nearby table changed, passes the time
    /// when the machine's wake is due, and runs each chosen Continue as a child of `group`.
    private func loop(group: inout DiscardingTaskGroup) async {
        for await next in inputs {
            switch next {
            case .nearbyChanged:
                nearbyChanged.withLockedValue { $0 = false }
                // Asks each new offer's device for its type and title (at most 1 s), as `baton nearby` does (C3).
                let offers = await feed.offers()
                guard !Task.isCancelled else { return }
                perform(machine.withLockedValue { $0.offersChanged(offers) })
            case .wake:
                let now = Self.now()
                let due = wakeAt.withLockedValue { wake -> Bool in
                    guard let at = wake?.at, at <= now else { return false }
                    wake = nil
                    return true
                }
                if due { perform(machine.withLockedValue { $0.timePassed(now: Self.now()) }) }
            case .continueHere(let device):
                group.addTask { [self] in await continueHere(device) }
            }
        }
    }

    /// Sets the machine's wake to `at` (uptime milliseconds), replacing any earlier one.
    private func wake(at: UInt64) {
        let delay = at > Self.now() ? at - Self.now() : 0
        let timer = eventLoop.scheduleTask(in: .milliseconds(Int64(clamping: delay))) { [input] in _ = input.yield(.wake) }
        let replaced = wakeAt.withLockedValue { wake in
            defer { wake = (at, timer) }
            return wake?.timer
        }
        replaced?.cancel()
    }

    /// Continues `device`'s offer, chosen from its notification; a failure is shown to the person who chose it.
    private func continueHere(_ device: String) async {
        let outcome = await feed.continueNearby(device)
        if let failure = outcome.failure {
            logger.notice("desktop notifications: could not continue: \(outcome.message) [\(failure)]")
            // The person chose Continue and is looking for the app: say why it is not coming (not when
            // another continuation replaced this one, C6: that one is what they chose last).
            guard failure.continuationFailure != .fetch(.cancelled) else { return }
            perform(machine.withLockedValue { $0.continueFailed(device: device, message: outcome.message) })
        } else {
            logger.info("desktop notifications: continued in \(outcome.app) (\(outcome.microseconds / 1_000) ms)")
        }
    }

    /// An event from the bus thread.
    private func handle(_ event: NotificationBus.Event) {
        let now = Self.now()
        let actions = machine.withLockedValue { machine -> [NearbyNotifications.Action] in
            switch event {
            case .connected: return machine.connected(now: now)
            case .connectFailed: return machine.connectFailed(now: now)
            case .disconnected: return machine.disconnected(now: now)
            case .notified(let token, let id): return machine.notified(token: token, id: id, now: now)
            case .notifyFailed(let token, let failure, _): return machine.notifyFailed(token: token, failure, now: now)
            case .actionInvoked(let id, let key): return machine.actionInvoked(id: id, key: key)
            case .closed(let id, _): return machine.closedByServer(id: id)
            case .serverChanged(let hadOwner, let hasOwner):
                return machine.serverChanged(hadOwner: hadOwner, hasOwner: hasOwner)
            }
        }
        switch event {
        case .connected: logger.info("desktop notifications: connected to the session bus")
        case .connectFailed(let error): logger.debug("desktop notifications: \(error.message); trying again later")
        case .disconnected(let error): logger.info("desktop notifications: \(error.message); trying again later")
        case .notified(_, let id): logger.debug("desktop notifications: shown as \(id)")
        case .notifyFailed(_, .noServer, let reason):
            let first = toldNoServer.withLockedValue { told in
                defer { told = true }
                return !told
            }
            logger.log(
                level: first ? .info : .debug,
                "desktop notifications: no notification server on the session bus (\(reason)); none shown"
            )
        case .notifyFailed(_, .refused, let reason): logger.debug("desktop notifications: Notify failed: \(reason)")
        case .actionInvoked(let id, let key): logger.debug("desktop notifications: action \(key) on \(id)")
        case .closed(let id, let reason):
            logger.debug("desktop notifications: \(id) closed by the server (reason \(reason))")
        case .serverChanged(let hadOwner, let hasOwner):
            if hadOwner {
                logger.info(
                    "desktop notifications: the notification server \(hasOwner ? "changed" : "went away"); its ids are forgotten"
                )
            } else {
                logger.debug("desktop notifications: a notification server started")
            }
        }
        perform(actions)
    }

    private func perform(_ actions: [NearbyNotifications.Action]) {
        for action in actions {
            switch action {
            case .connect:
                bus.withLockedValue { $0 }?.send(.connect)
            case .notify(let token, let replacing, let notice):
                logger.info(
                    "desktop notifications: \(replacing == nil ? "showing" : "replacing") \"\(notice.summary)\" (\(notice.appName))",
                    metadata: ["notify": "\(token)"]
                )
                bus.withLockedValue { $0 }?.send(.notify(token: token, replacing: replacing, notice))
            case .close(let id):
                logger.info("desktop notifications: withdrawing \(id)")
                bus.withLockedValue { $0 }?.send(.close(id))
            case .continueHere(let device):
                logger.info(
                    "desktop notifications: Continue chosen for \(device.prefix(8))",
                    metadata: ["peer": "\(device.prefix(8))"]
                )
                input.yield(.continueHere(device))
            case .wake(let at):
                wake(at: at)
            }
        }
    }
}
