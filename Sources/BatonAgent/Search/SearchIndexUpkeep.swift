import BatonSearch

/// The search service's decisions as a pure value (issue 26 items 1 and 2; ARCHITECTURE "Services"): when expired
/// entries are purged, when the index file is opened again, and what a failure leads to.
///
/// The time is passed in as uptime nanoseconds; no I/O, no clock, no tasks: ``SearchService`` does those. Expired
/// entries are purged at start and then every `purgeInterval` (they are never returned anyway, so this only frees
/// space, G1). The index is opened again when it is not open or when the file at its path is no longer the one
/// opened (`baton search --rebuild`, or a person replaced or removed it). A damaged index is set aside and a new one
/// started; any other failure is logged and the index kept; the shutdown is not a failure.
struct SearchIndexUpkeep: Sendable {
    /// A file's device and inode: what tells the file opened from one put in its place.
    struct FileID: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    /// What follows a failed job or purge.
    enum Recovery: Sendable, Equatable {
        /// The shutdown cancelled it: not a failure, nothing to do.
        case none
        /// A save the shutdown cancelled mid-write (GRDB's async writes are cancellable): queued again, for the drain.
        case requeue
        /// Logged as a warning; the index is kept.
        case keep
        /// The index is damaged: logged as an error, then set aside and a new, empty one opened (the account is
        /// not touched).
        case reopen
    }

    /// Nanoseconds between purges.
    let purgeInterval: UInt64
    /// When the next purge is due (uptime nanoseconds): at once, at first.
    private(set) var nextPurge: UInt64 = 0

    init(purgeInterval: Duration) {
        let (seconds, attoseconds) = purgeInterval.components
        self.purgeInterval = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Whether expired entries are purged now (and the file checked).
    func isPurgeDue(now: UInt64) -> Bool {
        now >= nextPurge
    }

    /// The purge due was done (or could not be) at `now`: the next is `purgeInterval` later.
    mutating func purged(now: UInt64) {
        nextPurge = now &+ purgeInterval
    }

    /// How long the loop may sleep from `now` when nothing is asked: until the next purge, at once if overdue.
    func untilPurge(now: UInt64) -> Duration {
        .nanoseconds(Int64(clamping: nextPurge > now ? nextPurge - now : 0))
    }

    /// Whether the index is opened (again) before a job: it is not open, or the file at its path is not the one
    /// opened (`onDisk` nil: removed).
    static func mustOpen(isOpen: Bool, opened: FileID?, onDisk: FileID?) -> Bool {
        !isOpen || opened != onDisk
    }

    /// What follows `error`, from a save (`saving`) or another job or the purge.
    static func recovery(after error: any Error, saving: Bool) -> Recovery {
        if error is CancellationError { return saving ? .requeue : .none }
        guard let error = error as? SearchError, error.code == .damaged else { return .keep }
        return .reopen
    }
}
