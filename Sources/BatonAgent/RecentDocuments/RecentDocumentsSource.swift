import BatonActivitySources
import BatonClient
import BatonCore
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Recent documents as activities (issue 27 item 2; B5, B6, C9, A9): the agent's service that watches GTK's
/// `recently-used.xbel` and KDE's `RecentDocuments/` with inotify (GLib replaces the file by a rename, so the folder is
/// watched, never the file, and nothing polls), decides with ``RecentDocuments`` (pure) what is offered, and offers it
/// as the built-in app ``RecentDocumentsApp``, connected to its own agent's app socket as the browser's host connects
/// (issue 14): the broker, the adverts, `baton nearby`, the synced folders' rewriting (C9) and the documents' sync wait
/// are the same as for any app. A document continued here is opened with the application that used it there, or the
/// default one for its type (``DesktopApplications``), by `posix_spawn`, never a shell.
///
/// Holds no agent: its socket path, the synced folders (a closure) and its settings.
final class RecentDocumentsSource: Service, Sendable {
    let settings: RecentDocumentsSettings
    let socketPath: String
    let folders: @Sendable () -> SyncedFolders
    let clock: AgentClock
    let logger: Logger
    let applications: DesktopApplications

    /// What is offered and its state, for the app's answers to saves (C4): a leaf value the reader and the loop share.
    private let offered = NIOLockedValueBox<(activity: UInt64, payload: Data)?>(nil)
    /// Programs started to open documents, reaped as they end (at the next change, within a minute, or at the shutdown).
    private let children = NIOLockedValueBox<Set<pid_t>>([])
    private let stopping = Atomic<Bool>(false)
    /// Rung by the watcher, a program started (so its reaping is scheduled) and the shutdown.
    private let bell = Doorbell()
    /// The last failure logged for each file read, so a damaged file is logged once, not at each change.
    private let lastProblem = NIOLockedValueBox<[String: String]>([:])

    init(settings: RecentDocumentsSettings, socketPath: String, folders: @escaping @Sendable () -> SyncedFolders, clock: AgentClock, logger: Logger) {
        self.settings = settings
        self.socketPath = socketPath
        self.folders = folders
        self.clock = clock
        self.logger = logger
        applications = DesktopApplications(settings: settings)
    }

    func run() async throws {
        let watcher = FolderWatcher { [bell] _ in bell.ring() }
        if watcher == nil { logger.warning("recent documents: no inotify descriptor; documents opened are not offered") }
        let client: AgentClient
        do {
            client = try await AgentClient.connect(path: socketPath, bundleIdentifier: RecentDocumentsApp.bundleIdentifier)
        } catch {
            logger.warning("recent documents: cannot connect to the agent's socket (\(error)); documents opened are not offered")
            watcher?.close()
            return try await gracefulShutdown()
        }
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [self] in
                    for await message in client.messages { received(message, client: client) }
                }
                group.addTask { [self] in
                    await follow(client: client, watcher: watcher)
                }
            }
        } onGracefulShutdown: { [self] in
            stopping.store(true, ordering: .relaxed)
            bell.ring()
        }
        watcher?.close()
        reap()
    }

    /// The loop: each change of the watched folders lists the documents again and does what the machine says.
    private func follow(client: AgentClient, watcher: FolderWatcher?) async {
        var machine = RecentDocuments(freshness: UInt64(max(0, settings.freshness) * 1000))
        bell.ring()
        while !stopping.load(ordering: .relaxed), !Task.isCancelled {
            // The data folder (the xbel is replaced in it), or, until it is made, the nearest folder above it that
            // exists (a new account's ~/.local/share comes with the first program that records a document); and KDE's
            // folder once it exists.
            var watched: Set<String> = [FileStatus.nearestFolder(settings.dataHome)]
            if FileStatus(path: settings.kdeRecentFolder)?.kind == .directory { watched.insert(settings.kdeRecentFolder) }
            watcher?.replaceWatches(watched)
            if let action = machine.listed(candidates(), folders: folders(), now: clock.wall()) { perform(action, client: client) }
            reap()
            // A program opened here that still runs is looked at again within a minute, as the app socket's reaper
            // does (its SIGCHLD is the reaper's, for the programs it started): no zombie stays longer.
            let running = !children.withLockedValue(\.isEmpty)
            await bell.wait(timeout: running ? .seconds(60) : nil, clock: clock)
        }
        if let action = machine.stop() { perform(action, client: client) }
        // Closing the connection ends the app for the broker: nothing of it stays current (A9).
        client.close()
    }

    private func perform(_ action: RecentDocuments.Action, client: AgentClient) {
        switch action {
        case .offer(let offer):
            let title = title(of: offer)
            do {
                let payload = try RecentDocumentsApp.payload(offer, title: title)
                offered.withLockedValue { $0 = (offer.activity, payload) }
                // The application and type: the other device names the application that will open it (issue 27 item 3).
                let notice = ActivityNotice(
                    activityType: RecentDocumentsApp.activityType, title: title, desktopEntry: offer.application, mimeType: offer.mimeType
                )
                client.send(.becomeCurrent(activity: offer.activity, notice))
                logger.info("recent documents: offering \(Agent.logLine(offer.path)) (folder \(offer.folder))")
            } catch {
                logger.warning("recent documents: \(Agent.logLine(offer.path)) cannot be offered: \(error)")
            }
        case .withdraw(let activity):
            offered.withLockedValue { $0 = nil }
            client.send(.resignCurrent(activity: activity))
            logger.info("recent documents: no longer offered")
        }
    }

    /// "report.odt — LibreOffice Writer": the file's name and the application's `Name`, when its desktop file is here.
    func title(of offer: RecentDocuments.Offer) -> String {
        let name = offer.path.split(separator: "/").last.map(String.init) ?? offer.path
        guard let id = offer.application, let application = applications.entry(id: id) else { return name }
        return "\(name) — \(application.entry.name)"
    }

    /// What the agent says to the app: a save asked (C4), a continuation delivered (B6).
    private func received(_ message: IPCMessage, client: AgentClient) {
        switch message {
        case .save(let request, let activity, _):
            if let current = offered.withLockedValue({ $0 }), current.activity == activity {
                client.send(.saved(request: request, payload: current.payload))
            } else {
                client.send(.saveFailed(request: request, message: "that document is no longer the one offered"))
            }
        case .notCurrent:
            // Who wins (A9; issue 27 item 3): another app's activity took over. Nothing to do: only a newer use of a
            // document (opened or saved again, ``RecentDocuments/listed(_:folders:now:)``) offers it again.
            logger.debug("recent documents: the document offered is no longer this device's current activity")
        case .deliver(_, let payload):
            open(payload)
        case .failed(_, _, let reason, let text):
            logger.info("recent documents: a continuation failed (\(reason)): \(Agent.logLine(text))")
        default:
            break
        }
    }

    /// Opens a document continued here (B6) with the application that used it there, or the default one for its
    /// type; the file URL is already this device's (the agent rewrote it from its synced folder, C9).
    func open(_ payload: Data) {
        guard let continued = RecentDocumentsApp.continued(payload) else {
            return logger.warning("recent documents: a continued state names no document here; nothing opened")
        }
        let path = continued.url.path(percentEncoded: false)
        guard folders().folder(containing: path) != nil else {
            return logger.warning("recent documents: \(Agent.logLine(path)) is in no synced folder here; not opened (C9)")
        }
        guard let application = applications.application(preferred: continued.application, mimeType: continued.mimeType) else {
            let wanted = [continued.application, continued.mimeType.map { "a default application for \($0)" }].compactMap { $0 }
            return logger.warning("recent documents: nothing here opens \(Agent.logLine(path)) (no \(wanted.joined(separator: " nor ")))")
        }
        do {
            for command in try applications.commands(opening: continued.url, with: application) {
                let pid = try Launcher.spawn(command.program, arguments: command.arguments, environment: settings.environment)
                children.withLockedValue { _ = $0.insert(pid) }
                bell.ring()
                logger.info("recent documents: opened \(Agent.logLine(path)) with \(application.id) (pid \(pid))")
            }
        } catch {
            logger.warning("recent documents: \(Agent.logLine(path)) not opened: \(error)")
        }
    }

    /// Reaps the programs started here that have ended.
    private func reap() {
        children.withLockedValue { $0 = $0.filter(Launcher.isRunning) }
    }

    // MARK: Reading the sources

    /// Every document the sources list now, as candidates: unreadable or refused entries left out.
    func candidates() -> [RecentDocuments.Candidate] {
        gtkCandidates() + kdeCandidates()
    }

    private func gtkCandidates() -> [RecentDocuments.Candidate] {
        let file = settings.recentlyUsedFile
        guard FileStatus(path: file) != nil else { return [] }
        let entries: [RecentlyUsedEntry]
        do {
            guard let data = DesktopApplications.read(file, maximumBytes: RecentlyUsedReader.Limits.default.maximumBytes) else {
                throw ActivitySourceError(.tooLarge, "not a regular file of at most \(RecentlyUsedReader.Limits.default.maximumBytes) bytes")
            }
            entries = try RecentlyUsedReader.read(data)
            problem(nil, in: file)
        } catch {
            problem("\(error)", in: file)
            return []
        }
        return entries.compactMap { entry in
            guard !entry.isPrivate, let url = try? entry.activityURL(), url.scheme == .file, let used = entry.lastUsed else { return nil }
            var application: String?
            if let last = entry.lastApplication {
                // Baton never runs this command line, but one written to chain or expand commands is no application's:
                // the entry is refused, with its document (issue 27 item 4).
                guard !Self.hasShellSyntax(last.exec) else { return nil }
                application = [last.name, Self.programName(last.exec)].first { DesktopEntry.isValidID($0) && applications.entry(id: $0) != nil }
            }
            return RecentDocuments.Candidate(url: url, application: application, mimeType: entry.mimeType, lastUsed: Self.milliseconds(used))
        }
    }

    /// Whether an application's recorded command line holds shell syntax that chains, redirects, substitutes or
    /// expands (`;`, `|`, `&`, `$`, a backquote, `<`, `>`, parentheses, a newline). Quotes alone are not: apps record
    /// their program quoted as GLib quotes (`'soffice' --writer %u`), which the desktop-entry rules (``ExecLine``) would
    /// refuse, and a LibreOffice document must still be offered.
    static func hasShellSyntax(_ exec: String) -> Bool {
        exec.contains { ";|&$`<>()\n\r".contains($0) }
    }

    /// The program's file name in a recorded command line, its quotes dropped (`'/usr/bin/soffice'` → `soffice`).
    static func programName(_ exec: String) -> String {
        let first = exec.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map { $0.filter { $0 != "'" && $0 != "\"" } } ?? ""
        return first.split(separator: "/").last.map(String.init) ?? ""
    }

    /// The most KDE recent documents read (KDE keeps about 10).
    static let maximumKDEDocuments = 256

    private func kdeCandidates() -> [RecentDocuments.Candidate] {
        let folder = settings.kdeRecentFolder
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
        return names.filter { $0.hasSuffix(".desktop") }.sorted().prefix(Self.maximumKDEDocuments).compactMap { name in
            let file = folder + "/" + name
            guard let status = FileStatus(path: file), let data = DesktopApplications.read(file),
                let document = try? KDERecentDocument(data, home: settings.home), document.url.scheme == .file
            else { return nil }
            let application = document.lastOpenedWith.flatMap { applications.entry(id: $0) != nil ? $0 : nil }
            return RecentDocuments.Candidate(url: document.url, application: application, mimeType: nil, lastUsed: UInt64(max(0, status.modified / 1_000_000)))
        }
    }

    /// Logs a file's failure once, until it changes or the file reads again.
    private func problem(_ text: String?, in file: String) {
        let changed = lastProblem.withLockedValue { problems -> Bool in
            defer { problems[file] = text }
            return problems[file] != text
        }
        if changed, let text { logger.warning("recent documents: \(file) not read: \(Agent.logLine(text)); nothing of it is offered") }
    }

    static func milliseconds(_ date: Date) -> UInt64 {
        let value = date.timeIntervalSince1970 * 1000
        return value.isFinite && value > 0 ? UInt64(min(value, 1e15)) : 0
    }
}
