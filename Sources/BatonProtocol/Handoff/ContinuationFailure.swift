/// Why a continuation failed, from the broker to the app (SEMANTICS C5, C6, C8): the originating device's reason or
/// the fetch's own (``FetchFailure``), or one of this device's. The app's `didFailToContinueUserActivity` error
/// carries it as a `ContinuationError.Code`; on the app socket it travels by ``rawValue`` (docs/PROTOCOL.md §7).
public enum ContinuationFailure: Sendable, Hashable, CustomStringConvertible {
    /// The fetch failed: the reason the originating device sent (`fail`), or the one this device found (C8).
    case fetch(FetchFailure)
    /// No app on this device continues the activity (D1, D3).
    case noApp
    /// The app could not be launched, or did not connect in time.
    case launchFailed
    /// The process of the app told `willContinue` is no longer the app that connected.
    case notPermitted
    /// A document the state names, in a synced folder (C9), is not on this device: its folder is not set up here,
    /// or the file did not arrive within the agent's sync wait (`baton agent --sync-wait`). The message names the
    /// file and the folder.
    case documentNotSynced

    /// The name on the wire: a ``FetchFailure`` raw value, or `noApp`, `launchFailed`, `notPermitted`, `documentNotSynced`.
    public var rawValue: String {
        switch self {
        case .fetch(let failure): failure.rawValue
        case .noApp: "noApp"
        case .launchFailed: "launchFailed"
        case .notPermitted: "notPermitted"
        case .documentNotSynced: "documentNotSynced"
        }
    }

    /// The failure a name stands for, or nil for a name this version does not know.
    public init?(rawValue: String) {
        switch rawValue {
        case "noApp": self = .noApp
        case "launchFailed": self = .launchFailed
        case "notPermitted": self = .notPermitted
        case "documentNotSynced": self = .documentNotSynced
        default:
            guard let failure = FetchFailure(rawValue: rawValue) else { return nil }
            self = .fetch(failure)
        }
    }

    /// Every failure, for tests and tables.
    public static let allCases: [ContinuationFailure] = FetchFailure.allCases.map(ContinuationFailure.fetch) + [.noApp, .launchFailed, .notPermitted, .documentNotSynced]

    public var description: String { rawValue }
}
