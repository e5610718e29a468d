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
    /// Wanted (the default; `baton agent --no-media` and agents embedded in tests and the demo turn it off unless a
    /// test turns it on). It is on only where there is a session bus (``isFollowing``): without one the agent says so
    /// in one log line and goes on.
    public var isEnabled = true
    /// Whether a player here pauses once its track plays on another device (A8, as `userActivityWasContinued` lets an
    /// app close what was continued).
    public var pausesWhenContinued = true

    /// The settings the environment `environment` gives.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        busAddress = NotificationServer.sessionBusAddress(environment: environment) { FileManager.default.fileExists(atPath: $0) }
    }

    /// Whether the players are followed: wanted, and a session bus to follow them on.
    public var isFollowing: Bool { isEnabled && busAddress != nil }
}
