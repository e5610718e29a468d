import BatonNotifications
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether the agent follows the media players on the session bus and offers what they play (issue 27 item 1).
public struct MediaSettings: Sendable, Hashable {
    /// The session bus: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` when that socket exists; nil when
    /// there is neither.
    public var busAddress: String?
    /// On by default only where there is a session bus (a desktop session); agents embedded in tests and the demo have
    /// it off unless a test turns it on. Without a bus it does nothing but say so in the log.
    public var isEnabled: Bool
    /// Whether a player here pauses once its track plays on another device (A8, as `userActivityWasContinued` lets an
    /// app close what was continued).
    public var pausesWhenContinued = true

    /// The settings the environment `environment` gives.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        busAddress = NotificationServer.sessionBusAddress(environment: environment) { FileManager.default.fileExists(atPath: $0) }
        isEnabled = busAddress != nil
    }
}
