import BatonCore
import Foundation

/// A document whose activity the framework manages (SEMANTICS B5, B6): opening it makes its activity current with
/// the document's URL under ``documentURLKey``; closing it invalidates the activity; on the continuing device a
/// document activity the app does not handle itself opens the document and restores it.
///
/// Subclass to add state: override ``updateUserActivityState(_:)`` (call super: it puts the URL back after B2
/// emptied `userInfo`) and ``restoreUserActivityState(_:)``, in Baton's shape (``UserActivity``) or in Apple's
/// `UIDocument` shape (``NSUserActivity``, issue 12): the first passes on to the second.
@MainActor
open class ActivityDocument: UserActivityResponder, UserActivityRestoring {
    /// `NSUserActivityDocumentURLKey`: where a document activity keeps the document's URL.
    public static let documentURLKey = "NSUserActivityDocumentURL"

    /// The document's location.
    public let fileURL: URL
    /// The activity type: given, or the `NSUbiquitousDocumentUserActivityType` of the document type with this
    /// file's extension (``BatonApplication/documentActivityTypes``).
    public let activityType: String
    /// The activity, while the document is open.
    public private(set) var userActivity: UserActivity?
    let application: BatonApplication

    /// A document at `fileURL`.
    /// - Throws: ``BatonCoreError`` `invalidActivityType` when no type is given and none is declared for the
    ///   file's extension.
    public init(fileURL: URL, activityType: String? = nil, application: BatonApplication = .shared) throws {
        guard let type = activityType ?? application.documentActivityTypes[fileURL.pathExtension.lowercased()] else {
            throw BatonCoreError(
                .invalidActivityType,
                "no document type with the extension \"\(fileURL.pathExtension)\" declares NSUbiquitousDocumentUserActivityType (B5)"
            )
        }
        try ActivityPayload.validateActivityType(type)
        self.fileURL = fileURL
        self.activityType = type
        self.application = application
    }

    /// Opens the document: its activity becomes current (B5).
    open func open() throws {
        guard userActivity == nil else { return }
        let activity = try UserActivity(activityType: activityType, application: application)
        activity.userInfo[Self.documentURLKey] = .url(fileURL)
        activity.addHolder(self)
        userActivity = activity
        activity.becomeCurrent()
    }

    /// Closes the document: it lets go of its activity, which is invalidated when no one else holds it (B4, B5).
    open func close() {
        guard let activity = userActivity else { return }
        userActivity = nil
        activity.removeHolder(self)
    }

    /// Puts the document's URL into the activity (B2 starts from an empty `userInfo`), then calls the
    /// `NSUserActivity` form.
    open func updateUserActivityState(_ activity: UserActivity) {
        activity.userInfo[Self.documentURLKey] = .url(fileURL)
        updateUserActivityState(activity.nsUserActivity)
    }

    /// `UIDocument`'s form: add the document's state with `addUserInfoEntries(from:)`. The default does nothing.
    open func updateUserActivityState(_ activity: NSUserActivity) {}

    /// Shows what a continued activity describes (B6). The default calls the `NSUserActivity` form.
    open func restoreUserActivityState(_ activity: UserActivity) {
        restoreUserActivityState(activity.nsUserActivity)
    }

    /// `UIDocument`'s form (and what a `restorationHandler` calls). The default does nothing.
    open func restoreUserActivityState(_ activity: NSUserActivity) {}

    isolated deinit {
        userActivity?.removeHolder(self)
    }
}

extension BatonApplication {
    /// Reads `CFBundleDocumentTypes` from an `Info.plist` (XML or binary): each type's extensions map to its
    /// `NSUbiquitousDocumentUserActivityType` (B5).
    /// - Throws: ``BatonCoreError`` when the file is not a property list.
    public func loadDocumentTypes(fromInfoPlistAt url: URL) throws {
        let plist = try PropertyList.decode(try Data(contentsOf: url)).value
        for type in plist["CFBundleDocumentTypes"]?.arrayValue ?? [] {
            guard let activityType = type["NSUbiquitousDocumentUserActivityType"]?.stringValue else { continue }
            for case .string(let fileExtension) in type["CFBundleTypeExtensions"]?.arrayValue ?? [] {
                documentActivityTypes[fileExtension.lowercased()] = activityType
            }
        }
    }
}
