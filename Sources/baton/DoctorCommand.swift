import ArgumentParser
import BatonAgent
import BatonAgentCommand
import BatonClient
import BatonCore
import BatonNotifications
import BatonProtocol
import BatonRegistry
import Foundation
import NIOCore
import NIOPosix

/// `baton doctor`: checks this device the way a person would ask "why does it not work here?" (issue 16 part 1):
/// each check says ok, warn or FAIL, and what to do.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check this device: account, agent, socket, multicast, desktop notifications, peers and apps, each with what to do.",
        discussion: """
            Exits 1 when a check fails (the device cannot hand off as it is); warnings are things that limit it \
            (no other device paired, no interface that can multicast, a peer not answering, an app that does not load). \
            While the agent answers, the apps and multicast checks report what it sees and does (its --apps folders, \
            --no-multicast); --apps-path and the usual folders are read only when it does not.
            """
    )

    @OptionGroup var state: StateOptions
    @OptionGroup var apps: AppSearchOptions

    @Option(help: "Seconds to wait for the agent and for each peer.")
    var timeout = 2.0

    @Flag(help: "Print the checks as JSON.")
    var json = false

    /// One check's result.
    struct Check {
        enum Level: String { case ok, warn, fail = "FAIL" }
        var name: String
        var level: Level
        var detail: String
        var advice: String = ""
    }

    func run() async throws {
        var checks: [Check] = []
        let store = state.store
        // The account.
        let identity = try? store.identity()
        let roster = try? store.roster()
        if let identity, let roster {
            checks.append(Check(name: "identity", level: .ok, detail: "this device is \(identity.name) (\(identity.id.short)) in \(store.folder.path)"))
            let others = roster.activeMembers.filter { $0.id != identity.id }
            checks.append(
                others.isEmpty
                    ? Check(name: "account", level: .warn, detail: "no other device in the account", advice: "pair one: `baton pair` on each, or `baton invite` / `baton join`")
                    : Check(name: "account", level: .ok, detail: "\(others.count) other device\(others.count == 1 ? "" : "s"): \(others.map(\.name).joined(separator: ", "))")
            )
        } else {
            checks.append(Check(name: "identity", level: .fail, detail: "no identity in \(store.folder.path)", advice: "run `baton init --name NAME`"))
        }
        // The agent and its socket.
        let socket = AgentClient.socketPath(stateFolder: store.folder)
        checks.append(Self.socketCheck(socket))
        // What the running agent sees and does, when it answers: the apps and multicast checks report the agent's own
        // view (issue 24 part 7: read here with this command's search paths, an agent started with `--apps` or
        // `--no-multicast` was reported as seeing 1 app and then "0 apps installed", and as multicasting).
        var agentApps: [AppListing]?
        var agentStatus: AgentStatus?
        do {
            let client = try await AgentClient.connect(path: socket, bundleIdentifier: nil, timeout: timeout)
            defer { client.close() }
            client.send(.listApps(request: 1))
            let listed = try await awaitReply(client) { if case .apps(1, let apps) = $0 { apps } else { nil } }
            agentApps = listed
            // An agent older than this command refuses the question: its multicast is then not known, and said so.
            client.send(.getStatus(request: 2))
            agentStatus = try? await awaitReply(client) { if case .status(2, let status) = $0 { status } else { nil } }
            let installed = Self.installed(listed).count
            checks.append(Check(name: "agent", level: .ok, detail: "the agent answers at \(socket) and sees \(installed) installed app\(installed == 1 ? "" : "s")"))
        } catch {
            checks.append(
                Check(
                    name: "agent", level: .fail, detail: "\(error)",
                    advice: "start it: `systemctl --user start baton-agent` (after scripts/install.sh), or `baton agent`"
                )
            )
        }
        checks.append(Self.multicastCheck(agent: agentStatus, agentAnswered: agentApps != nil))
        if agentApps != nil { checks.append(Self.streamsCheck(agentStatus)) }
        checks.append(await Self.notificationsCheck())
        if let identity { checks += await peerChecks(store: store, me: identity.id) }
        checks += Self.folderChecks(store)
        checks += agentApps.map { Self.appChecks(listed: $0, folders: agentStatus?.appFolders) } ?? appChecks()
        report(checks)
        if checks.contains(where: { $0.level == .fail }) { throw ExitCode(1) }
    }

    /// How the running agent's continuation streams go (issue 30): direct between the apps where both ends can, or
    /// all relayed through the agents.
    static func streamsCheck(_ status: AgentStatus?) -> Check {
        guard let said = status?.streamPath else {
            return Check(
                name: "streams", level: .ok,
                detail: "the agent does not say how its continuation streams go (older than direct streams): they are relayed"
            )
        }
        switch StreamPath(rawValue: said) {
        case .direct:
            return Check(
                name: "streams", level: .ok,
                detail: "continuation streams go direct between the two apps where both ends can (mutual TLS of their own), else through the agents"
            )
        case .relayed:
            return Check(
                name: "streams", level: .ok,
                detail: "continuation streams are relayed through the agents (the agent runs with --relay-streams); without it they go direct, faster"
            )
        case nil:
            return Check(name: "streams", level: .ok, detail: "continuation streams go \(said) (a path this command does not know)")
        }
    }

    /// The socket's folder must be this user's alone (ISSUE 10 item 3): another user could otherwise replace it.
    static func socketCheck(_ socket: String) -> Check {
        let folder = (socket as NSString).deletingLastPathComponent
        var status = stat()
        guard stat(folder, &status) == 0 else {
            return Check(name: "socket", level: .warn, detail: "\(folder) does not exist yet", advice: "the agent makes it when it starts")
        }
        if status.st_uid != getuid() || status.st_mode & 0o077 != 0 {
            return Check(
                name: "socket", level: .fail,
                detail: "\(folder) is owned by user \(status.st_uid) with mode \(String(status.st_mode & 0o777, radix: 8))",
                advice: "it must be yours with mode 700: remove it and start the agent again"
            )
        }
        return Check(name: "socket", level: .ok, detail: "\(folder) is yours alone (mode 700)")
    }

    /// Multicast as the running agent does it (its `status`), and which interfaces here can carry the adverts' multicast
    /// (the agent's own rule: IPv4, or IPv6 link-local). "ok" is never said for an agent that does not multicast.
    static func multicastCheck(agent status: AgentStatus?, agentAnswered: Bool) -> Check {
        if let status, !status.multicast {
            return status.multicastDisabled
                ? Check(
                    name: "multicast", level: .ok,
                    detail: "the agent runs with --no-multicast: only unicast to known peers (and each --peer)",
                    advice: "a device it does not know yet is found only if given as `--peer HOST:PORT`"
                )
                : Check(
                    name: "multicast", level: .warn, detail: "the agent could open no multicast socket: only unicast to known peers (and each --peer)",
                    advice: "its log says why; give it `--peer HOST:PORT` meanwhile"
                )
        }
        let interfaces = multicastInterfaces()
        guard !interfaces.isEmpty else {
            return Check(
                name: "multicast", level: .warn, detail: "no interface here can multicast",
                advice: "devices find each other only by unicast: give the agent `--peer HOST:PORT`"
            )
        }
        let list = interfaces.joined(separator: ", ")
        if status != nil { return Check(name: "multicast", level: .ok, detail: "the agent multicasts its adverts; they can go out on \(list)") }
        let who = agentAnswered ? "the agent did not say whether it multicasts (an older agent)" : "the agent is not running"
        return Check(name: "multicast", level: .ok, detail: "adverts can go out on \(list) (\(who))")
    }

    /// The interfaces that can carry the adverts' multicast, with the families on each ("eth0 (IPv4, IPv6)").
    static func multicastInterfaces() -> [String] {
        var names: [String: Set<String>] = [:]
        for device in (try? System.enumerateDevices()) ?? [] where device.multicastSupported {
            switch device.address {
            case .v4(let address) where !(address.host.hasPrefix("127.")):
                names[device.name, default: []].insert("IPv4")
            case .v6(let address) where address.address.sin6_scope_id != 0 && device.interfaceIndex > 0:
                names[device.name, default: []].insert("IPv6")
            default:
                continue
            }
        }
        return names.keys.sorted().map { "\($0) (\(names[$0, default: []].sorted().joined(separator: ", ")))" }
    }

    /// Desktop notifications of what is nearby (issue 16 part 2): the session bus the agent would use, and the
    /// notification server on it. No bus is fine (a server, a container); a bus without a server is worth a word.
    static func notificationsCheck() async -> Check {
        let environment = ProcessInfo.processInfo.environment
        guard let address = NotificationServer.sessionBusAddress(environment: environment, exists: { FileManager.default.fileExists(atPath: $0) })
        else {
            return Check(name: "notifications", level: .ok, detail: "no session bus here: offers are not shown on a desktop (`baton nearby` lists them)")
        }
        if let why = NotificationServer.libraryUnavailable() {
            return Check(name: "notifications", level: .warn, detail: why, advice: "apt-get install libsystemd0 (then restart the agent); `baton nearby` lists offers meanwhile")
        }
        // sd-bus blocks: ask on a thread of its own, not on Swift's cooperative pool.
        let found: Result<NotificationServer?, NotificationBusError> = await withCheckedContinuation { waiter in
            Thread.detachNewThread { waiter.resume(returning: Result { () throws(NotificationBusError) in try NotificationServer.find(onBusAt: address) }) }
        }
        switch found {
        case .success(let server?):
            return Check(name: "notifications", level: .ok, detail: "offers are shown by \(server.name) (\(server.vendor) \(server.version)) on the session bus")
        case .success(nil):
            return Check(
                name: "notifications", level: .warn, detail: "no notification server on the session bus at \(address)",
                advice: "start one (the desktop's own, dunst, mako, xfce4-notifyd); `baton nearby` lists offers meanwhile"
            )
        case .failure(let error):
            return Check(name: "notifications", level: .warn, detail: error.message, advice: "is DBUS_SESSION_BUS_ADDRESS right? `baton agent --no-notify` stops trying")
        }
    }

    /// Each paired device whose address is known: does its agent accept a TCP connection?
    func peerChecks(store: AccountStore, me: DeviceID) async -> [Check] {
        guard let peers = try? store.peers(), let roster = try? store.roster() else { return [] }
        var checks: [Check] = []
        for member in roster.activeMembers where member.id != me {
            guard let address = peers[member.id]?.address, let (host, port) = Agent.splitHostPort(address) else {
                checks.append(Check(name: "peer \(member.name)", level: .warn, detail: "no address known yet", advice: "it is learnt from its adverts or a sync"))
                continue
            }
            do {
                let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(.milliseconds(Int64(timeout * 1000)))
                    .connect(host: host, port: port).get()
                try? await channel.close()
                checks.append(Check(name: "peer \(member.name)", level: .ok, detail: "its agent accepts connections at \(address)"))
            } catch {
                checks.append(
                    Check(
                        name: "peer \(member.name)", level: .warn, detail: "nothing answers at \(address) (\(error))",
                        advice: "is it on, on this network, with its agent running? a firewall must let TCP and UDP 47810 through"
                    )
                )
            }
        }
        return checks
    }

    /// The synced folders (C9): a named folder that is missing here makes every document in it fail to continue.
    static func folderChecks(_ store: AccountStore) -> [Check] {
        let folders: SyncedFolders
        do {
            folders = try store.syncedFolders()
        } catch {
            return [Check(name: "folders", level: .warn, detail: "\(error)", advice: "name them again with `baton folders add NAME PATH` (the file is rewritten)")]
        }
        guard !folders.isEmpty else {
            return [
                Check(
                    name: "folders", level: .ok, detail: "no synced folders named: documents continue only where their path is the same",
                    advice: "`baton folders add NAME PATH`, or `baton folders syncthing`, on each device with the same names"
                )
            ]
        }
        return folders.folders.map { folder in
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder), isFolder.boolValue else {
                return Check(
                    name: "folder \(folder.id)", level: .warn, detail: "\(folder.path) is not a folder here",
                    advice: "documents in it fail to continue (documentNotSynced): `baton folders add \(folder.id) PATH` with where it is now"
                )
            }
            return Check(name: "folder \(folder.id)", level: .ok, detail: folder.path)
        }
    }

    /// The apps the agent lists that are installed bundles: not its built-in apps (the browser, issue 14; recent
    /// documents, issue 27), not a bundle that did not load (listed without a bundle identifier).
    static func installed(_ listed: [AppListing]) -> [AppListing] {
        let builtIn: Set = [BuiltInBrowser.bundleIdentifier, RecentDocumentsApp.bundleIdentifier]
        return listed.filter { !$0.bundle.isEmpty && !builtIn.contains($0.bundle) }
    }

    /// The installed apps as the running agent sees them (what it launches and routes to), and every bundle that did
    /// not load with why: the same count as the agent check, whatever this command's own search paths.
    static func appChecks(listed: [AppListing], folders: [String]?) -> [Check] {
        let apps = installed(listed)
        let from = folders.map { $0.isEmpty ? "" : " (the agent reads \($0.joined(separator: ", ")))" } ?? ""
        let desktop = apps.filter { $0.kind == AppRecord.Kind.desktopFile.rawValue }.count
        var checks = [Check(name: "apps", level: .ok, detail: "\(apps.count) app\(apps.count == 1 ? "" : "s") installed\(byDesktopFile(desktop))\(from)")]
        for app in apps where !app.problem.isEmpty {
            checks.append(Check(name: "app \(app.bundle)", level: .warn, detail: "\(app.name): \(app.problem)", advice: "`baton apps inspect` on its bundle says which key"))
        }
        for problem in listed where problem.bundle.isEmpty {
            checks.append(Check(name: "app", level: .warn, detail: problem.problem, advice: problemAdvice(desktopFile: problem.kind == AppRecord.Kind.desktopFile.rawValue)))
        }
        return checks
    }

    /// What to do about a bundle or desktop file that did not load.
    static func problemAdvice(desktopFile: Bool) -> String {
        desktopFile
            ? "fix the desktop file, or remove it; `baton apps inspect FILE.desktop` says which key"
            : "fix the bundle, or remove it; `baton plist lint` checks an Info.plist"
    }

    /// How many of the apps counted are registered by desktop file (issue 28 item 2), when any are.
    static func byDesktopFile(_ count: Int) -> String {
        count == 0 ? "" : ", \(count) of them by desktop file"
    }

    /// The installed apps read from the folders here (the agent is not running), and every bundle that did not load
    /// with why.
    func appChecks() -> [Check] {
        let registry = apps.registry()
        let from = " (read from \(apps.searchPaths.map(\.path).joined(separator: ", ")); the agent is not running)"
        let desktop = registry.apps.filter { $0.kind == .desktopFile }.count
        var checks = [
            Check(name: "apps", level: .ok, detail: "\(registry.apps.count) app\(registry.apps.count == 1 ? "" : "s") installed\(Self.byDesktopFile(desktop))\(from)")
        ]
        for app in registry.apps where !app.isIdentityResolved || app.teamIdentifier == nil || app.executableURL == nil {
            let what = app.executableURL == nil ? "has no executable to launch" : "has no resolved team identity: it continues nothing"
            checks.append(Check(name: "app \(app.bundleIdentifier)", level: .warn, detail: "\(app.bundleURL.path) \(what)", advice: "`baton apps inspect \(app.bundleURL.path)` says which key"))
        }
        for problem in registry.problems {
            checks.append(Check(name: "app", level: .warn, detail: problem.description, advice: Self.problemAdvice(desktopFile: problem.path.hasSuffix(".desktop"))))
        }
        return checks
    }

    func report(_ checks: [Check]) {
        if json {
            return printJSON(["checks": checks.map { ["name": $0.name, "level": $0.level.rawValue, "detail": $0.detail, "advice": $0.advice] }])
        }
        for check in checks {
            say("\(check.level.rawValue.padding(toLength: 4, withPad: " ", startingAt: 0))  \(check.name): \(check.detail)")
            if !check.advice.isEmpty { say("      → \(check.advice)") }
        }
    }
}
