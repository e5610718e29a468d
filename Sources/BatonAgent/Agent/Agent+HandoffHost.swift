import BatonRegistry

/// The agent as its handoff coordinator's host (issue 26 item 1): what the coordinator asks of the rest of the agent
/// with typed values: the registry, the router (``route(_:)``, Agent+Associations), the app checks (Agent+Apps) and
/// the synced folders (Agent+Folders). The coordinator holds it weakly.
extension Agent: HandoffHost {
    func installedApp(_ bundle: String) -> AppRecord? {
        registry.app(bundleIdentifier: bundle)
    }
}

extension Agent {
    /// The stream ends `bundle` holds here, open or ended and not yet released (the count the stream limit is taken
    /// on: issue 25 item 3); its handoff coordinator's.
    func heldStreamEnds(of bundle: String) -> Int {
        handoff.heldStreamEnds(of: bundle)
    }
}
