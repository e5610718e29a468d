import BatonCore
import Foundation

/// `NSUserActivityTypeBrowsingWeb`: the type of a web-page activity (E2, E3).
public let NSUserActivityTypeBrowsingWeb = "NSUserActivityTypeBrowsingWeb"
/// `NSUserActivityPersistentIdentifier`: what `persistentIdentifier` holds.
public typealias NSUserActivityPersistentIdentifier = String
/// `NSUserActivityDocumentURLKey`: where a document activity keeps its URL (B5).
public let NSUserActivityDocumentURLKey = "NSUserActivityDocumentURL"

/// Apple's delegate protocol, for code written against `NSUserActivity`. Not tied to the main actor, as Apple's is
/// not: a helper class that builds activities off the main actor may be their delegate (issue 12). Baton calls it on
/// the main actor.
public protocol NSUserActivityDelegate: AnyObject {
    func userActivityWillSave(_ userActivity: NSUserActivity)
    func userActivityWasContinued(_ userActivity: NSUserActivity)
    /// The app that continued the activity opened a continuation stream to it (F3; the activity has
    /// `supportsContinuationStreams`). Called on a thread of its own, not the main actor: reading and writing the
    /// streams here, blocking, holds up nothing else. Open both streams, and keep them for as long as the exchange
    /// lasts; the stream is over once both are closed or gone. The default drops them: the stream closes at once.
    func userActivity(_ userActivity: NSUserActivity, didReceive inputStream: InputStream, outputStream: OutputStream)
}

extension NSUserActivityDelegate {
    public func userActivityWillSave(_ userActivity: NSUserActivity) {}
    public func userActivityWasContinued(_ userActivity: NSUserActivity) {}
    public func userActivity(_ userActivity: NSUserActivity, didReceive inputStream: InputStream, outputStream: OutputStream) {}
}

/// `NSUserActivity` for Linux: Apple's names and `[AnyHashable: Any]` `userInfo` over ``UserActivity``, so Handoff
/// code written for Apple platforms compiles unchanged (ISSUE 5 part 5, issue 12).
///
/// Usable from any thread or actor, as Apple's is: the values live behind a lock shared with the ``UserActivity``
/// underneath, and what needs the app's connection (``becomeCurrent()``, ``resignCurrent()``, ``invalidate()``, a
/// title other devices show) runs on the main actor, at once when called there and otherwise in the order asked.
///
/// Where Apple raises an Objective-C exception (a non-plist value in `userInfo`, a `file:` webpage URL), this
/// type keeps the previous value and writes the error to standard error: a setter cannot throw. The throwing
/// ``setUserInfo(_:)`` and ``setWebpageURL(_:)`` report it to the caller instead.
// @unchecked: every stored property is a `let` of a Sendable type; the delegate lives in the activity's
// `AppleSide`, behind its lock.
open class NSUserActivity: @unchecked Sendable {
    /// The activity underneath.
    public let activity: UserActivity
    let fields: ActivityFields

    /// `init(activityType:)`, for the shared application. An invalid type (empty, control characters) is reported on
    /// standard error and the activity can never become current; `UserActivity(activityType:)` throws for it
    /// instead (A1).
    public convenience init(activityType: String) {
        self.init(activityType: activityType, application: .shared)
    }

    /// An activity of `application` rather than the shared one: for a process that plays several apps (tests, the
    /// embedded mode, `baton demo`).
    public init(activityType: String, application: BatonApplication) {
        do {
            activity = try UserActivity(activityType: activityType, application: application)
        } catch {
            Self.report(error)
            // A usable object that can never become current.
            activity = UserActivity(invalidType: activityType, application: application)
        }
        fields = activity.fields
        activity.apple.adopt(self)
    }

    /// Wraps an existing activity (a continued one). It shares the activity's values and delegate with every other
    /// wrapper of it; ``UserActivity/nsUserActivity`` gives the one the library passes to delegates.
    public init(_ activity: UserActivity) {
        self.activity = activity
        fields = activity.fields
        activity.apple.adopt(self)
    }

    static func report(_ error: Error) {
        FileHandle.standardError.write(Data("NSUserActivity: \(error)\n".utf8))
    }

    public var activityType: String { activity.activityType }

    public var title: String? {
        get { fields[\.title] }
        set { if fields.set(\.title, newValue) { republish() } }
    }

    /// `userInfo` as Foundation values (numbers as `NSNumber`); a value that is not a property-list type is refused
    /// (A3).
    public var userInfo: [AnyHashable: Any]? {
        get {
            let values = fields[\.userInfo]
            return values.isEmpty ? nil : values.mapValues(\.anyValue)
        }
        set {
            do { try setUserInfo(newValue ?? [:]) } catch { Self.report(error) }
        }
    }

    /// Baton's addition: the `file:` URLs in a continued activity's `userInfo` that name files on the device it
    /// came from, not in a folder synced here (C9, issue 25 item 2); never open them (docs/GUIDE.md). Empty for an
    /// activity made here. ``UserActivity/foreignFileURLs``.
    public var foreignFileURLs: Set<URL> { fields[\.foreignFileURLs] }

    /// Baton's addition: whether `url` is one of ``foreignFileURLs``.
    public func isForeignFileURL(_ url: URL) -> Bool { foreignFileURLs.contains(url) }

    /// Replaces `userInfo`, throwing for a value that is not a property-list type (A3).
    public func setUserInfo(_ values: [AnyHashable: Any]) throws {
        fields[\.userInfo] = try PropertyList.dictionary(from: values)
    }

    public func addUserInfoEntries(from otherDictionary: [AnyHashable: Any]) {
        do {
            let entries = try PropertyList.dictionary(from: otherDictionary)
            fields.withLock { $0.userInfo.merge(entries) { $1 } }
        } catch {
            Self.report(error)
        }
    }

    public var webpageURL: URL? {
        get { fields[\.webpageURL] }
        set {
            do { try setWebpageURL(newValue) } catch { Self.report(error) }
        }
    }

    /// Sets the webpage URL, throwing for anything but http and https (A5).
    public func setWebpageURL(_ url: URL?) throws {
        if let url { try ActivityPayload.validateWebpageURL(url) }
        if fields.set(\.webpageURL, url) { republish() }
    }

    /// As ``UserActivity/needsSave``: the delegate is asked for fresh state the next time it is needed, once.
    public var needsSave: Bool {
        get { fields[\.needsSave] }
        set {
            fields[\.needsSave] = newValue
            if newValue { activity.application.needsSaveSet(activity) }
        }
    }

    public var requiredUserInfoKeys: Set<String>? {
        get { fields[\.requiredUserInfoKeys] }
        set { fields[\.requiredUserInfoKeys] = newValue }
    }

    public var keywords: Set<String> {
        get { fields[\.keywords] }
        set { fields[\.keywords] = newValue }
    }

    public var isEligibleForHandoff: Bool {
        get { fields[\.isEligibleForHandoff] }
        set { if fields.set(\.isEligibleForHandoff, newValue) { republish() } }
    }

    public var isEligibleForSearch: Bool {
        get { fields[\.isEligibleForSearch] }
        set { fields[\.isEligibleForSearch] = newValue }
    }

    /// Kept and carried, with no public effect on Linux: there is no public index (``UserActivity/isEligibleForPublicIndexing``).
    public var isEligibleForPublicIndexing: Bool {
        get { fields[\.isEligibleForPublicIndexing] }
        set { fields[\.isEligibleForPublicIndexing] = newValue }
    }

    /// Apple's Siri-prediction flag: kept, with no effect on this platform.
    public var isEligibleForPrediction: Bool {
        get { fields[\.isEligibleForPrediction] }
        set { fields[\.isEligibleForPrediction] = newValue }
    }

    public var expirationDate: Date? {
        get { fields[\.expirationDate] }
        set { if fields.set(\.expirationDate, newValue) { republish() } }
    }

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

    /// What a search result shows for it. The set is kept by reference, as Apple's: changes made to it after it was
    /// assigned travel too.
    public var contentAttributeSet: SearchableItemAttributeSet? {
        get { activity.apple.attributeSet(orFrom: fields[\.contentAttributeSet]) }
        set {
            activity.apple.attributeSet = newValue
            fields[\.contentAttributeSet] = newValue?.propertyList
        }
    }

    public var supportsContinuationStreams: Bool {
        get { fields[\.supportsContinuationStreams] }
        set { fields[\.supportsContinuationStreams] = newValue }
    }

    /// The delegate, shared by every wrapper of the activity (weak, as Apple's).
    public weak var delegate: NSUserActivityDelegate? {
        get { activity.apple.delegate }
        set { activity.apple.delegate = newValue }
    }

    /// Deletes what the app (``BatonApplication/shared``) saved for search with these persistent identifiers (G3),
    /// then calls `handler` on the main actor, whether or not that worked: as on Apple's systems the handler learns
    /// nothing more, and a failure (no agent, say) is written to standard error. The Swift-first
    /// ``UserActivity/deleteSavedUserActivities(withPersistentIdentifiers:application:)`` throws it instead.
    open class func deleteSavedUserActivities(
        withPersistentIdentifiers persistentIdentifiers: [NSUserActivityPersistentIdentifier],
        completionHandler handler: @escaping () -> Void
    ) {
        let done = CompletionHandler(handler)
        Task { @MainActor in
            await deleteSavedUserActivities(withPersistentIdentifiers: persistentIdentifiers)
            done.call()
        }
    }

    /// Deletes everything the app saved for search (G3), then calls `handler` on the main actor, whether or not that
    /// worked (a failure is written to standard error), as
    /// ``deleteSavedUserActivities(withPersistentIdentifiers:completionHandler:)``.
    open class func deleteAllSavedUserActivities(completionHandler handler: @escaping () -> Void) {
        let done = CompletionHandler(handler)
        Task { @MainActor in
            await deleteAllSavedUserActivities()
            done.call()
        }
    }

    /// The async form Swift gives Apple's completion-handler method: returns once the deletion finished, whether or not
    /// it worked (a failure is written to standard error).
    public class func deleteSavedUserActivities(withPersistentIdentifiers persistentIdentifiers: [NSUserActivityPersistentIdentifier]) async {
        do {
            try await UserActivity.deleteSavedUserActivities(withPersistentIdentifiers: persistentIdentifiers)
        } catch {
            report(error)
        }
    }

    /// The async form of ``deleteAllSavedUserActivities(completionHandler:)``: returns once the deletion finished,
    /// whether or not it worked (a failure is written to standard error).
    public class func deleteAllSavedUserActivities() async {
        do {
            try await UserActivity.deleteAllSavedUserActivities()
        } catch {
            report(error)
        }
    }

    // `isolation` is the caller's, filled in by the compiler: on the main actor the call takes effect before it
    // returns; from anywhere else it is queued for the main actor, in order.

    /// Makes this the device's current activity (A9, C2).
    public func becomeCurrent(isolation: isolated (any Actor)? = #isolation) {
        let activity = self.activity
        activity.application.perform(from: isolation) { activity.becomeCurrent() }
    }

    /// Stops being current, if it is (A9).
    public func resignCurrent(isolation: isolated (any Actor)? = #isolation) {
        let activity = self.activity
        activity.application.perform(from: isolation) { activity.resignCurrent() }
    }

    /// Ends the activity for good (A9).
    public func invalidate(isolation: isolated (any Actor)? = #isolation) {
        let activity = self.activity
        activity.application.perform(from: isolation) { activity.invalidate() }
    }

    /// What other devices show changed: tell the agent, if the activity is current. Queued (a setter has no
    /// caller's isolation to go by); the values themselves are already set.
    func republish() {
        let activity = self.activity
        activity.application.operations.yield { activity.application.activityChanged(activity) }
    }
}

/// A completion handler of Apple's shape (not `@Sendable`: Apple-shaped callers pass closures that capture their own
/// state), carried to the main actor and called there once.
// @unchecked: the handler is only called, once, on the main actor, after the caller has let go of it (it is
// `@escaping` and the caller's method has returned); Apple's systems likewise call it on a queue of their choosing.
struct CompletionHandler: @unchecked Sendable {
    let handler: () -> Void

    init(_ handler: @escaping () -> Void) { self.handler = handler }

    @MainActor func call() { handler() }
}

/// The Apple-facing side of a ``UserActivity``: its ``NSUserActivityDelegate`` and the wrapper the library passes
/// to it, both weak, behind a lock (any thread may set the delegate).
// @unchecked: both references are read and written only under `lock`.
final class AppleSide: @unchecked Sendable {
    private let lock = NSLock()
    private weak var _delegate: NSUserActivityDelegate?
    private weak var wrapper: NSUserActivity?

    var delegate: NSUserActivityDelegate? {
        get { lock.withLock { _delegate } }
        set { lock.withLock { _delegate = newValue } }
    }

    private var _attributeSet: SearchableItemAttributeSet?

    /// The attribute set assigned through ``NSUserActivity/contentAttributeSet``.
    var attributeSet: SearchableItemAttributeSet? {
        get { lock.withLock { _attributeSet } }
        set { lock.withLock { _attributeSet = newValue } }
    }

    /// The assigned attribute set, or one made from the payload form (a continued activity's) and kept.
    func attributeSet(orFrom values: [String: PropertyList]?) -> SearchableItemAttributeSet? {
        lock.withLock {
            if _attributeSet == nil, let values { _attributeSet = SearchableItemAttributeSet(propertyList: values) }
            return _attributeSet
        }
    }

    /// Whether the app holds the activity through an ``NSUserActivity`` (one is alive): then its Apple-shaped delegate
    /// is preferred for a continuation stream (F3).
    var hasWrapper: Bool {
        lock.withLock { wrapper != nil }
    }

    /// Makes `wrapper` the one delegates are given, unless one is alive already.
    func adopt(_ candidate: NSUserActivity) {
        lock.withLock { if wrapper == nil { wrapper = candidate } }
    }

    /// The wrapper delegates are given: the live one, or a new one for `activity`.
    func wrapper(for activity: UserActivity) -> NSUserActivity {
        if let existing = lock.withLock({ wrapper }) { return existing }
        return NSUserActivity(activity)
    }
}
