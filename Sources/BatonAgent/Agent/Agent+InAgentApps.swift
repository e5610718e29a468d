import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The agent's own sources as apps (issue 27): built-in apps with no executable that only the agent's process connects
/// as (``Agent/admitted(bundle:version:on:)`` checks its pid, not an executable), and that are never launched.
extension Agent {
    /// Their bundle identifiers.
    static let inAgentApps: Set<String> = [RecentDocumentsApp.bundleIdentifier, BuiltInMedia.bundleIdentifier]

    /// The recent-documents source (issue 27 item 2), on this agent's socket, synced folders and clock.
    func recentDocumentsSource() -> RecentDocumentsSource {
        RecentDocumentsSource(
            settings: configuration.recentDocuments,
            socketPath: socketPath,
            folders: { [weak self] in self?.syncedFolders() ?? SyncedFolders() },
            clock: clock,
            logger: logger
        )
    }
}

extension AppRegistry {
    /// The registry with the in-agent app `bundle` last (a record with no bundle folder and no executable, its identity
    /// resolved, claiming `activityTypes` under `team`), unless an installed bundle already has its identifier: what
    /// each of the agent's sources registers itself as (issue 27).
    func addingInAgentApp(bundle: String, name: String, team: String, activityTypes: [String]) -> AppRegistry {
        guard app(bundleIdentifier: bundle) == nil else { return self }
        let record = AppRecord(
            bundleURL: URL(fileURLWithPath: "/"),
            bundleIdentifier: bundle,
            name: name,
            executableURL: nil,
            teamIdentifier: team,
            activityTypes: activityTypes,
            documentActivityTypes: [],
            associatedDomains: [],
            warnings: [],
            isIdentityResolved: true
        )
        return AppRegistry(apps: apps + [record], problems: problems)
    }
}
