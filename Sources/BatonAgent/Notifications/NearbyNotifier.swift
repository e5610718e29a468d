import Logging
import NIOConcurrencyHelpers

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The driver of ``NearbyNotifications`` (issue 16 part 2): feeds it the nearby offers, the bus's events and the
/// time, under one lock, and performs what it returns outside it: `Notify` and closes go to the ``NotificationBus``
/// thread, a Continue to ``Agent/continueNearby(device:)``. Run by ``NotificationService``.
final class NearbyNotifier: Sendable {
    private let agent: Agent
    private let logger: Logger
    private let machine = NIOLockedValueBox(NearbyNotifications())
    /// Uptime milliseconds the machine asked to be woken at.
    private let wakeAt = NIOLockedValueBox<UInt64?>(nil)
    /// Set when the nearby table changed since the offers were last read.
    private let nearbyChanged = NIOLockedValueBox(false)
    /// Whether "no notification server" was logged already (once at info, then at debug).
    private let toldNoServer = NIOLockedValueBox(false)
    private let bell = Doorbell()
    /// Continuations chosen from a notification, run as children of the service.
    private let work = TaskPool()
    private let bus: NIOLockedValueBox<NotificationBus?> = NIOLockedValueBox(nil)

    init(agent: Agent) {
        self.agent = agent
        logger = agent.logger
    }

    /// Runs until the task is cancelled (the service's graceful shutdown), then closes every notification it showed.
    func run() async {
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
        // Weakly: the agent keeps its observers for its life, and this notifier holds the agent.
        agent.observeNearby { [weak self] _, _ in
            self?.nearbyChanged.withLockedValue { $0 = true }
            self?.bell.ring()
        }
        nearbyChanged.withLockedValue { $0 = true }  // what is nearby already
        perform(machine.withLockedValue { $0.start() })
        await withDiscardingTaskGroup { group in
            group.addTask { await self.work.run() }
            group.addTask { await self.loop() }
        }
        // The offers cannot be continued here once the agent is gone: withdraw them.
        perform(machine.withLockedValue { $0.stop() })
        await bus.finish()
        self.bus.withLockedValue { $0 = nil }  // the bus's event handler holds this notifier: let both go
    }

    private func waitForCancellation() async {
        while !Task.isCancelled { await bell.wait() }
    }

    /// Sleeps until the nearby table changes or the machine's wake is due.
    private func loop() async {
        while !Task.isCancelled {
            let now = Agent.uptimeMilliseconds()
            let wait = wakeAt.withLockedValue { $0 }.map { Duration.milliseconds(Int64($0.subtractingSaturated(now))) }
            await bell.wait(timeout: wait)
            guard !Task.isCancelled else { return }
            if nearbyChanged.withLockedValue({ changed in
                defer { changed = false }
                return changed
            }) {
                // Asks each new offer's device for its type and title (at most 1 s), as `baton nearby` does (C3).
                let offers = agent.notificationOffers(await agent.nearbyItems(describe: true))
                perform(machine.withLockedValue { $0.offersChanged(offers) })
            }
            let due = wakeAt.withLockedValue { wake -> Bool in
                guard let at = wake, at <= Agent.uptimeMilliseconds() else { return false }
                wake = nil
                return true
            }
            if due { perform(machine.withLockedValue { $0.timePassed(now: Agent.uptimeMilliseconds()) }) }
        }
    }

    /// An event from the bus thread.
    private func handle(_ event: NotificationBus.Event) {
        let now = Agent.uptimeMilliseconds()
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
                _ = work.start { [self] in
                    let outcome = await agent.continueNearby(device: device)
                    if let failure = outcome.failure {
                        logger.notice("desktop notifications: could not continue: \(outcome.message) [\(failure)]")
                        // The person chose Continue and is looking for the app: say why it is not coming (not when
                        // another continuation replaced this one, C6: that one is what they chose last).
                        guard failure.continuationFailure != .fetch(.cancelled) else { return }
                        perform(machine.withLockedValue { $0.continueFailed(device: device, message: outcome.message) })
                    } else {
                        logger.info(
                            "desktop notifications: continued in \(outcome.app) (\(outcome.microseconds / 1_000) ms)"
                        )
                    }
                }
            case .wake(let at):
                wakeAt.withLockedValue { $0 = at }
                bell.ring()
            }
        }
    }
}
