import Baton
import Foundation

// The seeds' ShopSnap tutorial, ported: a shopping list (the view activity) and an item being edited (the edit
// activity), each owned by a responder, with the app delegate stamping a version into every payload (B3, H1).

/// The activity types, as in the tutorial's Info.plist.
public let activityTypeView = "com.razeware.shopsnap.view"
public let activityTypeEdit = "com.razeware.shopsnap.edit"
/// The `userInfo` keys.
public let activityItemsKey = "shopsnap.items.key"
public let activityItemKey = "shopsnap.item.key"
public let activityVersionKey = "shopsnap.version.key"
public let activityVersionValue = "1.0"

/// ShopSnap's bundle identifier and `Info.plist`, as in Examples/ShopSnap.app (for apps registered on the fly:
/// `baton demo`, tests).
public let shopSnapBundleIdentifier = "com.razeware.ShopSnap"
public let shopSnapInfoPlist = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
    	<key>CFBundleIdentifier</key>
    	<string>com.razeware.ShopSnap</string>
    	<key>CFBundleName</key>
    	<string>ShopSnap</string>
    	<key>CFBundleExecutable</key>
    	<string>shopsnap</string>
    	<key>BatonTeamIdentifier</key>
    	<string>RAZEWARE01</string>
    	<key>NSUserActivityTypes</key>
    	<array>
    		<string>com.razeware.shopsnap.view</string>
    		<string>com.razeware.shopsnap.edit</string>
    	</array>
    </dict>
    </plist>

    """

/// Writes `ShopSnap.app` into `folder`, its executable a link to `executable` when given.
public func writeShopSnapBundle(in folder: URL, executable: URL? = nil) throws {
    let bundle = folder.appendingPathComponent("ShopSnap.app")
    try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
    try Data(shopSnapInfoPlist.utf8).write(to: bundle.appendingPathComponent("Info.plist"))
    if let executable {
        try FileManager.default.createSymbolicLink(at: bundle.appendingPathComponent("shopsnap"), withDestinationURL: executable)
    }
}

/// The list screen: owns the view activity.
@MainActor
public final class ListViewController: ActivityResponder {
    public private(set) var items: [String] = []

    public override init() {}

    /// Shows `items` and offers them to the account's other devices.
    public func show(_ items: [String], in application: BatonApplication) throws {
        self.items = items
        let activity = try UserActivity(activityType: activityTypeView, application: application)
        activity.title = Self.title(items)
        userActivity = activity
        activity.becomeCurrent()
    }

    /// What other devices list for a list of `items`: "Shopping list (1 item)", "Shopping list (3 items)".
    static func title(_ items: [String]) -> String {
        "Shopping list (\(items.count) \(items.count == 1 ? "item" : "items"))"
    }

    /// Adds an item: the state changed, so the next save will ask for it (A6).
    public func add(_ item: String) {
        items.append(item)
        userActivity?.title = Self.title(items)
        userActivity?.needsSave = true
    }

    public override func updateUserActivityState(_ activity: UserActivity) {
        activity.addUserInfoEntries(from: [activityItemsKey: .array(items.map(PropertyList.string))])
    }

    public override func restoreUserActivityState(_ activity: UserActivity) {
        items = activity.userInfo[activityItemsKey]?.arrayValue?.compactMap(\.stringValue) ?? []
    }
}

/// The detail screen: owns the edit activity while an item is edited.
@MainActor
public final class DetailViewController: ActivityResponder {
    public private(set) var text = ""
    /// How many times the state was asked for (A6: far fewer than keystrokes).
    public private(set) var saves = 0

    public override init() {}

    /// Starts editing `item`.
    public func edit(_ item: String, in application: BatonApplication) throws {
        text = item
        let activity = try UserActivity(activityType: activityTypeEdit, application: application)
        activity.title = "Editing “\(item)”"
        userActivity = activity
        activity.becomeCurrent()
    }

    /// One keystroke: cheap, only marks the state dirty (A6).
    public func type(_ character: Character) {
        text.append(character)
        userActivity?.needsSave = true
    }

    /// Done editing: the responder lets go, and the activity is invalidated (B4).
    public func finish() {
        userActivity = nil
    }

    public override func updateUserActivityState(_ activity: UserActivity) {
        saves += 1
        activity.addUserInfoEntries(from: [activityItemKey: .string(text)])
    }

    public override func restoreUserActivityState(_ activity: UserActivity) {
        text = activity.userInfo[activityItemKey]?.stringValue ?? ""
    }
}

/// The app delegate: versions every payload (B3, H1) and routes continuations to the right screen (C5, C7).
@MainActor
public final class ShopSnapApp: BatonApplicationDelegate {
    public let application: BatonApplication
    public let list = ListViewController()
    public let detail = DetailViewController()
    /// Where the app reports what happens.
    public var report: (String) -> Void
    /// Seconds the app blocks before giving its state (a busy app), for showing C8.
    public var saveDelay: Double = 0

    public init(application: BatonApplication = .shared, report: @escaping (String) -> Void) {
        self.application = application
        self.report = report
        application.delegate = self
    }

    public func application(_ application: BatonApplication, didUpdate userActivity: UserActivity) {
        if saveDelay > 0 { Thread.sleep(forTimeInterval: saveDelay) }
        userActivity.addUserInfoEntries(from: [activityVersionKey: .string(activityVersionValue)])
    }

    public func application(_ application: BatonApplication, willContinueUserActivityWithType userActivityType: String) -> Bool {
        report("will continue \(userActivityType)")
        return true
    }

    public func application(
        _ application: BatonApplication,
        continue userActivity: UserActivity,
        restorationHandler: @escaping @MainActor ([UserActivityResponder]) -> Void
    ) -> Bool {
        guard userActivity.userInfo[activityVersionKey]?.stringValue == activityVersionValue else {
            report("cannot continue: payload version \(userActivity.userInfo[activityVersionKey]?.stringValue ?? "none") (H1)")
            return false
        }
        switch userActivity.activityType {
        case activityTypeView:
            restorationHandler([list])
            report("continued list: \(list.items.joined(separator: ", "))")
        case activityTypeEdit:
            restorationHandler([detail])
            report("continued editing: \(detail.text)")
        default:
            return false
        }
        return true
    }

    public func application(_ application: BatonApplication, didFailToContinueUserActivityWithType userActivityType: String, error: Error) {
        report("failed to continue \(userActivityType): \(error)")
    }
}

/// Tells when the originating side's activity went to another device (A8).
@MainActor
public final class ContinuedReporter: UserActivityDelegate {
    let report: (String) -> Void

    public init(report: @escaping (String) -> Void) {
        self.report = report
    }

    public func userActivityWasContinued(_ userActivity: UserActivity) {
        report("\(userActivity.activityType) was continued on another device")
    }
}
