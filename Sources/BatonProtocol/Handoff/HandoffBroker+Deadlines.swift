/// Every deadline of the broker is an event fed to it (issue 26 item 2): a save's (A7), a launched app's hello, a
/// fetch's answer (C8), and the look for documents still syncing (C9). The broker says when a timer starts
/// (``Action/startTimer(_:afterMilliseconds:)``) and stops (``Action/cancelTimer(_:)``), and what its firing means
/// (``timerFired(_:now:)``): the failure and its reason (C8), and the one ending (C5). The driver schedules the timer
/// and reports it, deciding nothing.
///
/// A timer starts when what it times has begun, as the driver reports it: the app asked (``saveAsked(_:now:)``), the
/// app's process running (``launchStarted(_:now:)``), the request sent (``fetchSent(_:to:now:)``), the documents
/// looked for (``documentsChecked(_:_:now:)``). `now` is milliseconds on the clock the driver's timers run by (a
/// monotonic one: uptime), not the wall clock of ``fetchAsked(_:sequence:deadlineMilliseconds:now:confirmingAsker:)``.
extension HandoffBroker {
    /// A timer the broker asks for, named by what it times.
    public enum TimerID: Hashable, Sendable, CustomStringConvertible {
        /// The app's answer to save request `n` (A7).
        case save(UInt64)
        /// The hello of the app launched for a continuation.
        case launch(ContinuationID)
        /// The originating device's answer to a continuation's fetch (C8).
        case fetch(ContinuationID)
        /// The next look for a continuation's documents still syncing (C9).
        case documents(ContinuationID)

        public var description: String {
            switch self {
            case .save(let save): "save \(save)"
            case .launch(let id): "launch of \(id)"
            case .fetch(let id): "fetch of \(id)"
            case .documents(let id): "documents of \(id)"
            }
        }
    }

    /// How long a continuation's steps may take (a save's is ``HandoffBroker/saveDeadlineMilliseconds``).
    public struct Deadlines: Sendable, Hashable {
        /// A launched app's hello, from when its process runs (`baton agent --launch-timeout`).
        public var launchMilliseconds: UInt64
        /// What a fetch's answer may take on top of the originating app's save deadline: the network's share.
        public var fetchNetworkMilliseconds: UInt64
        /// Documents still syncing, from the first look (`baton agent --sync-wait`).
        public var documentsMilliseconds: UInt64
        /// How often documents still syncing are looked for.
        public var documentsPollMilliseconds: UInt64

        /// Deadlines; the defaults are the agent's.
        public init(
            launchMilliseconds: UInt64 = 10_000,
            fetchNetworkMilliseconds: UInt64 = 1_000,
            documentsMilliseconds: UInt64 = 10_000,
            documentsPollMilliseconds: UInt64 = 100
        ) {
            self.launchMilliseconds = launchMilliseconds
            self.fetchNetworkMilliseconds = fetchNetworkMilliseconds
            self.documentsMilliseconds = documentsMilliseconds
            self.documentsPollMilliseconds = documentsPollMilliseconds
        }
    }

    /// What the driver found when it looked for a continuation's documents (``Action/awaitDocuments(_:paths:)``).
    public enum DocumentsCheck: Sendable, Hashable {
        /// Every one is here (and the app told is still the one that connected).
        case present
        /// `path` is not here yet; `folder` says which synced folder it should arrive in, for the reason.
        case missing(path: String, folder: String?)
        /// One is here but is not opened (it leads out of its folder): `message` says which and why.
        case refused(message: String)
    }

    /// A timer started for a continuation's step, and when it is due.
    struct Armed: Sendable, Hashable {
        var timer: TimerID
        var due: UInt64
    }

    /// How long the originating device has to answer a fetch: the app's save deadline, and the network's share.
    public var fetchMilliseconds: UInt64 { saveDeadlineMilliseconds + deadlines.fetchNetworkMilliseconds }

    // MARK: What has begun

    /// The app was asked for save request `save` (or its connection is already closing, and the deadline is the
    /// backstop): the save's deadline runs from `now`.
    public mutating func saveAsked(_ save: UInt64, now: UInt64) -> [Action] {
        guard let waiting = saves[save], waiting.due == nil else { return [] }
        saves[save]?.due = now + waiting.deadlineMilliseconds
        return [.startTimer(.save(save), afterMilliseconds: waiting.deadlineMilliseconds)]
    }

    /// The process of the app launched for `id` runs (started now, or already starting): it has
    /// ``Deadlines/launchMilliseconds`` to say hello.
    public mutating func launchStarted(_ id: ContinuationID, now: UInt64) -> [Action] {
        switch ongoing[id]?.state {
        case .launching, .launchingWithState:
            return arm(id, .launch(id), after: deadlines.launchMilliseconds, now: now)
        case .fetching, .awaitingDocuments, .routing, nil:
            return []
        }
    }

    /// The fetch of `id` went out to `peer` (its name): it has ``fetchMilliseconds`` to be answered.
    public mutating func fetchSent(_ id: ContinuationID, to peer: String, now: UInt64) -> [Action] {
        guard case .fetching = ongoing[id]?.state else { return [] }
        ongoing[id]?.peer = peer
        return arm(id, .fetch(id), after: fetchMilliseconds, now: now)
    }

    /// What the driver found when it looked for the documents `id` waits for. Present: the state goes on. Missing:
    /// looked for again after ``Deadlines/documentsPollMilliseconds``, until ``Deadlines/documentsMilliseconds``
    /// from the first look; then `documentNotSynced`, naming the file and its folder (C9, C5).
    public mutating func documentsChecked(_ id: ContinuationID, _ check: DocumentsCheck, now: UInt64) -> [Action] {
        guard case .awaitingDocuments = ongoing[id]?.state else { return [] }
        switch check {
        case .present:
            return documentsArrived(id)
        case .refused(let message):
            return documentsMissing(id, message: message)
        case .missing(let path, let folder):
            let due = ongoing[id]?.documentsDue ?? now + deadlines.documentsMilliseconds
            ongoing[id]?.documentsDue = due
            guard now < due else {
                let waited = Self.format(milliseconds: deadlines.documentsMilliseconds)
                let into = folder.map { " into \($0)" } ?? ""
                return documentsMissing(id, message: "\(path) is not on this device after waiting \(waited) for it to sync\(into) (C9)")
            }
            return arm(id, .documents(id), after: deadlines.documentsPollMilliseconds, now: now)
        }
    }

    // MARK: A timer fired

    /// The timer `timer` fired at `now`. The broker alone says what that means: a save not answered
    /// (`appNotAnswering`), an app that did not connect (`launchFailed`), a device that did not answer (`timedOut`),
    /// or a look for documents due. A timer for something that has ended meanwhile (its answer came first) does
    /// nothing: exactly one outcome (C5). One fired before it is due (a clock's rounding) starts again for the rest,
    /// so none is lost (C8: never a hang).
    public mutating func timerFired(_ timer: TimerID, now: UInt64) -> [Action] {
        switch timer {
        case .save(let save):
            guard let waiting = saves[save] else { return [] }
            if let due = waiting.due, now < due { return [.startTimer(timer, afterMilliseconds: due - now)] }
            return deadlinePassed(save: save)
        case .launch(let id), .fetch(let id), .documents(let id):
            guard let record = ongoing[id], let armed = record.armed, armed.timer == timer else { return [] }
            guard now >= armed.due else { return [.startTimer(timer, afterMilliseconds: armed.due - now)] }
            ongoing[id]?.armed = nil
            return expired(id, record)
        }
    }

    /// The timer of continuation `id`'s present step (`record.state`'s: each step disarms the one before) is due.
    mutating func expired(_ id: ContinuationID, _ record: Continuation) -> [Action] {
        switch record.state {
        case .launching(let bundle, _), .launchingWithState(let bundle, _, _):
            let waited = Self.format(milliseconds: deadlines.launchMilliseconds)
            return launchFailed(id, message: "\(bundle) did not connect within \(waited) of being launched")
        case .fetching:
            let waited = Self.format(milliseconds: fetchMilliseconds)
            return fetchFailed(id, reason: .timedOut, message: "\(record.peer ?? "the other device") did not answer within \(waited)")
        case .awaitingDocuments:
            return [.awaitDocuments(id, paths: record.documents)]
        case .routing:
            // Not timed: the agent decides the route at once.
            return []
        }
    }

    // MARK: Helpers

    /// Starts `timer` for continuation `id`'s present step, due `after` milliseconds from `now`; a timer of an
    /// earlier step still running is cancelled first.
    mutating func arm(_ id: ContinuationID, _ timer: TimerID, after milliseconds: UInt64, now: UInt64) -> [Action] {
        let stopped = disarm(id)
        ongoing[id]?.armed = Armed(timer: timer, due: now + milliseconds)
        return stopped + [.startTimer(timer, afterMilliseconds: milliseconds)]
    }

    /// Forgets the timer of continuation `id`'s step, returning its cancellation (none when no timer runs).
    mutating func disarm(_ id: ContinuationID) -> [Action] {
        guard let armed = ongoing[id]?.armed else { return [] }
        ongoing[id]?.armed = nil
        return [.cancelTimer(armed.timer)]
    }

    /// A duration for a person: "200 ms", "1.2 s", "10.0 s" (as the agent has always written its timeouts).
    public static func format(milliseconds: UInt64) -> String {
        let seconds = Double(milliseconds) / 1000
        return seconds < 1 ? "\(milliseconds) ms" : "\((seconds * 10).rounded() / 10) s"
    }
}
