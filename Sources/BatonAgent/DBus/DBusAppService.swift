import Logging
import NIOCore
import ServiceLifecycle

/// The agent's D-Bus interface for apps as one of its services (issue 28 item 1; docs/PROTOCOL.md §11): the bus
/// adapter (``DBusAppBus``) started with the agent and stopped with it, each registered app's connection closed then
/// (A9: its current activity goes while advertising still runs). No session bus, no libsystemd, or the name owned by
/// another agent is one log line: the agent runs on without the interface.
struct DBusAppService: Service, CustomStringConvertible {
    /// The session bus (a D-Bus address).
    let address: String
    /// The agent's, as its app socket's: the connections' handler and loop.
    let handler: IPCHandler
    let loop: EventLoop
    let logger: Logger
    var description: String { "apps on the session bus" }

    func run() async {
        let bus: DBusAppBus
        do {
            bus = try DBusAppBus(address: address, handler: handler, loop: loop) { [logger] event in
                switch event {
                case .serving(let what): logger.info("\(what)")
                case .unavailable(let why): logger.notice("apps on the session bus are not served: \(why)")
                }
            }
            try bus.start()
        } catch {
            logger.notice("apps on the session bus are not served: \(error.message)")
            return
        }
        bus.send(.connect)
        try? await gracefulShutdown()
        await bus.finish()
    }
}

extension Agent {
    /// The D-Bus interface for apps on this agent's loop (issue 28 item 1); nil, with a log line when wanted, when it
    /// is off or there is no session bus.
    func dbusAppService() -> DBusAppService? {
        guard configuration.dbusApps.isEnabled else { return nil }
        guard let address = configuration.dbusApps.busAddress else {
            log("apps on the session bus are not served: no session bus (DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus missing)")
            return nil
        }
        return DBusAppService(address: address, handler: AgentForwarder(self), loop: loop, logger: logger)
    }
}
