import BatonCore
import Foundation
import Synchronization

/// What an activity holds, behind a lock, shared by a ``UserActivity`` (main actor) and its ``NSUserActivity``
/// (any thread or actor, as Apple's is: issue 12). Reads and writes are atomic one at a time; a merge into
/// `userInfo` is one write.
final class ActivityFields: Sendable {
    struct Values: Sendable {
        var title: String?
        var userInfo: [String: PropertyList] = [:]
        var webpageURL: URL?
        var needsSave = false
        var requiredUserInfoKeys: Set<String>?
        var keywords: Set<String> = []
        var isEligibleForHandoff = true
        var isEligibleForSearch = false
        var isEligibleForPublicIndexing = false
        var isEligibleForPrediction = false
        var expirationDate: Date?
        var persistentIdentifier: String?
        var targetContentIdentifier: String?
        var referrerURL: URL?
        var contentAttributeSet: [String: PropertyList]?
        var supportsContinuationStreams = false
        /// The `file:` URLs of another device in a continued activity's `userInfo` (issue 25 item 2); never sent.
        var foreignFileURLs: Set<URL> = []
    }

    private let values: Mutex<Values>

    init(_ values: Values = Values()) {
        self.values = Mutex(values)
    }

    /// Runs `body` with the values locked.
    func withLock<T: Sendable>(_ body: (inout Values) throws -> T) rethrows -> T {
        try values.withLock { try body(&$0) }
    }

    /// One value.
    subscript<T: Sendable>(_ keyPath: WritableKeyPath<Values, T>) -> T {
        get { values.withLock { $0[keyPath: keyPath] } }
        set { values.withLock { $0[keyPath: keyPath] = newValue } }
    }

    /// Sets one value; true when it changed (what other devices show is republished only then).
    @discardableResult
    func set<T: Equatable & Sendable>(_ keyPath: WritableKeyPath<Values, T>, _ newValue: T) -> Bool {
        values.withLock { values in
            guard values[keyPath: keyPath] != newValue else { return false }
            values[keyPath: keyPath] = newValue
            return true
        }
    }
}
