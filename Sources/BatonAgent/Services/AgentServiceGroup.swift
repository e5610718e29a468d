import Logging
import ServiceLifecycle
import UnixSignals

/// An agent and its long-running parts, as ``Agent/build(_:)`` returns them: the caller runs them (issue 26 item 1),
/// in a group of their own (``run(signals:logger:)``, as `baton agent` does) or in a `ServiceGroup` of its own
/// beside other services (as BatonEmbedded's `LocalDevices` does, one group per device).
///
/// `services` is in the order a group must be given them, one after the other: a group stops its services in the
/// reverse of their order, so advertising stops first (the goodbye of the current activity, A9, goes out while the
/// rest still works, and whatever waits fails), then roster sync, the app socket and the sessions, and search last
/// (what apps sent before the shutdown is saved); desktop notifications, when on, come last so they are withdrawn
/// first (issue 16). The agent stops when the group shuts down gracefully; cancelling the group instead skips that
/// order. Until the services run, the agent's sockets are open but nothing is answered beyond them.
public struct AgentServices: Sendable {
    /// The agent the services run.
    public let agent: Agent
    /// Its services, in the order a group must be given them.
    public let services: [any Service]

    /// A group of these services alone: it stops gracefully on one of `signals` or `triggerGracefulShutdown()`.
    public func group(signals: [UnixSignal] = [], logger: Logger) -> ServiceGroup {
        ServiceGroup(configuration: ServiceGroupConfiguration(services: services, gracefulShutdownSignals: signals, logger: logger))
    }

    /// Runs the services in a group of their own until it shuts down: on one of `signals` (`baton agent`: SIGINT
    /// and SIGTERM), gracefully, in the order above.
    /// - Throws: `ServiceGroupError` when a service ended or failed on its own (the group then stopped the rest).
    public func run(signals: [UnixSignal] = [], logger: Logger) async throws {
        try await group(signals: signals, logger: logger).run()
    }
}
