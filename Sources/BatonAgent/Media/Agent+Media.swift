import BatonProtocol

extension Agent {
    /// The media source (issue 27 item 1) on this agent's socket, synced folders and clock; nil, with a log line, when
    /// it is off or there is no session bus.
    func mediaSource() -> MediaSource? {
        guard configuration.media.isEnabled else { return nil }
        guard let address = configuration.media.busAddress else {
            log("media players are not followed: no session bus (DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus missing)")
            return nil
        }
        return MediaSource(
            address: address,
            socketPath: socketPath,
            folders: { [weak self] in self?.syncedFolders() ?? SyncedFolders() },
            clock: clock,
            pausesWhenContinued: configuration.media.pausesWhenContinued,
            applications: DesktopApplications(settings: configuration.recentDocuments),
            environment: configuration.recentDocuments.environment.merging(["DBUS_SESSION_BUS_ADDRESS": address]) { $1 },
            logger: logger
        )
    }
}
