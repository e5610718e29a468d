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
