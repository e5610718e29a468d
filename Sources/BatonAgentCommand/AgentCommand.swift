import ArgumentParser
import BatonAgent
import BatonAssociations
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging

/// `baton agent` and `baton-agent`: run this device's agent.
///
/// `baton agent` replaces itself (`execv`, same pid) with the `baton-agent` executable next to it when there is one:
/// that program links only the agent (no command line, no example apps, no full Foundation), so an agent that runs
/// all day holds less memory (issue 11, "Quiet when idle"; docs/ARCHITECTURE.md, "A lean agent"). Without it the
/// agent runs in this process, the same code.
public struct AgentCommand: AsyncParsableCommand {
    public static let configuration = describing(as: "agent")

    /// The command's help under `name` (`agent` in `baton`, `baton-agent` on its own).
    public static func describing(as name: String) -> CommandConfiguration {
        CommandConfiguration(
            commandName: name,
            abstract: "Run this device's agent: advertise, show and continue activities, keep the account in step.",
            discussion: """
                Apps connect to the agent over a Unix socket in $XDG_RUNTIME_DIR/baton/ (checked with the kernel's peer \
                credentials against the registered bundle). The current activity is advertised in sealed datagrams: by \
                multicast on the LAN (IPv4, and IPv6 link-local on every interface; port --discovery-port) and by unicast to the known peers and to every --peer, which \
                is how devices on other subnets, over a VPN, or on one machine find each other. Other devices fetch the \
                state over TLS 1.3 sessions that only the account's devices can open. Rosters are synced with known peers \
                when they change and when a session opens; a failed sync is tried again after --interval seconds, \
                doubling. Installed apps are followed: a bundle added, changed or removed is seen at once. The \
                apple-app-site-association file of every domain an app claims (activitycontinuation:, applinks:) is \
                fetched over HTTPS in the background, cached in the state folder and fetched again before it expires \
                (--resolve, --cacert). An activity another device starts offering is shown as a desktop notification \
                with a Continue button, where there is a session D-Bus (--no-notify turns that off). When idle the \
                agent sleeps: nothing polls. Logs go to standard error (--log-level); they never contain key material. \
                Stop with Ctrl-C or SIGTERM: the current activity's goodbye goes out first.
                """
        )
    }

    @OptionGroup public var options: AgentOptions

    public init() {}

    public func run() async throws {
        if let lean = Self.leanExecutable() {
            try Self.replaceProcess(with: lean)
        }
        try await options.runAgent()
    }

    /// The `baton-agent` next to this program, when this program is not it and that one can be run.
    static func leanExecutable() -> String? {
        guard let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let folder = me.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let lean = folder + "/baton-agent"
        guard lean != me, access(lean, X_OK) == 0 else { return nil }
        return lean
    }

    /// Runs `program` in this process with the arguments given after `agent`; returns only by throwing.
    static func replaceProcess(with program: String) throws -> Never {
        let arguments = [program] + CommandLine.arguments.dropFirst().drop { $0 != "agent" }.dropFirst()
        fflush(nil)
        var pointers = arguments.map { strdup($0) }
        pointers.append(nil)
        execv(program, pointers)
        let reason = String(cString: strerror(errno))
        pointers.forEach { free($0) }
        throw CommandLineError("could not start \(program): \(reason)")
    }
}

/// The agent's options, and running it.
public struct AgentOptions: ParsableArguments {
    public init() {}

    @OptionGroup var state: StateOptions

    @Option(help: "The port for sessions (TCP) and unicast adverts (UDP); 0 picks a free one.")
    var port = 47810

    @Option(help: "The address to listen on; :: is every IPv4 and IPv6 address (0.0.0.0 where IPv6 is off).")
    var host = AgentConfiguration.anyHost

    @Option(name: .customLong("peer"), help: "Another agent's HOST:PORT to advertise to and sync with; repeatable.")
    var peers: [PeerAddress] = []

    @Option(help: "Seconds before a failed roster sync is tried again (doubling, up to 12 times this).")
    var interval = 5.0

    @Option(help: "The shared UDP port for multicast adverts on the LAN.")
    var discoveryPort = 47810

    @Flag(help: "Do not use multicast: unicast to known peers and --peer only.")
    var noMulticast = false

    @Option(help: "The Unix socket apps connect to (default: in $XDG_RUNTIME_DIR/baton/).")
    var socket: String?

    @Option(name: .customLong("apps"), help: "A folder of app bundles (Name.app); repeatable. Default: BATON_APPS_PATH, then the XDG data folders.")
    var appFolders: [String] = []

    @Option(help: "Seconds the originating app may take to give its state.")
    var saveDeadline = 1.0

    @Option(help: "Seconds between re-advertisements of the current activity.")
    var advertInterval = 1.0

    @Option(help: "Seconds an app launched to continue an activity may take to connect.")
    var launchTimeout = 10.0

    @Option(help: "Seconds a continuation waits for a document in a synced folder to arrive here (sync lag) before it fails (C9).")
    var syncWait = 10.0

    @Option(help: "The least important log lines shown: trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    @Flag(help: "Show no desktop notification of what other devices offer (shown by default where there is a session D-Bus with a notification server).")
    var noNotify = false

    @Flag(help: "Offer no document opened in a synced folder (recently-used.xbel, KDE's RecentDocuments/) and open none continued here (on by default; issue 27).")
    var noRecentDocuments = false

    @Flag(help: "Offer nothing a media player plays (MPRIS on the session D-Bus), continue none here, and pause none (on by default where there is a session bus; issue 27).")
    var noMedia = false

    @Flag(name: .customLong("no-dbus-apps"), help: "Serve no apps on the session D-Bus (org.baton.Agent, for apps in any language; on by default where there is a session bus; issue 28).")
    var noDBusApps = false

    @Flag(
        name: .customLong("relay-streams"),
        help: "Relay every continuation stream through this agent and the other device's, rather than let the two apps hold a TLS connection of their own where both ends can (issue 30; direct by default)."
    )
    var relayStreams = false

    @Flag(help: "Keep a player here playing when its track is continued on another device (by default it pauses, A8, and the other device starts where it stopped; issue 27).")
    var mediaKeepsPlaying = false

    @Option(help: "The command that opens a web page when no app here continues it and no browser extension is connected (E1); the URL is appended; split at spaces.")
    var browserCommand = "xdg-open"

    // Association files over HTTPS (issue 14).
    @Option(
        name: .customLong("resolve"),
        help: ArgumentHelp(
            "Fetch DOMAIN's apple-app-site-association files from ADDRESS:PORT, the certificate still checked for DOMAIN (curl's --connect-to); repeatable.",
            valueName: "domain:port:address"
        )
    )
    var resolve: [ResolveRule] = []

    @Option(
        name: .customLong("cacert"),
        help: ArgumentHelp("A PEM file of CA certificates trusted beside the system's for association files; repeatable. BATON_CACERT adds more (colon-separated).", valueName: "file")
    )
    var caCertificates: [String] = []

    public func validate() throws {
        guard interval >= 0.1 else { throw ValidationError("--interval must be at least 0.1 seconds.") }
        guard (0.01...60).contains(saveDeadline) else { throw ValidationError("--save-deadline must be between 0.01 and 60 seconds.") }
        guard (0.05...60).contains(advertInterval) else { throw ValidationError("--advert-interval must be between 0.05 and 60 seconds.") }
        guard (0.1...300).contains(launchTimeout) else { throw ValidationError("--launch-timeout must be between 0.1 and 300 seconds.") }
        // Beyond a few minutes the person has walked away; 0 fails at once when a document is not here.
        guard (0...600).contains(syncWait) else { throw ValidationError("--sync-wait must be between 0 and 600 seconds.") }
        guard (1...65_535).contains(discoveryPort) else { throw ValidationError("--discovery-port must be a port number.") }
        guard !browserCommand.split(separator: " ").isEmpty else { throw ValidationError("--browser-command must name a program.") }
        for file in caCertificates where !FileManager.default.isReadableFile(atPath: file) {
            throw ValidationError("--cacert \(file): no such file, or it cannot be read.")
        }
    }

    /// Runs the agent in this process until SIGINT or SIGTERM.
    public func runAgent() async throws {
        var configuration = AgentConfiguration(store: state.store)
        configuration.host = host
        configuration.port = port
        configuration.peers = peers.map(\.description)
        configuration.syncInterval = interval
        configuration.discoveryPort = noMulticast ? nil : discoveryPort
        configuration.socketPath = socket
        configuration.saveDeadline = saveDeadline
        configuration.advertInterval = advertInterval
        configuration.launchTimeout = launchTimeout
        configuration.syncWait = syncWait
        configuration.desktopNotifications = !noNotify
        configuration.recentDocuments.isEnabled = !noRecentDocuments
        if noMedia { configuration.media.isEnabled = false }
        if noDBusApps { configuration.dbusApps.isEnabled = false }
        if relayStreams { configuration.streamPath = .relayed }
        if mediaKeepsPlaying { configuration.media.pausesWhenContinued = false }
        configuration.browserCommand = browserCommand.split(separator: " ").map(String.init)
        configuration.associationResolve = resolve
        configuration.associationRootFiles = caCertificates
        if !appFolders.isEmpty {
            configuration.appFolders = appFolders.map { URL(fileURLWithPath: $0) }
        }
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        configuration.logger = Logger(label: "baton.agent")
        let services = try await reportingAgentErrorsAsync { try await Agent.build(configuration) }
        // SIGINT and SIGTERM stop it gracefully: the goodbye of the current activity first (A9).
        do {
            try await services.run(signals: [.sigint, .sigterm], logger: configuration.logger)
        } catch {
            configuration.logger.error("the agent's services stopped: \(error)")
        }
        configuration.logger.info("stopped")
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

extension ResolveRule: ExpressibleByArgument {}
