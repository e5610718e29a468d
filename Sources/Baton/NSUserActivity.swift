import BatonCore
import Foundation

/// `NSUserActivityTypeBrowsingWeb`: the type of a web-page activity (E2, E3).
public let NSUserActivityTypeBrowsingWeb = "NSUserActivityTypeBrowsingWeb"
/// `NSUserActivityDocumentURLKey`: where a document activity keeps its URL (B5).
public let NSUserActivityDocumentURLKey = "NSUserActivityDocumentURL"

/// Apple's delegate protocol, for code written against `NSUserActivity`.
@MainActor
public protocol NSUserActivityDelegate: AnyObject {
    func userActivityWillSave(_ userActivity: NSUserActivity)
    func userActivityWasContinued(_ userActivity: NSUserActivity)
}

extension NSUserActivityDelegate {
    public func userActivityWillSave(_ userActivity: NSUserActivity) {}
    public func userActivityWasContinued(_ userActivity: NSUserActivity) {}
}

/// `NSUserActivity` for Linux: Apple's names and `[AnyHashable: Any]` `userInfo` over ``UserActivity``, so Handoff
/// code written for Apple platforms compiles unchanged (ISSUE 5 part 5).
///
/// Where Apple raises an Objective-C exception (a non-plist value in `userInfo`, a `file:` webpage URL), this
/// type keeps the previous value and writes the error to standard error: a setter cannot throw. The throwing
/// ``setUserInfo(_:)`` and ``setWebpageURL(_:)`` report it to the caller instead.
@MainActor
open class NSUserActivity {
    /// The activity underneath.
    public let activity: UserActivity
    private var relay: DelegateRelay?

    /// `init(activityType:)`. An invalid type (empty, control characters) is reported on standard error and the
    /// activity can never become current; `UserActivity(activityType:)` throws for it instead (A1).
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
    }

    /// Wraps an existing activity (a continued one).
    public init(_ activity: UserActivity) {
        self.activity = activity
    }

    static func report(_ error: Error) {
        FileHandle.standardError.write(Data("NSUserActivity: \(error)\n".utf8))
    }

    public var activityType: String { activity.activityType }

    public var title: String? {
        get { activity.title }
        set { activity.title = newValue }
    }

    /// `userInfo` as Foundation values; a value that is not a property-list type is refused (A3).
    public var userInfo: [AnyHashable: Any]? {
        get { activity.userInfo.isEmpty ? nil : activity.userInfo.mapValues(\.anyValue) }
        set {
            do { try activity.setUserInfo(newValue ?? [:]) } catch { Self.report(error) }
        }
    }

    /// Replaces `userInfo`, throwing for a value that is not a property-list type (A3).
    public func setUserInfo(_ values: [AnyHashable: Any]) throws {
        try activity.setUserInfo(values)
    }

    public func addUserInfoEntries(from otherDictionary: [AnyHashable: Any]) {
        do { try activity.addUserInfoEntries(from: otherDictionary) } catch { Self.report(error) }
    }

    public var webpageURL: URL? {
        get { activity.webpageURL }
        set {
            do { try activity.setWebpageURL(newValue) } catch { Self.report(error) }
        }
    }

    /// Sets the webpage URL, throwing for anything but http and https (A5).
    public func setWebpageURL(_ url: URL?) throws {
        try activity.setWebpageURL(url)
    }

    public var needsSave: Bool {
        get { activity.needsSave }
        set { activity.needsSave = newValue }
    }

    public var requiredUserInfoKeys: Set<String>? {
        get { activity.requiredUserInfoKeys }
        set { activity.requiredUserInfoKeys = newValue }
    }

    public var keywords: Set<String> {
        get { activity.keywords }
        set { activity.keywords = newValue }
    }

    public var isEligibleForHandoff: Bool {
        get { activity.isEligibleForHandoff }
        set { activity.isEligibleForHandoff = newValue }
    }

    public var isEligibleForSearch: Bool {
        get { activity.isEligibleForSearch }
        set { activity.isEligibleForSearch = newValue }
    }

    public var isEligibleForPublicIndexing: Bool {
        get { activity.isEligibleForPublicIndexing }
        set { activity.isEligibleForPublicIndexing = newValue }
    }

    public var expirationDate: Date? {
        get { activity.expirationDate }
        set { activity.expirationDate = newValue }
    }

    public var persistentIdentifier: String? {
        get { activity.persistentIdentifier }
        set { activity.persistentIdentifier = newValue }
    }

    public var targetContentIdentifier: String? {
        get { activity.targetContentIdentifier }
        set { activity.targetContentIdentifier = newValue }
    }

    public var referrerURL: URL? {
        get { activity.referrerURL }
        set { activity.referrerURL = newValue }
    }

    public var supportsContinuationStreams: Bool {
        get { activity.supportsContinuationStreams }
        set { activity.supportsContinuationStreams = newValue }
    }

    public weak var delegate: NSUserActivityDelegate? {
        didSet {
            relay = delegate.map { _ in DelegateRelay(owner: self) }
            activity.delegate = relay
        }
    }

    public func becomeCurrent() { activity.becomeCurrent() }
    public func resignCurrent() { activity.resignCurrent() }
    public func invalidate() { activity.invalidate() }

    /// Passes ``UserActivityDelegate`` calls on with the wrapper as argument.
    final class DelegateRelay: UserActivityDelegate {
        weak var owner: NSUserActivity?

        init(owner: NSUserActivity) {
            self.owner = owner
        }

        func userActivityWillSave(_ userActivity: UserActivity) {
            guard let owner else { return }
            owner.delegate?.userActivityWillSave(owner)
        }

        func userActivityWasContinued(_ userActivity: UserActivity) {
            guard let owner else { return }
            owner.delegate?.userActivityWasContinued(owner)
        }
    }
}
