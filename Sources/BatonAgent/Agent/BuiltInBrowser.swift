import BatonClient
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The browser as a Handoff app (issue 14): an app every agent registers itself, with no bundle to install.
///
/// `baton browse` and `baton browser-host` (the browser extension's native messaging host) connect as this app; the
/// agent admits them as it admits any app, by `/proc/PID/exe`, so its executable is the `baton` binary
/// (``AgentConfiguration/browserAppExecutable``). It claims `NSUserActivityTypeBrowsingWeb` with a team of its own.
/// It is never launched to continue a page: with no host connected a page goes to the default browser (E1).
public enum BuiltInBrowser {
    /// The app's bundle identifier, also the native messaging host's name in the browsers' manifests.
    public static let bundleIdentifier = "org.baton.browser"
    /// Its team: no other app's, so its pages reach other apps only through the web-page route (E3), never by team.
    public static let teamIdentifier = "BATONWEB01"
    /// Its name in `baton apps list --agent`.
    public static let name = "Web browser (Baton extension)"

    /// The `baton` binary: this process's executable when it is `baton` (an agent embedded in a `baton` command), else
    /// the `baton` beside it (`baton-agent`, which `baton agent` executes; a test runner in the build folder). Nil when
    /// neither can be found.
    public static func defaultExecutable() -> URL? {
        guard let running = PeerCredentials.executable(of: getpid()) else { return nil }
        let this = URL(fileURLWithPath: running)
        if this.lastPathComponent == "baton" { return this }
        let beside = this.deletingLastPathComponent().appendingPathComponent("baton")
        return FileManager.default.isExecutableFile(atPath: beside.path) ? beside : nil
    }

    /// The app's record, running `executable` (none: nothing can connect as it).
    public static func record(executable: URL?) -> AppRecord {
        AppRecord(
            bundleURL: executable ?? URL(fileURLWithPath: "/"),
            bundleIdentifier: bundleIdentifier,
            name: name,
            executableURL: executable,
            teamIdentifier: teamIdentifier,
            activityTypes: [AppRecord.browsingWebActivityType],
            documentActivityTypes: [],
            associatedDomains: [],
            warnings: [],
            isIdentityResolved: true
        )
    }

    /// `registry` with the built-in browser app last, unless an installed bundle already has its identifier.
    public static func adding(to registry: AppRegistry, executable: URL?) -> AppRegistry {
        guard registry.app(bundleIdentifier: bundleIdentifier) == nil else { return registry }
        return AppRegistry(apps: registry.apps + [record(executable: executable)], problems: registry.problems)
    }
}

extension AgentConfiguration {
    /// `registry` with the apps every agent registers itself: the browser (issue 14), recent documents when on
    /// (issue 27 item 2), the media players when followed (issue 27 item 1).
    func withBuiltInApps(_ registry: AppRegistry) -> AppRegistry {
        let apps = BuiltInBrowser.adding(to: registry, executable: browserAppExecutable)
        let documents = recentDocuments.isEnabled ? RecentDocumentsApp.adding(to: apps) : apps
        return media.isFollowing ? BuiltInMedia.adding(to: documents) : documents
    }
}
