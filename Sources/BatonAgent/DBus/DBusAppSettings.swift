import BatonNotifications
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether the agent serves apps on the session bus (`org.baton.Agent`, docs/PROTOCOL.md §11; issue 28 item 1), and on
/// which bus.
public struct DBusAppSettings: Sendable, Hashable {
    /// The session bus: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` when that socket exists; nil when there
    /// is neither. Tests put a bus of their own here.
    public var busAddress: String?
    /// Wanted (the default; `baton agent --no-dbus-apps` and agents embedded in tests and the demo turn it off unless a
    /// test turns it on). Served only where there is a session bus (``isServing``): without one, or with the name
    /// owned by another agent, the agent says so in one log line and goes on without it.
    public var isEnabled = true

    /// The settings the environment `environment` gives.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        busAddress = NotificationServer.sessionBusAddress(environment: environment) { FileManager.default.fileExists(atPath: $0) }
    }

    /// Whether apps are served: wanted, and a session bus to serve them on.
    public var isServing: Bool { isEnabled && busAddress != nil }
}
