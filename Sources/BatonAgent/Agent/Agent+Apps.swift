import BatonCore
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

extension Agent: IPCHandler {
    func ipcReceived(_ message: IPCMessage, on connection: IPCConnection) {
        let who = connection.identity.withLockedValue { $0 }
        guard let who else {
            switch message {
            case .hello(let bundle, let version, let readsNotCurrent):
                return hello(bundle: bundle, version: version, readsNotCurrent: readsNotCurrent, on: connection)
            case .openStream(let bundle, let version, let continuation, let direct):
                // F2: the continuing app's connection for a stream.
                guard admitted(bundle: bundle, version: version, on: connection) != nil else { return }
                return handoff.openStream(continuation: continuation, bundle: bundle, direct: direct, on: connection)
            case .acceptStream(let bundle, let version, let token, let direct):
                // F3: the originating app's connection for a stream announced to it.
                guard admitted(bundle: bundle, version: version, on: connection) != nil else { return }
                return handoff.acceptStream(token: token, bundle: bundle, direct: direct, on: connection)
            default:
                return connection.refuse(.protocolViolation, "say hello first")
            }
        }
        switch (who, message) {
        case (.app(let bundle, let team), .becomeCurrent(let activity, let notice, let isUpdate)):
            handoff.becomeCurrent(app: connection.appID, bundle: bundle, team: team, activity: activity, notice: notice, isUpdate: isUpdate)
        case (.app, .resignCurrent(let activity)):
            handoff.resign(app: connection.appID, activity: activity)
        case (.app, .invalidate(let activity)):
            handoff.streamActivityInvalidated(app: connection.appID, activity: activity)
            handoff.resign(app: connection.appID, activity: activity)
        case (.app(let bundle, _), .declineStream(let token, let text)):
            handoff.streamDeclined(token: token, bundle: bundle, message: text)
        case (.app, .saved(let request, let payload)):
            handoff.saved(request, from: connection.appID, payload: payload)
        case (.app, .saveFailed(let request, let text)):
            handoff.saveFailed(request, from: connection.appID, text: text)
        case (.control, .listNearby(let request)):
            appWork.start { [self] in connection.send(.nearby(request: request, await nearbyItems(describe: true))) }
        case (.control, .continueNearby(let request, let device)):
            appWork.start { [self] in connection.send(.continueResult(request: request, await continueNearby(device: device))) }
        case (.control, .watchNearby):
            handoff.watch(connection)
            appWork.start { [self] in connection.send(.nearbyChanged(await nearbyItems(describe: true))) }
        case (.control, .listApps(let request)):
            connection.send(.apps(request: request, appListing()))
        case (.control, .getStatus(let request)):
            connection.send(.status(request: request, status()))
        case (.app(let bundle, _), .index(let activity, let payload)):
            search.save(payload, activity: activity, bundle: bundle, app: connection.appID.value)
        case (.app(let bundle, _), .deleteSaved(let request, let identifiers)):
            deleteSaved(request, identifiers: identifiers, bundle: bundle, on: connection)
        case (.control, .continueSaved(let request, let id)):
            appWork.start { [self] in connection.send(.continueResult(request: request, await continueSaved(id: id))) }
        default:
            connection.refuse(.protocolViolation, "that message is not allowed for this client")
        }
    }

    func ipcClosed(_ connection: IPCConnection) {
        var bundle: String?
        if case .app(let app, _) = connection.identity.withLockedValue({ $0 }) {
            bundle = app
            search.forget(app: connection.appID.value)
        }
        // Its streams and fetches fail and its current activity goes (A9): nobody can give their state any more.
        handoff.appClosed(connection, bundle: bundle)
    }

    /// Checks who the peer process is (ISSUE 5 part 6): same user, and for an app, the registered bundle's
    /// executable, as `/proc/PID/exe` shows it. An app can then only publish under its own bundle and team.
    func hello(bundle: String?, version: Int, readsNotCurrent: Bool = false, on connection: IPCConnection) {
        guard let bundle else {
            guard version == IPCMessage.version else {
                return connection.refuse(.unsupportedVersion, "this agent speaks IPC version \(IPCMessage.version), the client \(version)")
            }
            let credentials = connection.credentials
            guard credentials.uid == getuid() else {
                return connection.refuse(.notPermitted, "process \(credentials.pid) belongs to user \(credentials.uid), this agent to \(getuid())")
            }
            connection.identify(.control)
            return connection.send(.welcome(device: identity.id.description, deviceName: identity.name))
        }
        guard let team = admitted(bundle: bundle, version: version, on: connection) else { return }
        let credentials = connection.credentials
        // A live app is never silently replaced by a second connection (the coordinator keeps the apps connected).
        if let previous = handoff.claim(bundle, for: connection, readsNotCurrent: readsNotCurrent) {
            return connection.refuse(
                .alreadyConnected,
                "\(bundle) is already connected to this agent (pid \(previous.process.pid)); quit it first, one process per app"
            )
        }
        connection.identify(.app(bundle: bundle, team: team))
        connection.send(.welcome(device: identity.id.description, deviceName: identity.name))
        log("app \(bundle) connected (pid \(credentials.pid))")
        // The broker hears that the app connected: continuations waiting for its launch go on.
        handoff.appConnected(connection.appID, bundle: bundle)
    }

    /// The checks of a hello naming an app (its main connection's or a stream's), in order: IPC version, the
    /// peer's user, a registered app with a team, and the process running that app's executable, unchanged since
    /// it connected. Returns the app's team, or nil after refusing the connection with the first failure.
    func admitted(bundle: String, version: Int, on connection: IPCConnection) -> String? {
        guard version == IPCMessage.version else {
            connection.refuse(.unsupportedVersion, "this agent speaks IPC version \(IPCMessage.version), the client \(version)")
            return nil
        }
        let credentials = connection.credentials
        guard credentials.uid == getuid() else {
            connection.refuse(.notPermitted, "process \(credentials.pid) belongs to user \(credentials.uid), this agent to \(getuid())")
            return nil
        }
        guard let app = registry.app(bundleIdentifier: bundle) else {
            connection.refuse(.unknownApp, "no registered app has the bundle identifier \(bundle) (see `baton apps list`)")
            return nil
        }
        guard app.isIdentityResolved, let team = app.teamIdentifier else {
            connection.refuse(.unknownApp, "\(bundle) has no resolved identity or team, so it cannot hand off (see `baton apps inspect`)")
            return nil
        }
        // The agent's own sources (issue 27) connect as their built-in apps from the agent's process alone.
        let inProcess = (configuration.trustsThisProcess || Agent.inAgentApps.contains(bundle)) && credentials.pid == getpid()
        if !inProcess {
            // Issue 28 item 3: the app's program (a script's interpreter and the script, or a Flatpak app's id), read
            // from /proc at once with the start time.
            let program = app.executableURL.map { AppProgram.of($0, searchPath: DesktopAppLoader.programSearchPath()) }
            let image = ProcessImage.of(credentials.pid)
            // At the descriptor limit `/proc` cannot be read: say so, not that the app is an impostor (issue 25 item 7).
            if program != nil, image?.executable == nil || connection.process.startTime == nil, Launcher.descriptorsExhausted() {
                log("\(bundle) (pid \(credentials.pid)) cannot be checked: \(Launcher.tooManyOpenFiles)")
                connection.refuse(.launchFailed, "cannot launch \(bundle): \(Launcher.tooManyOpenFiles)")
                // The continuations waiting for this app fail now, naming the cause, not at their deadline.
                handoff.launchedAppEnded(bundle, message: "cannot launch \(bundle): \(Launcher.tooManyOpenFiles)")
                return nil
            }
            guard let image else {
                connection.refuse(.notPermitted, "process \(credentials.pid) has ended; it cannot be checked as \(bundle)")
                return nil
            }
            if let refusal = image.refusal(as: bundle, program: program, flatpakID: app.flatpakID) {
                connection.refuse(.notPermitted, refusal)
                return nil
            }
            // ISSUE 10 item 4: the process that connected must be the one that says hello, unchanged: same start time
            // (not a recycled pid), and the same executable already when the connection was accepted (a process that
            // connects and then execs the app's binary, handing the socket to a child, is refused).
            guard connection.process.startTime != nil, image.startTime == connection.process.startTime,
                connection.process.executable == image.executable
            else {
                connection.refuse(
                    .notPermitted,
                    "process \(credentials.pid) ran \(connection.process.executable ?? "an unknown executable") when it connected, not \(bundle)'s \(program?.described ?? "program")"
                )
                return nil
            }
            // Issue 25 item 8: and it alone holds the connection (not a child it handed the socket to before an exec).
            if let refusal = heldElsewhere(connection) {
                log("\(bundle) (pid \(credentials.pid)) refused: \(refusal)")
                connection.refuse(.notPermitted, refusal)
                return nil
            }
        }
        return team
    }

    /// Whether the process behind an app's connection is still the one that said hello, running the app's
    /// executable (ISSUE 10 item 4: checked again before state is delivered to it).
    func isStillTheApp(_ connection: IPCConnection) -> Bool {
        guard case .app(let bundle, _) = connection.identity.withLockedValue({ $0 }) else { return false }
        if configuration.trustsThisProcess || Agent.inAgentApps.contains(bundle), connection.process.pid == getpid() { return true }
        guard let app = registry.app(bundleIdentifier: bundle) else { return false }
        // Issue 28 item 3: the same checks as the hello's, on the process read again now (a script's interpreter and
        // its command line, or its Flatpak app id), with the start time it had when it connected.
        let program = app.executableURL.map { AppProgram.of($0, searchPath: DesktopAppLoader.programSearchPath()) }
        guard let image = ProcessImage.of(connection.process.pid), image.startTime == connection.process.startTime,
            image.executable == connection.process.executable, image.refusal(as: bundle, program: program, flatpakID: app.flatpakID) == nil
        else { return false }
        // Issue 25 item 8: and no other process has come to hold its connection since the hello.
        return heldElsewhere(connection) == nil
    }

    // MARK: Launching

    /// The app socket service (issue 26 item 1): it runs the command lines' work (``appWork``), reaps the programs
    /// started here as they end and closes `socket` and the app folders' watcher at shutdown; it reaches the handoff
    /// coordinator, which keeps the programs launched, only through the closures here.
    func appSocketService(socket: AppSocketService.Socket) -> AppSocketService {
        AppSocketService(
            work: appWork,
            socket: socket,
            watcher: watcher,
            childrenRunning: { [handoff] in handoff.childrenMayRun },
            reap: { [handoff] in handoff.reapChildren() },
            clock: clock
        )
    }

    /// The app socket `listener` listens at, with its path and the file naming it (removed with it).
    func appSocket(_ listener: AppListener?) -> AppSocketService.Socket {
        AppSocketService.Socket(listener: listener, path: socketPath, nameFile: store.folder.appendingPathComponent("agent-socket"))
    }
}
