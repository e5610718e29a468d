import Baton
import BatonAgent
import BatonCore
import Foundation
import Synchronization

/// A web page as this device's current activity, published as the built-in browser app `org.baton.browser`
/// (issue 14): what `baton browse` and `baton browser-host` share. An `NSUserActivityTypeBrowsingWeb` activity per
/// page shown (URL and title), with an empty `userInfo`.
@MainActor
final class BrowserPage {
    let application = BatonApplication()
    let socketPath: String
    private var activity: UserActivity?
    private let log: (String) -> Void
    /// Whether a failed connection was already reported (reconnecting says so once, not every second).
    private var reportedOffline = false
    /// Whether the page stopped being current because the browser lost focus here (``resign()``), rather than
    /// because another app's activity took over (issue 27 item 3).
    private var resigned = false

    /// A page publisher for the agent at `socketPath` (``socketPath(for:)``).
    init(socketPath: String, log: @escaping (String) -> Void) {
        self.socketPath = socketPath
        self.log = log
    }

    /// The agent socket of `state`: its announced socket, or `BATON_AGENT_SOCKET` when no `--state` was given and
    /// that is set.
    nonisolated static func socketPath(for state: StateOptions) -> String {
        let environment = ProcessInfo.processInfo.environment
        if state.folder == nil, let socket = environment["BATON_AGENT_SOCKET"], !socket.isEmpty { return socket }
        return AgentClient.socketPath(stateFolder: state.store.folder)
    }

    /// Connects as `org.baton.browser`.
    /// - Throws: the library's error when no agent answers or it refuses this process.
    func connect() async throws {
        try await application.connect(bundleIdentifier: BuiltInBrowser.bundleIdentifier, socketPath: socketPath)
        reportedOffline = false
    }

    /// Connects if not connected; says why not once. Returns whether it is connected.
    func reconnect() async -> Bool {
        guard !application.isConnected else { return true }
        do {
            try await connect()
            log("connected to the agent of \(application.deviceName ?? "this device")")
        } catch {
            if !reportedOffline { log("cannot reach this device's agent (trying again every second): \(error)") }
            reportedOffline = true
        }
        return application.isConnected
    }

    /// Makes `url` with `title` the current activity (A9). Another page, or a new title, is a new activity: the
    /// agent numbers an activity once (its advert sequence) and other devices ask for its title once per number, so
    /// an activity changed in place would go on showing its first title there. Who wins (issue 27 item 3): the same
    /// page retitling itself after another app's activity took over, while the browser kept focus, is no person's
    /// doing and does not take current back; a tab switch, or focus coming back after a resign, does.
    func show(_ url: URL, title: String) throws {
        if let shown = activity, shown.webpageURL == url, shown.title == title {
            if !shown.isCurrent { becomeCurrent(shown) }
            return
        }
        let superseded = activity.map { $0.webpageURL == url && !$0.isCurrent && !resigned } ?? false
        let page = try UserActivity(activityType: NSUserActivityTypeBrowsingWeb, application: application)
        try page.setWebpageURL(url)
        page.title = title
        activity?.invalidate()
        activity = page
        if !superseded { becomeCurrent(page) }
    }

    private func becomeCurrent(_ page: UserActivity) {
        page.becomeCurrent()
        resigned = false
    }

    /// Stops offering the page (A9); it can be shown again.
    func resign() {
        activity?.resignCurrent()
        resigned = true
    }

    /// Ends the page for good and disconnects.
    func close() {
        activity?.invalidate()
        activity = nil
        application.disconnect()
    }
}

/// SIGINT and SIGTERM, caught rather than fatal, so a command can resign its activity and exit 0.
final class StopSignals {
    /// The signal caught, 0 while none was: set from the signal sources' queue.
    private final class Caught: Sendable {
        let number = Atomic<Int32>(0)
    }

    private let caught = Caught()
    private var sources: [any DispatchSourceSignal] = []

    init() {
        for number in [SIGINT, SIGTERM] {
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [caught] in caught.number.store(number, ordering: .relaxed) }
            source.resume()
            sources.append(source)
        }
    }

    /// The signal caught, or nil.
    var signal: Int32? {
        let number = caught.number.load(ordering: .relaxed)
        return number == 0 ? nil : number
    }
}

/// Hands a page continued here from another device (E2: delivered to `org.baton.browser`) to `open`, which says
/// whether it was handled.
@MainActor
final class ContinuedPages: BatonApplicationDelegate {
    let open: @MainActor (URL) -> Bool

    init(open: @escaping @MainActor (URL) -> Bool) {
        self.open = open
    }

    func application(
        _ application: BatonApplication,
        continue userActivity: UserActivity,
        restorationHandler: @escaping @MainActor ([UserActivityResponder]) -> Void
    ) -> Bool {
        guard let url = userActivity.webpageURL else { return false }
        return open(url)
    }
}
