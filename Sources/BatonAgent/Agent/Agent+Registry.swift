import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOCore

/// The registry follows installs (issue 11 part 7): the app folders and every bundle in them, and the applications
/// folders' desktop files (issue 28 item 2), are watched (inotify, nothing polled), and a change loads the registry
/// again. A bundle that fails to load is a logged problem; the
/// others keep working. The state folder is watched the same way, for the roster (Agent+Sync).
extension Agent {
    /// Starts watching the state folder, and `apps` (the search paths; none when the registry was given in code).
    func watchFolders(apps folders: [URL]) {
        let stateFolder = store.folder.standardizedFileURL.path
        let associationFolder = self.associationFolder.standardizedFileURL.path
        watcher = FolderWatcher(ignoring: [AccountStore.lockFileName]) { [weak self] changed in
            guard let self else { return }
            if changed.contains(stateFolder) { stateFolderChanged() }
            if changed.contains(associationFolder) { associations.cacheChanged() }
            // The state folder is also the folder above `$XDG_DATA_HOME/baton/apps` until that is made: a change there
            // may be it made (issue 28 item 2).
            let underState = changed.contains(stateFolder) && folders.contains { FileStatus.nearestFolder($0.standardizedFileURL.path) == stateFolder }
            if underState || !changed.subtracting([stateFolder, associationFolder]).isEmpty { appsChanged(folders) }
        }
        guard let watcher else {
            logger.warning("the kernel gave no inotify descriptor: changes to the account and apps are seen on restart")
            return
        }
        watcher.replaceWatches(watchedFolders(apps: folders))
    }

    /// The folders to watch: the state folder, each of `searchPaths` that exists, each bundle in those (an edited
    /// Info.plist), and the subfolders desktop files are read from (issue 28 item 2).
    func watchedFolders(apps searchPaths: [URL]) -> Set<String> {
        // The association cache too (issue 14): `baton aasa fetch` writes it while the agent runs.
        try? FileManager.default.createDirectory(at: associationFolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let own: Set = [store.folder.standardizedFileURL.path, associationFolder.standardizedFileURL.path]
        return own.union(AppRegistry.watchedFolders(searchPaths: searchPaths))
    }

    /// Something in an app folder changed: the registry is loaded again, and what changed is logged.
    func appsChanged(_ searchPaths: [URL]) {
        let fresh = configuration.withBuiltInApps(AppRegistry.load(searchPaths: searchPaths))
        let old = registry
        let now = clock.date()
        catalog.withLockedValue { $0 = (fresh, $0.associations, ActivityRouter(registry: fresh, approvals: $0.associations.approvals(now: now))) }
        associations.appsChanged()
        rebuildHashIndex()
        watcher?.replaceWatches(watchedFolders(apps: searchPaths))
        let before = Dictionary(old.apps.map { ($0.bundleIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(fresh.apps.map { ($0.bundleIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
        for (bundle, app) in after where before[bundle] == nil {
            logger.info("app \(bundle) installed at \(app.bundleURL.path)", metadata: ["app": "\(bundle)"])
        }
        for (bundle, app) in after where before[bundle].map({ $0 != app }) == true {
            logger.info("app \(bundle) changed", metadata: ["app": "\(bundle)"])
        }
        for bundle in before.keys where after[bundle] == nil {
            logger.info("app \(bundle) removed", metadata: ["app": "\(bundle)"])
        }
        for problem in Set(fresh.problems).subtracting(old.problems) {
            logger.warning("app bundle not loaded: \(problem)")
        }
    }

    /// What this agent does, for `baton doctor` (issue 24 part 7): multicast or not, the folders it reads apps
    /// from (none when its apps are fixed), and how its continuation streams go (issue 30).
    public func status() -> AgentStatus {
        let folders = configuration.apps == nil ? (configuration.appFolders ?? AppRegistry.searchPaths()) : []
        return AgentStatus(
            multicast: discovery.socket?.multicastIsOn == true,
            multicastDisabled: configuration.discoveryPort == nil,
            appFolders: folders.map(\.path),
            streamPath: configuration.streamPath.rawValue
        )
    }

    /// The apps this agent sees now, as the command line lists them (`baton apps list --agent`): one listing per
    /// app with its kind, and one with an empty bundle per bundle or desktop file that did not load, saying why.
    public func appListing() -> [AppListing] {
        let registry = registry
        var listing = registry.apps.map { app in
            var problem = ""
            if !app.isIdentityResolved || app.teamIdentifier == nil {
                problem = "no resolved identity or team: it continues nothing"
            } else if app.executableURL == nil {
                problem = "no executable to launch"
            }
            return AppListing(
                bundle: app.bundleIdentifier,
                name: app.name,
                team: app.teamIdentifier,
                activityTypes: Array(app.claimedActivityTypes.sorted().prefix(AppListing.maximumActivityTypes)),
                problem: problem,
                // Issue 28 item 2: a bundle or a desktop file; the agent's own apps (the browser, issue 14; recent
                // documents and media, issue 27) are neither.
                kind: Agent.inAgentApps.contains(app.bundleIdentifier) || app.bundleIdentifier == BuiltInBrowser.bundleIdentifier ? "built-in" : app.kind.rawValue
            )
        }
        for problem in registry.problems {
            let name = URL(fileURLWithPath: problem.path).deletingPathExtension().lastPathComponent
            let kind = problem.path.hasSuffix(".desktop") ? AppRecord.Kind.desktopFile : .bundle
            listing.append(AppListing(bundle: "", name: name, team: nil, activityTypes: [], problem: problem.description, kind: kind.rawValue))
        }
        return listing
    }

    // MARK: Sessions

    /// The session service: its work, its sweep and the `listener` ``open(listener:)`` bound are its own (issue 26
    /// item 1); it shares the links, and the agent keeps only the ``SessionService/Work`` handle.
    func sessionService(listener: PeerListener?) -> SessionService {
        SessionService(work: sessions, links: links, listener: listener, clock: clock)
    }
}
