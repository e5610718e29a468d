import BatonAssociations
import BatonCore
import BatonRegistry
import BatonSearch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// How an agent runs. The defaults are what `baton agent` uses; tests and the demo change ports and timings.
public struct AgentConfiguration: Sendable {
    /// The device's state folder.
    public var store: AccountStore
    /// The address sessions and unicast adverts are received on. The default, `::`, takes IPv4 and IPv6 on one
    /// socket (IPv6 is needed to be dialled back at a link-local address found by IPv6 multicast); where IPv6 is
    /// off, the agent falls back to `0.0.0.0`.
    public var host = AgentConfiguration.anyHost
    /// Every address, IPv4 and IPv6.
    public static let anyHost = "::"
    /// The port for sessions (TCP) and unicast adverts (UDP); 0 picks a free one.
    public var port = 47810
    /// The shared port for multicast adverts on the LAN; nil turns multicast off (unicast only).
    public var discoveryPort: Int? = 47810
    /// Other agents to advertise to and sync with (`host:port`), beyond the known peers: the way across subnets
    /// and VPNs.
    public var peers: [String] = []
    /// The Unix socket apps connect to; nil for the default (``AgentConfiguration/defaultSocketPath(for:)``).
    public var socketPath: String?
    /// How apps reach the agent at ``socketPath``: its Unix socket (the default), or in memory, for apps in this
    /// process only (issue 26 item 3: ``AgentClient`` finds it there by the same path, with no socket).
    public var appConnections = AppConnections.unixSocket
    /// How sessions and adverts reach other agents: the network (TLS over TCP, UDP; the default), or a
    /// ``MemoryNetwork`` in this process shared with the other agents on it (issue 26 item 3), where ``host`` and
    /// ``port`` are virtual and ``port`` 0 takes one the network hands out.
    public var peerConnections = PeerConnections.network
    /// The installed apps, fixed (tests, the demo); nil loads them from ``appFolders`` and follows changes there.
    public var apps: AppRegistry?
    /// The folders of app bundles and desktop files (issue 28 item 2); nil for the search paths (BATON_APPS_PATH, XDG
    /// data folders, then the XDG applications folders).
    public var appFolders: [URL]?
    /// How long the originating app may take to give its state (ISSUE 5 part 4: 1 s unless configured).
    public var saveDeadline = 1.0
    /// How long a launched app may take to connect.
    public var launchTimeout = 10.0
    /// How long a continuation waits for a document in a synced folder that has not arrived here yet (C9: sync
    /// lag) before it fails with `documentNotSynced`.
    public var syncWait = 10.0
    /// Seconds between re-advertisements of the current activity.
    public var advertInterval = 1.0
    /// Seconds before a failed roster sync with a peer is tried again, doubling up to 12 times this. Rosters are
    /// otherwise synced when they change and when a session opens, never on a timer (issue 11 part 8).
    public var syncInterval = 5.0
    /// How long a nearby activity stays listed without a fresh advert.
    public var nearbyTimeToLive = 5.0
    /// Seconds an app's end of a continuation stream that has ended stays open for the app to take the end
    /// (``StreamLimits/releaseMilliseconds`` unless configured; tests lengthen it to watch a held end).
    public var streamRelease = Double(StreamLimits.releaseMilliseconds) / 1000
    /// How continuation streams travel (issue 30): `direct` (the default) lets two apps hold a TLS connection of
    /// their own wherever both ends can, and relays the rest over the session; `relayed` relays every stream.
    public var streamPath = StreamPath.direct
    /// Whether an app in this very process may connect under any registered bundle (the embedded mode: tests, the
    /// demo). Processes other than this one are always checked against the bundle's executable.
    public var trustsThisProcess = false
    /// The command that opens a web page when no app continues an activity (E1); the URL is appended.
    public var browserCommand = ["xdg-open"]
    /// The executable of the built-in browser app, `org.baton.browser` (issue 14): `baton browse` and
    /// `baton browser-host` connect as that app and must run it. The `baton` binary by default
    /// (``BuiltInBrowser/defaultExecutable()``); nil lets nothing connect as it.
    public var browserAppExecutable: URL? = BuiltInBrowser.defaultExecutable()
    /// Where the agent logs, with metadata (`peer`, `app`, `sequence`, `continuation`); never key material. The
    /// default goes wherever the process bootstrapped swift-log (standard error unless it did).
    public var logger = Logger(label: "baton.agent")

    // Association files over HTTPS (issue 14; SEMANTICS E4).
    /// How long fetched association files count, how failed fetches are retried, the fetch timeouts.
    public var associations = AssociationPolicy()
    /// `--resolve`: fetch some domains' files from another address, the certificate still checked for the domain.
    public var associationResolve: [ResolveRule] = []
    /// `--cacert`: PEM files of roots trusted beside the system's (`BATON_CACERT` adds more).
    public var associationRootFiles: [String] = []

    // Desktop notifications (issue 16 part 2; SEMANTICS C3).
    /// Whether offers nearby that an app here continues are shown as desktop notifications (org.freedesktop.Notifications
    /// on the session bus), with a Continue action. `baton agent --no-notify` turns it off; agents inside another
    /// process (``BatonEmbedded``'s `LocalDevices`: tests, the demo) have it off. Without a session bus it does nothing.
    public var desktopNotifications = true

    // Recent documents (issue 27 item 2; SEMANTICS B5, B6, C9).
    /// Whether documents opened in synced folders are offered (`recently-used.xbel`, KDE's `RecentDocuments/`) and
    /// continued here, and the folders read for that.
    public var recentDocuments = RecentDocumentsSettings()

    // Media players (issue 27 item 1; SEMANTICS A9, C9).
    /// Whether what the session bus's media players (MPRIS) play is offered, and on which bus: on where there is one.
    public var media = MediaSettings()

    // Apps in any language (issue 28 item 1; docs/PROTOCOL.md §11).
    /// Whether apps on the session bus are served (`org.baton.Agent`), and on which bus: on where there is one.
    public var dbusApps = DBusAppSettings()

    // On-device search (issue 15; SEMANTICS G1).
    /// The search index's bounds (entries, bytes, per-field sizes; the oldest saved leave first).
    public var searchLimits = SearchLimits.default

    /// The clock the agent and its services read (issue 26 item 2): the system's unless a test passes a virtual one.
    package var clock = AgentClock.system

    /// A configuration for the device whose state lives in `store`.
    public init(store: AccountStore) {
        self.store = store
    }

    /// The fallback runtime folder when `folder` is inside it (every folder from it down is then checked), else nil
    /// (only `folder` itself is checked).
    static func fallbackRuntimeFolder(containing folder: String) -> String? {
        let base = AgentSocket.fallbackRuntimeFolder
        let standardized = FilePaths.standardized(folder)
        return standardized == base || standardized.hasPrefix(base + "/") ? base : nil
    }

    /// The default socket for the agent of `store` (``AgentSocket/defaultPath(stateFolder:environment:)``).
    public static func defaultSocketPath(for store: AccountStore, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        AgentSocket.defaultPath(stateFolder: store.folder, environment: environment)
    }
}
