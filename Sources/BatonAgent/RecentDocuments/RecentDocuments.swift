import BatonActivitySources
import BatonProtocol

/// The recent-documents source's decisions (issue 27 item 2; B5, A9), a pure state machine: the documents the desktop
/// recorded in, the time passed in, what to offer out. No files, no clock, no socket: ``RecentDocumentsSource`` reads
/// `recently-used.xbel` and KDE's `RecentDocuments/` and performs what this returns.
///
/// The rule: the most recently used document that lies inside a synced folder (C9: only there is it the same document
/// on another device) becomes this device's current activity, as B5 makes a synced document's activity when it opens.
/// A document outside every folder, or one whose URL ``ActivityURL`` refuses, is never offered. At the first listing
/// only a document used within ``freshness`` is offered (an agent starting does not offer last week's report); after
/// that each newer use is offered. A document used again is made current again (the latest of what the person did
/// wins, item 3), under the same activity; another document is a new activity (as a browser's new page is). The offer
/// goes when its document leaves the list or every synced folder.
struct RecentDocuments: Sendable {
    /// One document as a source recorded it, before the rules.
    struct Candidate: Sendable, Hashable {
        /// The document: a `file:` URL the source read and ``ActivityURL`` accepted.
        var url: ActivityURL
        /// The desktop file id of the application that last used it (`org.gnome.TextEditor`), when valid.
        var application: String?
        /// Its MIME type, for the default application on the other device.
        var mimeType: String?
        /// When it was last used, wall milliseconds since 1970.
        var lastUsed: UInt64
    }

    /// What is offered: one document, as the current activity `activity`.
    struct Offer: Sendable, Hashable {
        var activity: UInt64
        /// The local path, inside ``folder``.
        var path: String
        var folder: String
        var application: String?
        var mimeType: String?
        var lastUsed: UInt64
    }

    /// What the source does next.
    enum Action: Sendable, Hashable {
        /// Make `offer` the current activity (again, when its activity was offered before: used again).
        case offer(Offer)
        /// The activity is no longer offered (resign, A9).
        case withdraw(activity: UInt64)
    }

    private enum State: Sendable, Hashable {
        /// Nothing listed yet: the first listing offers only what is fresh.
        case starting
        /// Listed, nothing offered.
        case idle
        case offering(Offer)
        /// Stopped for good: nothing more is offered.
        case stopped
    }

    /// How recently a document must have been used to be offered by the first listing, in milliseconds.
    let freshness: UInt64
    private var state = State.starting
    private var nextActivity: UInt64 = 1

    init(freshness: UInt64) {
        self.freshness = freshness
    }

    /// What is offered now, if anything.
    var offered: Offer? {
        if case .offering(let offer) = state { return offer }
        return nil
    }

    /// The sources listed `candidates` (all of them, as read now), with `folders` the synced folders now.
    mutating func listed(_ candidates: [Candidate], folders: SyncedFolders, now: UInt64) -> Action? {
        let eligible = candidates.compactMap { candidate -> Offer? in
            guard candidate.url.scheme == .file, let path = candidate.url.filePath,
                let folder = folders.folder(containing: path)?.folder
            else { return nil }
            return Offer(
                activity: 0, path: path, folder: folder.id, application: candidate.application, mimeType: candidate.mimeType,
                lastUsed: candidate.lastUsed
            )
        }
        // The latest; on a tie the one listed last (a source writes newer entries after older ones).
        let latest = eligible.enumerated().max { ($0.element.lastUsed, $0.offset) < ($1.element.lastUsed, $1.offset) }?.element
        switch state {
        case .stopped:
            return nil
        case .starting, .idle:
            let first = state == .starting
            state = .idle
            guard let latest, !first || latest.lastUsed + freshness >= now else { return nil }
            return offer(latest, as: nil)
        case .offering(let current):
            guard eligible.contains(where: { $0.path == current.path }) else {
                // Its document left the list, or every synced folder: withdrawn; a fresh other one may follow later.
                state = .idle
                return .withdraw(activity: current.activity)
            }
            guard let latest, latest.lastUsed > current.lastUsed else { return nil }
            return offer(latest, as: latest.path == current.path ? current.activity : nil)
        }
    }

    /// The source stops (shutdown, switched off): what is offered is withdrawn.
    mutating func stop() -> Action? {
        defer { state = .stopped }
        if case .offering(let current) = state { return .withdraw(activity: current.activity) }
        return nil
    }

    private mutating func offer(_ document: Offer, as activity: UInt64?) -> Action {
        var offer = document
        if let activity {
            offer.activity = activity
        } else {
            offer.activity = nextActivity
            nextActivity += 1
        }
        state = .offering(offer)
        return .offer(offer)
    }
}
