import BatonRegistry

/// The agent as its handoff coordinator's host (issue 26 item 1): what the coordinator asks of the rest of the agent
/// with typed values: the registry, the router (``route(_:)``, Agent+Associations), the app checks (Agent+Apps), the
/// synced folders (Agent+Folders) and the stream tables (Agent+Streams). The coordinator holds it weakly.
extension Agent: HandoffHost {
    func installedApp(_ bundle: String) -> AppRecord? {
        registry.app(bundleIdentifier: bundle)
    }
}
