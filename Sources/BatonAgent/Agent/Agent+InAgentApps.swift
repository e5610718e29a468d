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

    /// Which application will open `summary`'s activity here, by its desktop file's `Name`, when it is one of the
    /// agent's own sources' (issue 27 item 3): the application the originating device names, when usable here, else
    /// the first usable default for the document's MIME type, the lookup those sources open it with
    /// (``DesktopApplications/application(preferred:mimeType:)``). Nil for any other activity (its own app opens it),
    /// and when nothing here would. Reads a few small files: called as a description arrives, never on the loop.
    func openingApplication(_ summary: ActivitySummary) -> String? {
        guard summary.activityType == BuiltInMedia.activityType || summary.activityType == RecentDocumentsApp.activityType else { return nil }
        let applications = DesktopApplications(settings: configuration.recentDocuments)
        return applications.application(preferred: summary.desktopEntry, mimeType: summary.mimeType)?.entry.name
    }

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
