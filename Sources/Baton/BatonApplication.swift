import BatonClient
import BatonProtocol
import BatonCore
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// What an app is told about continuations (C5–C8), in the order they happen; ``BatonApplication/events`` carries
/// them for async code, the delegate gets the same as calls.
public enum ContinuationEvent: Sendable {
    /// A continuation for this app started; the state is on its way (C5).
    case willContinue(activityType: String)
    /// The state arrived and was handed to the delegate (C5, C7).
    case continued(UserActivity)
    /// The continuation failed (C6, C8).
    case failed(activityType: String, error: ContinuationError)
}

/// The app side of continuations (C5, C7, B3), in two shapes: Swift-first methods on ``UserActivity``, and Apple's
/// exact `UIApplicationDelegate` / `NSApplicationDelegate` signatures on ``NSUserActivity`` (issue 12), so a delegate
/// written for iOS or macOS is called as it is there. Implement either shape; every method has a default, and a
/// delegate that implements no `continue` at all is warned about, once, when an activity arrives for it.
@MainActor
public protocol BatonApplicationDelegate: AnyObject {
    /// A continuation starts, before the state arrives: show progress (C5). Return whether the app shows its own.
    func application(_ application: BatonApplication, willContinueUserActivityWithType userActivityType: String) -> Bool
    /// The state arrived (C5, C7). Return whether the app handled it. Objects passed to `restorationHandler` get
    /// ``UserActivityResponder/restoreUserActivityState(_:)``. The default passes the activity on to the
    /// `NSUserActivity` forms below.
    func application(
        _ application: BatonApplication,
        continue userActivity: UserActivity,
        restorationHandler: @escaping @MainActor ([UserActivityResponder]) -> Void
    ) -> Bool
    /// UIKit's form: `application(_:continue:restorationHandler:)` with `([UIUserActivityRestoring]?) -> Void`.
    /// The default passes the activity on to AppKit's form.
    func application(
        _ application: BatonApplication,
        continue userActivity: NSUserActivity,
        restorationHandler: @escaping ([any UserActivityRestoring]?) -> Void
    ) -> Bool
    /// AppKit's form: `application(_:continue:restorationHandler:)` with `([NSUserActivityRestoring]) -> Void`.
    /// The default handles nothing and warns that no `continue` is implemented.
    func application(
        _ application: BatonApplication,
        continue userActivity: NSUserActivity,
        restorationHandler: @escaping ([any UserActivityRestoring]) -> Void
    ) -> Bool
    /// The continuation failed (C5, C6, C8); exactly one of this or `continue` follows every `willContinue`.
    func application(_ application: BatonApplication, didFailToContinueUserActivityWithType userActivityType: String, error: Error)
    /// An activity's state was just brought up to date (B3): stamp a version into it, say (H1). The default passes it
    /// on to the `NSUserActivity` form.
    func application(_ application: BatonApplication, didUpdate userActivity: UserActivity)
    /// Apple's form of `didUpdate`.
    func application(_ application: BatonApplication, didUpdate userActivity: NSUserActivity)
}

extension BatonApplicationDelegate {
    public func application(_ application: BatonApplication, willContinueUserActivityWithType userActivityType: String) -> Bool { false }

    public func application(
        _ application: BatonApplication,
        continue userActivity: UserActivity,
        restorationHandler: @escaping @MainActor ([UserActivityResponder]) -> Void
    ) -> Bool {
        let wrapper = userActivity.nsUserActivity
        let restore: ([any UserActivityRestoring]?) -> Void = { objects in
            for object in objects ?? [] { object.restoreUserActivityState(wrapper) }
        }
        return self.application(application, continue: wrapper, restorationHandler: restore)
    }

    public func application(
        _ application: BatonApplication,
        continue userActivity: NSUserActivity,
        restorationHandler: @escaping ([any UserActivityRestoring]?) -> Void
    ) -> Bool {
        let restore: ([any UserActivityRestoring]) -> Void = { objects in restorationHandler(objects) }
        return self.application(application, continue: userActivity, restorationHandler: restore)
    }

    public func application(
        _ application: BatonApplication,
        continue userActivity: NSUserActivity,
        restorationHandler: @escaping ([any UserActivityRestoring]) -> Void
    ) -> Bool {
        application.warnNoContinue(self, activityType: userActivity.activityType)
        return false
    }

    public func application(_ application: BatonApplication, didFailToContinueUserActivityWithType userActivityType: String, error: Error) {}

    public func application(_ application: BatonApplication, didUpdate userActivity: UserActivity) {
        self.application(application, didUpdate: userActivity.nsUserActivity)
    }

    public func application(_ application: BatonApplication, didUpdate userActivity: NSUserActivity) {}
}

/// An object a continued activity restores, as Apple's `UIUserActivityRestoring` and `NSUserActivityRestoring`
/// (what `restorationHandler` takes in the `NSUserActivity` forms of ``BatonApplicationDelegate``).
@MainActor
public protocol UserActivityRestoring: AnyObject {
    func restoreUserActivityState(_ userActivity: NSUserActivity)
}

/// An app's link to its device's agent: publishes the current activity, gives its state when another device asks,
/// and receives continuations. One per app; ``shared`` unless a process plays several apps (tests, the demo).
@MainActor
public final class BatonApplication {
    /// The app's application object.
    public nonisolated static let shared = BatonApplication()

    /// Told about continuations and updates.
    public weak var delegate: BatonApplicationDelegate?
    /// Opens a document for a continued document activity the delegate did not handle (B6); the library then calls
    /// `restoreUserActivityState` on it.
    public var documentOpener: ((URL) -> ActivityDocument?)?
    /// The activity types of the app's document types by file extension (B5), for ``ActivityDocument``.
    public var documentActivityTypes: [String: String] = [:]
    /// Continuation events, for async code (async/await first).
    public let events: AsyncStream<ContinuationEvent>
    /// The app's bundle identifier, once connected.
    public private(set) var bundleIdentifier: String?
    /// The agent's device, once connected.
    public private(set) var deviceName: String?
    /// The agent's socket, once connected: a continuation stream is its own connection to it (F2, F3).
    var socketPath: String?
    /// The event loops of the connection to the agent: the process's shared ones, unless set before ``connect``. An
    /// app is a process of its own; `baton bench handoff` plays apps beside embedded agents and gives them loops of
    /// their own, so that an app's read does not wait behind the agent's work on a shared thread (issue 26 item 5).
    package var connectionLoops: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    /// The device's current activity, if this app made it so (A9).
    public private(set) var currentActivity: UserActivity?
    /// What was last sent to the agent of the current activity.
    var published: ActivityNotice?

    let eventSink: AsyncStream<ContinuationEvent>.Continuation
    var client: AgentClient?
    /// The messages of ``client``'s connection on their way here (issue 26 item 5).
    var inbox: AgentInbox?
    nonisolated let nextIdentifier = Atomic<UInt64>(1)
    var live: [UInt64: WeakActivity] = [:]
    /// Continuations told `willContinue` and not yet ended: each ends exactly once (C5).
    var pending: [UInt64: String] = [:]
    /// Whether the delegate was found to implement no `continue` (warned once).
    var warnedNoContinue = false
    /// Deletions of saved activities sent and not yet answered (G3), by request number: each is resumed exactly once,
    /// by the agent's `deletedSaved`, the connection's end, or ``deletionTimeout``.
    var deletions: [UInt64: CheckedContinuation<UInt64, any Error>] = [:]
    /// The number of the next request this app sends the agent.
    var nextRequest: UInt64 = 1
    /// How long a deletion waits for the agent's answer (an agent that does not know the request never answers).
    var deletionTimeout: Duration = .seconds(10)
    /// How long after `needsSave` is set on the current activity eligible for search its state is saved and indexed
    /// (G1, A6): however often it is set meanwhile, that is one save. Apple's "at an opportune moment".
    var searchSaveDelay: Duration = .seconds(1)

    struct WeakActivity {
        weak var activity: UserActivity?
    }

    /// Work asked of the main actor from other threads (``perform(_:)``), run in the order asked.
    nonisolated let operations: AsyncStream<@MainActor @Sendable () -> Void>.Continuation
    /// How many of those are queued and not yet run.
    nonisolated let queuedOperations = Atomic<Int>(0)

    /// A new application object (most apps use ``shared``).
    public nonisolated init() {
        (events, eventSink) = AsyncStream.makeStream(of: ContinuationEvent.self, bufferingPolicy: .bufferingNewest(256))
        let (stream, operations) = AsyncStream.makeStream(of: (@MainActor @Sendable () -> Void).self)
        self.operations = operations
        // Ends when the application object does (deinit finishes the stream).
        Task { @MainActor in
            for await operation in stream {
                operation()
            }
        }
    }

    isolated deinit {
        operations.finish()
    }

    /// Runs `body` on the main actor: at once when the caller is on it (`isolation`, the caller's `#isolation`)
    /// with nothing queued before it, otherwise after everything asked before it, in order. How ``NSUserActivity``
    /// (usable anywhere) reaches the connection.
    nonisolated func perform(from isolation: (any Actor)?, _ body: @escaping @MainActor @Sendable () -> Void) {
        if let isolation, isolation === MainActor.shared, queuedOperations.load(ordering: .acquiring) == 0 {
            MainActor.assumeIsolated { body() }
            return
        }
        queuedOperations.add(1, ordering: .relaxed)
        operations.yield { [weak self] in
            body()
            self?.queuedOperations.subtract(1, ordering: .releasing)
        }
    }

    /// Whether the agent connection is up.
    public var isConnected: Bool { client != nil }

    /// Connects to the device's agent as the app `bundleIdentifier` (default: `BATON_BUNDLE_IDENTIFIER`, which the
    /// agent sets when it launches the app) at `socketPath` (default: `BATON_AGENT_SOCKET`, then the socket the default
    /// agent announced in `~/.local/share/baton/agent-socket`, then the default agent's socket). The agent checks that
    /// this process runs that app's registered executable.
    /// - Throws: ``BatonClientError``: `peerUnreachable` when no agent answers (saying where it looked, from which
    ///   source, and how to reach an agent started with `--state`), `peerRefused` with the agent's reason, `notOwned`,
    ///   `timedOut`, `noBundleIdentifier`. Its `description` is one line.
    public func connect(bundleIdentifier: String? = nil, socketPath: String? = nil) async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let bundle = bundleIdentifier ?? environment["BATON_BUNDLE_IDENTIFIER"] else {
            throw BatonClientError(.noBundleIdentifier, "no bundle identifier: pass one to connect(bundleIdentifier:) or set BATON_BUNDLE_IDENTIFIER")
        }
        let location = socketPath.map { AgentSocket.Location(path: $0, source: .given) } ?? AgentSocket.locationForApps(environment: environment)
        let path = location.path
        disconnect()
        let inbox = AgentInbox()
        // On the connection's loop: each message goes to the main actor in one job, in order.
        let client = try await AgentClient.connect(to: location, bundleIdentifier: bundle, group: connectionLoops) { [weak self] message in
            if inbox.put(message) { Task { @MainActor in self?.takeMessages(from: inbox) } }
        }
        self.client = client
        self.inbox = inbox
        self.bundleIdentifier = bundle
        self.deviceName = client.deviceName
        self.socketPath = path
        if inbox.open() { Task { [weak self] in self?.takeMessages(from: inbox) } }
        if let currentActivity {
            publish(currentActivity)
            index(currentActivity)
        }
    }

    /// Disconnects from the agent; the current activity stops being offered.
    public func disconnect() {
        client?.close()
        if let client { connectionEnded(client) }
    }

    func connectionEnded(_ ended: AgentClient) {
        guard client === ended else { return }
        client = nil
        inbox = nil
        // C5, C8: a continuation the agent can no longer finish still ends, once.
        for (continuation, type) in pending.sorted(by: { $0.key < $1.key }) {
            fail(continuation, type: type, ContinuationError(.agentGone, "the connection to this device's agent ended"))
        }
        // G3: so does every deletion still waiting for its answer.
        let waiting = deletions
        deletions = [:]
        for (_, waiter) in waiting.sorted(by: { $0.key < $1.key }) {
            waiter.resume(throwing: ContinuationError(.agentGone, "the connection to this device's agent ended before it answered"))
        }
    }

    /// A new activity id, from any thread (activities may be made anywhere: issue 12).
    nonisolated func nextActivityIdentifier() -> UInt64 {
        nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    // MARK: The current activity (A9, C2)

    func makeCurrent(_ activity: UserActivity) {
        if let previous = currentActivity, previous !== activity { previous.isCurrent = false }
        currentActivity = activity
        activity.isCurrent = true
        live[activity.identifier] = WeakActivity(activity: activity)
        publish(activity)
        index(activity)
    }

    /// What other devices are shown of `activity`.
    func notice(_ activity: UserActivity) -> ActivityNotice {
        ActivityNotice(
            activityType: activity.activityType,
            title: activity.title,
            webpageHost: activity.webpageURL?.host,
            supportsStreams: activity.supportsContinuationStreams,
            isEligibleForHandoff: activity.isEligibleForHandoff,
            expirationDate: activity.expirationDate
        )
    }

    /// Sends what other devices are shown of `activity`; `isUpdate` when only that changed, not the person's choice
    /// of activity (issue 27 item 3: the agent then does not make it current again if another app's took over).
    func publish(_ activity: UserActivity, isUpdate: Bool = false) {
        let notice = notice(activity)
        published = notice
        client?.send(.becomeCurrent(activity: activity.identifier, notice, isUpdate: isUpdate))
    }

    func resign(_ activity: UserActivity) {
        guard currentActivity === activity else { return }
        currentActivity = nil
        published = nil
        activity.isCurrent = false
        client?.send(.resignCurrent(activity: activity.identifier))
    }

    func invalidated(_ activity: UserActivity) {
        if currentActivity === activity {
            currentActivity = nil
            published = nil
            activity.isCurrent = false
        }
        live[activity.identifier] = nil
        client?.send(.invalidate(activity: activity.identifier))
    }

    /// Something other devices show changed (title, eligibility): tell the agent if the activity is current and
    /// what it shows is not what was last sent (a title set before `becomeCurrent` from an `NSUserActivity` is
    /// queued and arrives after it: not a second advert). An update, never a takeover (issue 27 item 3; A9): once
    /// another app's activity took over (``handle(_:)``, `notCurrent`) nothing is sent, and one sent before the app
    /// heard it is marked so the agent ignores it.
    func activityChanged(_ activity: UserActivity) {
        guard currentActivity === activity, notice(activity) != published else { return }
        publish(activity, isUpdate: true)
    }

    // MARK: What the agent says

    /// Handles what `inbox` holds, in order, while it is the current connection's: a connection this app has left
    /// (``disconnect()``, a new ``connect``) is heard no more, as the task that read its stream was cancelled.
    func takeMessages(from inbox: AgentInbox) {
        let (messages, ended) = inbox.take()
        for message in messages {
            guard self.inbox === inbox else { return }
            handle(message)
        }
        if ended, self.inbox === inbox, let client { connectionEnded(client) }
    }

    func handle(_ message: IPCMessage) {
        switch message {
        case .save(let request, let identifier, _):
            HopStamps.stamp(.appSaveAsked)
            guard let activity = live[identifier]?.activity, activity.isValid else {
                client?.send(.saveFailed(request: request, message: "the activity no longer exists"))
                return
            }
            do {
                let payload = try activity.save().encoded()
                HopStamps.stamp(.appStateEncoded)
                client?.send(.saved(request: request, payload: payload))
                HopStamps.stamp(.appSavedSent)
                // G1: the state just saved is the search index's too (one save, one call to the delegate).
                if activity.isEligibleForSearch { client?.send(.index(activity: activity.identifier, payload: payload)) }
            } catch {
                client?.send(.saveFailed(request: request, message: "\(error)"))
            }
        case .continued(let identifier):
            if let activity = live[identifier]?.activity {
                activity.delegate?.userActivityWasContinued(activity)
                activity.apple.delegate?.userActivityWasContinued(activity.nsUserActivity)
            }
        case .notCurrent(let identifier):
            // Who wins (A9; issue 27 item 3; docs/ARCHITECTURE.md): another app's activity took over. An update of this
            // one later (a new title: ``activityChanged(_:)``; needsSave) no longer takes current back; only its
            // `becomeCurrent()`, the person's doing, does.
            guard let activity = currentActivity, activity.identifier == identifier else { return }
            currentActivity = nil
            published = nil
            activity.isCurrent = false
        case .willContinue(let continuation, let type):
            pending[continuation] = type
            eventSink.yield(.willContinue(activityType: type))
            _ = delegate?.application(self, willContinueUserActivityWithType: type)
        case .deliver(let continuation, let data):
            HopStamps.stamp(.appDeliverReceived)
            guard let type = pending.removeValue(forKey: continuation) else { return }
            let payload: ActivityPayload
            do {
                payload = try ActivityPayload(decoding: data)
            } catch {
                report(.failed(activityType: type, error: ContinuationError(.unreadable, "the state cannot be used: \(error)")))
                return
            }
            let activity = UserActivity(payload: payload, application: self)
            activity.continuation = (continuation, payload.supportsContinuationStreams)
            HopStamps.stamp(.appStateDecoded)
            deliver(activity)
        case .failed(let continuation, let type, let reason, let text):
            guard pending[continuation] != nil else { return }
            fail(continuation, type: type, ContinuationError(ContinuationError.Code(reason), text))
        case .incomingStream(let identifier, let token):
            incomingStream(activity: identifier, token: token)
        case .deletedSaved(let request, let count, let failure):
            guard let waiter = deletions.removeValue(forKey: request) else { return }
            if let failure {
                waiter.resume(throwing: ContinuationError(.searchFailed, "the device's search index could not delete: \(failure)"))
            } else {
                waiter.resume(returning: count)
            }
        default:
            break
        }
    }

    // MARK: Search (G1, G3)

    /// G1: saves `activity` (its delegates run only if it needs it, A6) and gives that state to the device's search
    /// index, when it is eligible for search and the app is connected. A state that cannot be encoded is not indexed:
    /// search is never worth breaking handoff for.
    func index(_ activity: UserActivity) {
        guard let client, activity.isValid, activity.isEligibleForSearch else { return }
        guard let payload = try? activity.save().encoded() else { return }
        client.send(.index(activity: activity.identifier, payload: payload))
    }

    /// G1, A6: `needsSave` was just set on `activity`, from any thread. If it is eligible for search, its state is saved
    /// and indexed ``searchSaveDelay`` later, once however often it is set meanwhile, provided it is current then and
    /// still needs it (a save the agent asked for meanwhile, or `becomeCurrent`, already did it).
    nonisolated func needsSaveSet(_ activity: UserActivity) {
        guard activity.fields[\.isEligibleForSearch] else { return }
        guard !activity.searchSaveScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Task { @MainActor [weak self, weak activity] in
            guard let delay = self?.searchSaveDelay else { return }
            try? await Task.sleep(for: delay)
            guard let self, let activity else { return }
            activity.searchSaveScheduled.store(false, ordering: .releasing)
            guard activity.isCurrent, activity.needsSave else { return }
            self.index(activity)
        }
    }

    /// G3: asks the agent to delete what this app saved for search with `identifiers` (at most
    /// `IPCMessage.maximumDeletedIdentifiers`), or everything when nil, and returns how many entries went.
    /// - Throws: ``ContinuationError`` `notConnected`, `searchFailed` (the agent's reason), `agentGone` (the
    ///   connection ended first) or `timedOut` (no answer within ``deletionTimeout``).
    func deleteSaved(_ identifiers: [String]?) async throws -> UInt64 {
        guard let client else {
            throw ContinuationError(.notConnected, "this app is not connected to its device's agent: call connect() first")
        }
        let request = nextRequest
        nextRequest += 1
        let timeout = deletionTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            guard let waiter = self?.deletions.removeValue(forKey: request) else { return }
            waiter.resume(throwing: ContinuationError(.timedOut, "the device's agent did not answer the deletion within \(timeout)"))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { waiter in
            deletions[request] = waiter
            client.send(.deleteSaved(request: request, persistentIdentifiers: identifiers))
        }
    }

    func fail(_ continuation: UInt64, type: String, _ error: ContinuationError) {
        guard pending.removeValue(forKey: continuation) != nil else { return }
        report(.failed(activityType: type, error: error))
    }

    func report(_ event: ContinuationEvent) {
        eventSink.yield(event)
        if case .failed(let type, let error) = event {
            delegate?.application(self, didFailToContinueUserActivityWithType: type, error: error)
        }
    }

    /// Says once, on standard error, that `delegate` implements none of the `continue` methods, so continued
    /// activities go nowhere (issue 12: silence made an Apple-shaped delegate with a typo look dead).
    func warnNoContinue(_ delegate: BatonApplicationDelegate, activityType: String) {
        guard !warnedNoContinue else { return }
        warnedNoContinue = true
        let message = "BatonApplication: the delegate \(type(of: delegate)) implements no application(_:continue:restorationHandler:) "
            + "(neither Baton's form with UserActivity nor Apple's with NSUserActivity), so the continued \(activityType) "
            + "activity was not handled; check the method's signature\n"
        FileHandle.standardError.write(Data(message.utf8))
    }

    /// Says on standard error that the continued activity's document is a file of the other device, so it was not
    /// opened (issue 25 item 2); the app's delegate may say more (``UserActivity/foreignFileURLs``).
    func warnForeignDocument(_ url: URL, activityType: String) {
        let path = String(url.path(percentEncoded: false).prefix(512))
        let message = "BatonApplication: the continued \(activityType) activity names the document \(path) on the device it came from, "
            + "not in a folder synced with this one, so it was not opened (B6, C9); `baton folders add ID PATH` on both devices shares its folder\n"
        FileHandle.standardError.write(Data(message.utf8))
    }

    /// C5, C7, B6: the delegate first; a document activity it did not handle opens its document.
    func deliver(_ activity: UserActivity) {
        let handled =
            delegate?.application(self, continue: activity) { objects in
                for object in objects { object.restoreUserActivityState(activity) }
            } ?? false
        if !handled, case .url(let url) = activity.userInfo[ActivityDocument.documentURLKey] {
            if activity.isForeignFileURL(url) {
                // Issue 25 item 2 (B6, C9): a file on the device the activity came from, not in a folder synced
                // here. The path here may be any file of this user's: never opened as the document.
                warnForeignDocument(url, activityType: activity.activityType)
            } else if let document = documentOpener?(url) {
                document.restoreUserActivityState(activity)
            }
        }
        eventSink.yield(.continued(activity))
    }
}
