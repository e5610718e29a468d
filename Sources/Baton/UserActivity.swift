import BatonCore
import BatonProtocol
import Foundation
import Synchronization

/// What a user is doing in an app, which another device of the account can continue (SEMANTICS A1–A10). The
/// Linux counterpart of `NSUserActivity`; ``NSUserActivity`` wraps it with Apple's exact names.
///
/// Lives on the main actor, as Apple's does in practice: delegates and responders are called there.
@MainActor
public final class UserActivity {
    /// The activity type, fixed at creation (A1).
    public nonisolated let activityType: String
    /// The values, shared with the ``NSUserActivity`` that wraps this activity, if any (any thread may set them).
    nonisolated let fields: ActivityFields
    /// The ``NSUserActivityDelegate`` and the wrapper given to it.
    nonisolated let apple = AppleSide()

    /// This activity as an ``NSUserActivity``: the wrapper it was made with while that is alive, else a new one
    /// sharing its values and delegate.
    public nonisolated var nsUserActivity: NSUserActivity { apple.wrapper(for: self) }

    /// A short title shown on other devices (A2).
    public var title: String? {
        get { fields[\.title] }
        set { if fields.set(\.title, newValue) { application.activityChanged(self) } }
    }
    /// The app's state (A2, A3). Assigning replaces it (A4).
    public var userInfo: [String: PropertyList] {
        get { fields[\.userInfo] }
        set { fields[\.userInfo] = newValue }
    }
    /// The web page equivalent; set with ``setWebpageURL(_:)`` (A5).
    public var webpageURL: URL? { fields[\.webpageURL] }
    /// When true, the system asks for fresh state (``UserActivityDelegate/userActivityWillSave(_:)``) the next time
    /// it needs it, once however often it was set (A6, A7).
    ///
    /// For the current activity eligible for search, "next time" includes shortly after it is set (1 s): the device's
    /// search index gets the fresh state then (G1).
    public var needsSave: Bool {
        get { fields[\.needsSave] }
        set {
            fields[\.needsSave] = newValue
            if newValue { application.needsSaveSet(self) }
        }
    }
    /// Only these `userInfo` keys travel (A10).
    public var requiredUserInfoKeys: Set<String>? {
        get { fields[\.requiredUserInfoKeys] }
        set { fields[\.requiredUserInfoKeys] = newValue }
    }
    /// Search-era properties (A10, G1).
    public var keywords: Set<String> {
        get { fields[\.keywords] }
        set { fields[\.keywords] = newValue }
    }
    public var isEligibleForHandoff: Bool {
        get { fields[\.isEligibleForHandoff] }
        set { if fields.set(\.isEligibleForHandoff, newValue) { application.activityChanged(self) } }
    }
    /// Whether the device's search index keeps the activity (G1): then each time it becomes current, and each time its
    /// state is saved, the agent indexes that state (title, ``keywords``, ``contentAttributeSet``, until
    /// ``expirationDate``), for this app, replacing the entry with the same ``persistentIdentifier``. `baton search`
    /// finds it and continues it in this app (G2).
    public var isEligibleForSearch: Bool {
        get { fields[\.isEligibleForSearch] }
        set { fields[\.isEligibleForSearch] = newValue }
    }
    /// Apple's flag for its public (cloud) index: kept and carried, with no public effect on this platform, which has no
    /// public index. The on-device index of ``isEligibleForSearch`` is the same either way.
    public var isEligibleForPublicIndexing: Bool {
        get { fields[\.isEligibleForPublicIndexing] }
        set { fields[\.isEligibleForPublicIndexing] = newValue }
    }
    /// Apple's Siri-prediction flag: kept and carried, with no effect on this platform.
    public var isEligibleForPrediction: Bool {
        get { fields[\.isEligibleForPrediction] }
        set { fields[\.isEligibleForPrediction] = newValue }
    }
    public var expirationDate: Date? {
        get { fields[\.expirationDate] }
        set { if fields.set(\.expirationDate, newValue) { application.activityChanged(self) } }
    }
    /// The app's own id for what the activity shows: a later save with the same id replaces the search entry, and
    /// ``deleteSavedUserActivities(withPersistentIdentifiers:application:)`` deletes by it (G1, G3).
    public var persistentIdentifier: String? {
        get { fields[\.persistentIdentifier] }
        set { fields[\.persistentIdentifier] = newValue }
    }
    public var targetContentIdentifier: String? {
        get { fields[\.targetContentIdentifier] }
        set { fields[\.targetContentIdentifier] = newValue }
    }
    public var referrerURL: URL? {
        get { fields[\.referrerURL] }
        set { fields[\.referrerURL] = newValue }
    }
    /// What a search result shows, in its payload form (``SearchableItemAttributeSet/propertyList``). A set assigned
    /// through ``NSUserActivity/contentAttributeSet`` is kept by reference, so it is read from there: changes made to it
    /// after it was assigned travel too.
    public var contentAttributeSet: [String: PropertyList]? {
        get { apple.attributeSet?.propertyList ?? fields[\.contentAttributeSet] }
        set {
            fields[\.contentAttributeSet] = newValue
            apple.attributeSet = nil
        }
    }
    /// Whether the continuing app may ask for streams (F1). Set it before the activity is continued, with a delegate
    /// to receive them (``UserActivityDelegate/userActivity(_:didReceive:)``).
    public var supportsContinuationStreams: Bool {
        get { fields[\.supportsContinuationStreams] }
        set { fields[\.supportsContinuationStreams] = newValue }
    }
    /// The delegate: told before a save (A7) and when the activity was continued elsewhere (A8).
    public weak var delegate: UserActivityDelegate?

    /// The app this activity belongs to.
    public nonisolated let application: BatonApplication
    /// Whether this is the device's current activity (A9).
    public internal(set) var isCurrent = false
    /// False once invalidated: it can never become current again (A9).
    public internal(set) var isValid = true
    /// The payload format version it arrived in (continuing side), or the current one.
    public internal(set) var payloadVersion = ActivityPayload.currentVersion
    /// For an activity that arrived by continuation: the `file:` URLs in its `userInfo` (at any depth, the document
    /// URL included) that did not come through a folder synced with this device (C9, issue 25 item 2). Each names a
    /// file on the device the activity came from, not here: the library never opens one as a document (B6), and an
    /// app must not read the path here (it may be another file altogether); see docs/GUIDE.md, "Documents and
    /// synced folders". The URLs stay unchanged in `userInfo`, as C9 says. Empty for an activity made here.
    public nonisolated var foreignFileURLs: Set<URL> { fields[\.foreignFileURLs] }

    /// Whether `url` is one of ``foreignFileURLs``: a file on the other device, not readable here.
    public nonisolated func isForeignFileURL(_ url: URL) -> Bool {
        foreignFileURLs.contains(url)
    }

    /// For an activity that arrived by continuation: the agent's number for that continuation, and whether the
    /// originating activity supported streams then (F1, F2). Nil for one made here.
    var continuation: (number: UInt64, supportsStreams: Bool)?

    /// The id the agent knows this activity by (per app).
    nonisolated let identifier: UInt64
    /// Whether the app has given its state at least once since creation.
    var hasSaved = false
    /// Whether a save for the search index is scheduled after `needsSave` was set (G1; any thread sets it).
    nonisolated let searchSaveScheduled = Atomic<Bool>(false)
    /// Responders and documents sharing this activity (B1, B4), held weakly.
    var holders: [WeakHolder] = []
    /// Whether a responder or document ever held it: then it is framework-managed, and invalidated when the last
    /// one lets go (B4).
    var isManaged = false

    /// A new activity of `activityType` for `application` (the shared one unless given).
    /// - Throws: ``BatonCoreError`` `invalidActivityType` for an empty, overlong or control-character type (A1).
    /// Made from any thread or actor (``NSUserActivity`` is).
    public nonisolated init(activityType: String, application: BatonApplication = .shared) throws {
        try ActivityPayload.validateActivityType(activityType)
        self.activityType = activityType
        self.application = application
        self.identifier = application.nextActivityIdentifier()
        fields = ActivityFields()
    }

    /// An activity whose type failed validation (for the ``NSUserActivity`` initializer, which cannot throw): it
    /// is invalid from the start, so it is never advertised.
    nonisolated init(invalidType: String, application: BatonApplication) {
        activityType = invalidType
        self.application = application
        identifier = application.nextActivityIdentifier()
        fields = ActivityFields()
        isValid = false
    }

    /// An activity rebuilt from a payload that arrived from another device (C4).
    init(payload: ActivityPayload, application: BatonApplication) {
        activityType = payload.activityType
        self.application = application
        identifier = application.nextActivityIdentifier()
        fields = ActivityFields(
            ActivityFields.Values(
                title: payload.title,
                userInfo: payload.userInfo,
                webpageURL: payload.webpageURL,
                requiredUserInfoKeys: payload.requiredUserInfoKeys,
                keywords: payload.keywords,
                isEligibleForHandoff: payload.isEligibleForHandoff,
                isEligibleForSearch: payload.isEligibleForSearch,
                isEligibleForPublicIndexing: payload.isEligibleForPublicIndexing,
                expirationDate: payload.expirationDate,
                persistentIdentifier: payload.persistentIdentifier,
                targetContentIdentifier: payload.targetContentIdentifier,
                referrerURL: payload.referrerURL,
                contentAttributeSet: payload.contentAttributeSet,
                supportsContinuationStreams: payload.supportsContinuationStreams
            )
        )
        payloadVersion = payload.version
        // The agent handed file URLs of the other device in foreign form: back to the URLs they were, marked.
        let (userInfo, foreign) = SyncedFolders.unmarkingForeign(.dictionary(payload.userInfo))
        if !foreign.isEmpty, case .dictionary(let entries) = userInfo {
            fields.withLock { values in
                values.userInfo = entries
                values.foreignFileURLs = foreign
            }
        }
    }

    /// Sets the web page equivalent (A5).
    /// - Throws: ``BatonCoreError`` `unsupportedURLScheme` for anything but http or https; the old value stays.
    public func setWebpageURL(_ url: URL?) throws {
        if let url { try ActivityPayload.validateWebpageURL(url) }
        if fields.set(\.webpageURL, url) { application.activityChanged(self) }
    }

    /// Replaces `userInfo` with values of any type, checking each is a property-list value (A3, A4).
    /// - Throws: ``BatonCoreError`` `unsupportedType` naming the key path of the first value that is not; nothing
    ///   changes then.
    public func setUserInfo(_ values: [AnyHashable: Any]) throws {
        userInfo = try PropertyList.dictionary(from: values)
    }

    /// Merges entries into `userInfo` (A4).
    public func addUserInfoEntries(from entries: [String: PropertyList]) {
        fields.withLock { $0.userInfo.merge(entries) { $1 } }
    }

    /// Merges entries of any type, checking each is a property-list value (A3, A4).
    /// - Throws: ``BatonCoreError`` `unsupportedType` naming the first bad key path; nothing changes then.
    public func addUserInfoEntries(from entries: [AnyHashable: Any]) throws {
        let converted = try PropertyList.dictionary(from: entries)
        addUserInfoEntries(from: converted)
    }

    /// Makes this the device's one current activity (A9, C2): the agent starts advertising it at once.
    /// Ignored after ``invalidate()``.
    public func becomeCurrent() {
        guard isValid else { return }
        application.makeCurrent(self)
    }

    /// Stops being current, if it is (A9).
    public func resignCurrent() {
        application.resign(self)
    }

    /// Ends the activity for good: it disappears from every device at once and can never become current again (A9).
    public func invalidate() {
        guard isValid else { return }
        isValid = false
        application.invalidated(self)
    }

    // MARK: Deleting what was saved for search (G3)

    /// Deletes what `application`'s app saved in the device's search index under these persistent identifiers, and
    /// returns how many entries went. Sent in parts of at most `IPCMessage.maximumDeletedIdentifiers`; an empty list
    /// deletes nothing. Returns once the agent has deleted them.
    /// - Throws: ``ContinuationError`` `notConnected` when the app is not connected to its agent, `searchFailed` with
    ///   the index's reason, `agentGone` or `timedOut` when the agent did not answer, `identifierTooLong` (before
    ///   anything is sent) for an identifier above `IPCMessage.maximumPersistentIdentifierLength` bytes. Parts sent
    ///   before a failure stay deleted.
    @discardableResult
    public static func deleteSavedUserActivities(
        withPersistentIdentifiers persistentIdentifiers: [String],
        application: BatonApplication = .shared
    ) async throws -> Int {
        let limit = IPCMessage.maximumPersistentIdentifierLength
        if let long = persistentIdentifiers.first(where: { $0.utf8.count > limit }) {
            throw ContinuationError(
                .identifierTooLong,
                "a persistent identifier is \(long.utf8.count) bytes long, the limit is \(limit): \(long.prefix(64))…"
            )
        }
        var deleted: UInt64 = 0
        var start = 0
        while start < persistentIdentifiers.count {
            let end = min(start + IPCMessage.maximumDeletedIdentifiers, persistentIdentifiers.count)
            deleted += try await application.deleteSaved(Array(persistentIdentifiers[start..<end]))
            start = end
        }
        return Int(clamping: deleted)
    }

    /// Deletes everything `application`'s app saved in the device's search index, and returns how many entries went
    /// (G3). Returns once the agent has deleted them.
    /// - Throws: ``ContinuationError`` `notConnected`, `searchFailed`, `agentGone` or `timedOut`, as
    ///   ``deleteSavedUserActivities(withPersistentIdentifiers:application:)``.
    @discardableResult
    public static func deleteAllSavedUserActivities(application: BatonApplication = .shared) async throws -> Int {
        Int(clamping: try await application.deleteSaved(nil))
    }

    // MARK: Responders and documents (B1, B4)

    struct WeakHolder {
        weak var object: AnyObject?
    }

    /// Adds a responder or document that shares this activity (B1).
    public func addHolder(_ holder: AnyObject) {
        isManaged = true
        holders.removeAll { $0.object == nil }
        guard !holders.contains(where: { $0.object === holder }) else { return }
        holders.append(WeakHolder(object: holder))
    }

    /// Removes one; when none is left, the framework-managed activity is invalidated (B4).
    public func removeHolder(_ holder: AnyObject) {
        holders.removeAll { $0.object == nil || $0.object === holder }
        if isManaged, holders.isEmpty { invalidate() }
    }

    /// The responders sharing this activity that are still alive: Baton's (``UserActivityResponder``) and Apple-shaped
    /// ones (``NSUserActivityResponder``).
    var responders: [AnyObject] {
        holders.compactMap { holder in
            holder.object.flatMap { $0 is UserActivityResponder || $0 is NSUserActivityResponder ? $0 : nil }
        }
    }

    /// Asks `responder` to add its part of the state, in its own shape.
    func update(_ responder: AnyObject) {
        if let responder = responder as? UserActivityResponder {
            responder.updateUserActivityState(self)
        } else if let responder = responder as? NSUserActivityResponder {
            responder.updateUserActivityState(nsUserActivity)
        }
    }

    // MARK: Saving (A6, A7, B2, B3)

    /// Brings the state up to date if it needs it, then returns it as the payload that travels. Called when the
    /// agent asks (another device continues the activity). Delegates run only when ``needsSave`` is set or nothing
    /// was saved yet: the coalescing of A6.
    func save() throws -> ActivityPayload {
        if needsSave || !hasSaved {
            let responders = self.responders
            // B2: with responders, userInfo is emptied before anyone adds to it, then the delegate and every
            // responder add their parts. Emptying it first keeps what the delegate adds in userActivityWillSave
            // (issue 12: it used to be wiped before the responders ran).
            if !responders.isEmpty { userInfo = [:] }
            delegate?.userActivityWillSave(self)
            apple.delegate?.userActivityWillSave(nsUserActivity)
            for responder in responders { update(responder) }
            // B3: after every update, the app delegate (to stamp a version, say).
            application.delegate?.application(application, didUpdate: self)
            needsSave = false
            hasSaved = true
        }
        return try payload()
    }

    /// The activity's current state as a payload, without asking anyone.
    public func payload() throws -> ActivityPayload {
        var payload = try ActivityPayload(activityType: activityType)
        payload.title = title
        payload.userInfo = userInfo
        try payload.setWebpageURL(webpageURL)
        payload.requiredUserInfoKeys = requiredUserInfoKeys
        payload.keywords = keywords
        payload.isEligibleForHandoff = isEligibleForHandoff
        payload.isEligibleForSearch = isEligibleForSearch
        payload.isEligibleForPublicIndexing = isEligibleForPublicIndexing
        payload.expirationDate = expirationDate
        payload.persistentIdentifier = persistentIdentifier
        payload.targetContentIdentifier = targetContentIdentifier
        payload.referrerURL = referrerURL
        payload.contentAttributeSet = contentAttributeSet
        payload.supportsContinuationStreams = supportsContinuationStreams
        return payload
    }
}

/// Told about an activity's life (A7, A8, F3).
@MainActor
public protocol UserActivityDelegate: AnyObject {
    /// The system is about to take the activity's state (for another device): bring `userInfo` up to date (A7).
    func userActivityWillSave(_ userActivity: UserActivity)
    /// The activity was continued on another device (A8): close a draft, say.
    func userActivityWasContinued(_ userActivity: UserActivity)
    /// The app that continued the activity opened a continuation stream to it (F3; the activity has
    /// ``UserActivity/supportsContinuationStreams``). Keep `streams` (or a task using them) for as long as the
    /// exchange lasts: when the last copy goes, the stream closes. The default closes it at once.
    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams)
}

extension UserActivityDelegate {
    public func userActivityWillSave(_ userActivity: UserActivity) {}
    public func userActivityWasContinued(_ userActivity: UserActivity) {}
    public func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {}
}

/// An object that presents an activity (a view, a window, a controller): it adds its part of the state when the
/// activity is saved (B2) and restores itself from a continued one (C7).
@MainActor
public protocol UserActivityResponder: AnyObject {
    /// Add this responder's part to `activity.userInfo` (B2: it starts empty).
    func updateUserActivityState(_ activity: UserActivity)
    /// Show what `activity` describes (C7, B6).
    func restoreUserActivityState(_ activity: UserActivity)
}

extension UserActivityResponder {
    public func updateUserActivityState(_ activity: UserActivity) {}
    public func restoreUserActivityState(_ activity: UserActivity) {}
}

/// A base class for responders that own an activity through a `userActivity` property, as `UIResponder` does
/// (B1, B4): setting it shares the activity, setting nil lets go, and when no holder is left the activity is
/// invalidated. Types that cannot subclass call ``UserActivity/addHolder(_:)`` and ``UserActivity/removeHolder(_:)``.
@MainActor
open class ActivityResponder: UserActivityResponder {
    /// The activity this responder presents.
    public var userActivity: UserActivity? {
        didSet {
            guard userActivity !== oldValue else { return }
            userActivity?.addHolder(self)
            oldValue?.removeHolder(self)
        }
    }

    public init() {}

    isolated deinit {
        // B4: a responder that goes away lets go too.
        userActivity?.removeHolder(self)
    }

    open func updateUserActivityState(_ activity: UserActivity) {}
    open func restoreUserActivityState(_ activity: UserActivity) {}
}

/// A responder in Apple's shape (`UIResponder` / `NSResponder`'s Handoff part, issue 12): `userActivity` is an
/// ``NSUserActivity``, and `updateUserActivityState(_:)` / `restoreUserActivityState(_:)` take one. Setting
/// `userActivity` shares the activity (B1); setting nil, or the responder going away, lets go, and the activity is
/// invalidated when no holder is left (B4). Override the two methods and call `super`, as on Apple's systems.
@MainActor
open class NSUserActivityResponder: UserActivityRestoring {
    /// The activity this responder presents.
    open var userActivity: NSUserActivity? {
        didSet {
            guard userActivity !== oldValue else { return }
            userActivity?.activity.addHolder(self)
            oldValue?.activity.removeHolder(self)
        }
    }

    public init() {}

    isolated deinit {
        userActivity?.activity.removeHolder(self)
    }

    /// Add this responder's part with `activity.addUserInfoEntries(from:)` (B2: `userInfo` starts empty).
    open func updateUserActivityState(_ activity: NSUserActivity) {}
    /// Show what `activity` describes (C7).
    open func restoreUserActivityState(_ activity: NSUserActivity) {}
}
