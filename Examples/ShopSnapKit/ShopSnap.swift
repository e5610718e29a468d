import Baton
import BatonAppleNames
import Foundation

// The seeds' ShopSnap tutorial, ported: a shopping list (the view activity) and an item being edited (the edit
// activity), each owned by a screen that is a responder, with the app delegate stamping a version into every payload
// (B3, H1). Written as the tutorial writes it, with Apple's names from BatonAppleNames: on iOS this file would start
// with `import UIKit` instead, and the screens would be view controllers (views stay the app's business on Linux).
//
// One departure, everywhere an activity is made: `NSUserActivity(activityType:application:)` rather than the
// tutorial's `NSUserActivity(activityType:)`. The screens are given their application object instead of always using
// `UIApplication.shared`, because `baton demo` runs two ShopSnaps (a laptop's and a desktop's, two
// `BatonApplication`s) in one process; the `shopsnap` executable passes `UIApplication.shared`.

/// The activity types, as in the tutorial's Info.plist (Constants.swift there).
public let ActivityTypeView = "com.razeware.shopsnap.view"
public let ActivityTypeEdit = "com.razeware.shopsnap.edit"
/// The `userInfo` keys.
public let ActivityItemsKey = "shopsnap.items.key"
public let ActivityItemKey = "shopsnap.item.key"
/// An item's photo: `userInfo` says only its size (a photo is far over the 3 KB `userInfo` should stay under); the
/// bytes come over a continuation stream when the other device asks (F1–F3).
public let ActivityPhotoSizeKey = "shopsnap.photo.size.key"
/// A list's receipts: `file:` URLs of scans kept in a synced folder (Baton's addition to the tutorial). The agents
/// rewrite URLs inside a synced folder to the other device's copy of that folder (C9); the app does nothing for it.
public let ActivityReceiptsKey = "shopsnap.receipts.key"
/// The payload version (H1), stamped by the app delegate.
public let ActivityVersionKey = "shopsnap.version.key"
public let ActivityVersionValue = "1.0"

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
public final class ListViewController: UIResponder {
    /// The application the screen's activities belong to (the tutorial's are always `UIApplication.shared`).
    public let application: UIApplication
    public private(set) var items: [String] = []
    /// Scans of the list's receipts, as files (C9).
    public var receipts: [URL] = []
    /// The list's persistent identifier in the search index (G1, G3): one entry per list.
    public var listIdentifier = "shopping-list"

    public init(application: UIApplication = .shared) {
        self.application = application
    }

    /// Shows `items` and offers them to the account's other devices (the tutorial's `viewDidLoad`, once the list is
    /// loaded).
    public func show(_ items: [String]) {
        self.items = items
        startUserActivity()
    }

    /// Makes the view activity current (A9, C2).
    public func startUserActivity() {
        // The tutorial's `NSUserActivity(activityType: ActivityTypeView)`, for this screen's application object.
        let activity = NSUserActivity(activityType: ActivityTypeView, application: application)
        activity.title = Self.title(items)
        activity.userInfo = receipts.isEmpty ? [ActivityItemsKey: items] : [ActivityItemsKey: items, ActivityReceiptsKey: receipts]
        // G1, G2: the list can be found again with `baton search` (its items are its keywords) and continued from
        // there; saving it again under the same persistent identifier replaces the earlier entry.
        activity.isEligibleForSearch = true
        activity.persistentIdentifier = listIdentifier
        activity.keywords = Set(items)
        userActivity = activity
        userActivity?.becomeCurrent()
    }

    /// Stops offering the list: the activity is invalidated, gone from every device at once (A9).
    public func stopUserActivity() {
        userActivity?.invalidate()
    }

    /// What other devices list for a list of `items`: "Shopping list (1 item)", "Shopping list (3 items)".
    static func title(_ items: [String]) -> String {
        "Shopping list (\(items.count) \(items.count == 1 ? "item" : "items"))"
    }

    /// Adds an item: the state changed, so the next save will ask for it (A6).
    public func add(_ item: String) {
        items.append(item)
        userActivity?.title = Self.title(items)
        userActivity?.keywords = Set(items)
        userActivity?.needsSave = true
    }

    /// B2: `userInfo` was emptied before this is called; add the list.
    public override func updateUserActivityState(_ activity: NSUserActivity) {
        activity.addUserInfoEntries(from: [ActivityItemsKey: items])
        if !receipts.isEmpty { activity.addUserInfoEntries(from: [ActivityReceiptsKey: receipts]) }
        super.updateUserActivityState(activity)
    }

    /// C7: the continued list replaces this one (the tutorial merges it into a stored list; ShopSnap here keeps
    /// none).
    public override func restoreUserActivityState(_ activity: NSUserActivity) {
        if let userInfo = activity.userInfo, let importedItems = userInfo[ActivityItemsKey] as? [Any] {
            items = importedItems.compactMap { $0 as? String }
        } else {
            items = []
        }
        receipts = (activity.userInfo?[ActivityReceiptsKey] as? [Any])?.compactMap { $0 as? URL } ?? []
        super.restoreUserActivityState(activity)
    }
}

/// The detail screen: owns the edit activity while an item is edited, and the item's photo, which it sends over a
/// continuation stream when the other device asks for it (F1–F3, the talk's "state too big for userInfo").
public final class DetailViewController: UIResponder {
    /// The application the screen's activities belong to.
    public let application: UIApplication
    public private(set) var text = ""
    /// The item's photo, if it has one (here, or as it arrived from the other device).
    public private(set) var photo: Data?
    /// How many times the state was asked for (A6: far fewer than keystrokes).
    public private(set) var saves = 0
    /// Where the screen reports what happens (the app sets it).
    public var report: @Sendable (String) -> Void = { _ in }
    /// Told when the edit activity went to another device (A8), and when a photo arrived over a stream.
    public var continued: ((NSUserActivity) -> Void)?
    public var photoArrived: (@Sendable (Data) -> Void)?

    public init(application: UIApplication = .shared) {
        self.application = application
    }

    /// Starts editing `item` (the tutorial's `textFieldDidBeginEditing`): makes the edit activity current. With a
    /// photo, the activity supports continuation streams and says the photo's size; the photo itself stays here.
    public func edit(_ item: String, photo: Data? = nil) {
        text = item
        self.photo = photo
        // The tutorial's `NSUserActivity(activityType: ActivityTypeEdit)`, for this screen's application object.
        let activity = NSUserActivity(activityType: ActivityTypeEdit, application: application)
        activity.title = "Editing “\(item)”"
        activity.userInfo = [ActivityItemKey: text]
        activity.supportsContinuationStreams = photo != nil
        let delegate = EditActivityDelegate(photo: photo, report: report, continued: continued)
        activityDelegate = delegate
        activity.delegate = delegate
        userActivity = activity
        userActivity?.becomeCurrent()
    }

    /// The edit activity's delegate (held here: an activity holds its delegate weakly).
    var activityDelegate: EditActivityDelegate?

    /// One keystroke (the tutorial's `textFieldTextDidChange`): cheap, only marks the state dirty (A6).
    public func type(_ character: Character) {
        text.append(character)
        userActivity?.needsSave = true
    }

    /// Done editing (the tutorial's `textFieldShouldReturn`): the edit activity is invalidated (A9).
    public func finish() {
        userActivity?.invalidate()
    }

    /// B2: `userInfo` was emptied before this is called; add the item being edited, and its photo's size.
    public override func updateUserActivityState(_ activity: NSUserActivity) {
        saves += 1
        activity.addUserInfoEntries(from: [ActivityItemKey: text])
        if let photo { activity.addUserInfoEntries(from: [ActivityPhotoSizeKey: photo.count]) }
        super.updateUserActivityState(activity)
    }

    /// C7: shows the item being edited on the other device; when it has a photo, asks the originating device for
    /// it over a continuation stream (F2).
    public override func restoreUserActivityState(_ activity: NSUserActivity) {
        if let userInfo = activity.userInfo, let itemToRestore = userInfo[ActivityItemKey] as? String {
            text = itemToRestore
        } else {
            text = ""
        }
        photo = nil
        if let size = activity.userInfo?[ActivityPhotoSizeKey] as? Int, activity.supportsContinuationStreams {
            fetchPhoto(of: text, size: size, from: activity)
        }
        super.restoreUserActivityState(activity)
    }

    /// F2: sends the item's name, ends this side, and reads the photo until the other side ends.
    func fetchPhoto(of item: String, size: Int, from activity: NSUserActivity) {
        let report = self.report
        let arrived = photoArrived
        let started = DispatchTime.now().uptimeNanoseconds
        activity.getContinuationStreams { input, output, error in
            guard let input, let output else {
                report("cannot get the photo of “\(item)”: \(error.map { "\($0)" } ?? "no streams")")
                return
            }
            let streams = StreamPair(input: input, output: output)
            // Issue 30: direct (the two apps' own TLS connection) or relayed (through both agents).
            let path = input.property(forKey: .batonStreamPath) as? String ?? "relayed"
            Thread.detachNewThread {
                streams.write(Data(item.utf8))
                let photo = streams.readAll()
                let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
                let complete = photo.count == size ? "" : " (expected \(size): the stream ended early)"
                report(
                    "received the photo of “\(item)” over a continuation stream: \(photo.count) bytes in "
                        + String(format: "%.1f ms", milliseconds) + ", checksum \(checksum(photo)), \(path)\(complete)"
                )
                arrived?(photo)
            }
        }
    }
}

/// The edit activity's `NSUserActivityDelegate`: says when it went to another device (A8), and sends the item's
/// photo when that device asks (F3). Not the screen itself: delegates are called from any thread, screens live on
/// the main actor.
final class EditActivityDelegate: NSUserActivityDelegate, @unchecked Sendable {
    let photo: Data?
    let report: @Sendable (String) -> Void
    let continued: ((NSUserActivity) -> Void)?

    init(photo: Data?, report: @escaping @Sendable (String) -> Void, continued: ((NSUserActivity) -> Void)?) {
        self.photo = photo
        self.report = report
        self.continued = continued
    }

    func userActivityWasContinued(_ userActivity: NSUserActivity) {
        continued?(userActivity)
    }

    /// F3: the other device asks for the photo: it writes the item's name and ends its side; the photo goes back,
    /// then this side ends. On a thread of its own: the streams block, as Apple's do without a run loop.
    func userActivity(_ userActivity: NSUserActivity, didReceive inputStream: InputStream, outputStream: OutputStream) {
        let photo = self.photo ?? Data()
        let report = self.report
        let streams = StreamPair(input: inputStream, output: outputStream)
        Thread.detachNewThread {
            let request = String(decoding: streams.readAll(), as: UTF8.self)
            streams.write(photo)
            report("sent the photo of “\(request)” over a continuation stream: \(photo.count) bytes")
        }
    }
}

/// A checksum to compare a photo on both devices by eye: FNV-1a, 64 bits, in hex.
public func checksum(_ data: Data) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return String(hash, radix: 16)
}

/// A photo for examples: `count` bytes of a fixed pattern (no camera on a terminal).
public func examplePhoto(count: Int) -> Data {
    let tile = Data((0..<4093).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
    var photo = Data(capacity: count)
    while photo.count + tile.count <= count { photo.append(tile) }
    photo.append(tile.prefix(count - photo.count))
    return photo
}

/// Both streams of a continuation, used the blocking way (no run loop): open, write then close the output, read the
/// input to its end. `@unchecked Sendable`: handed to one thread, which alone uses them.
struct StreamPair: @unchecked Sendable {
    let input: InputStream
    let output: OutputStream

    /// Writes `data` and closes the output: the other side's reader then ends (a half-close).
    func write(_ data: Data) {
        output.open()
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return }
            var offset = 0
            while offset < data.count {
                let written = output.write(base + offset, maxLength: min(64 << 10, data.count - offset))
                if written <= 0 { break }
                offset += written
            }
        }
        output.close()
    }

    /// Reads until the other side ends its output (or the stream fails).
    func readAll() -> Data {
        input.open()
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = input.read(&buffer, maxLength: buffer.count)
            if count <= 0 { break }
            data.append(buffer, count: count)
        }
        return data
    }
}

/// The app delegate: versions every payload (B3, H1) and routes continuations to the right screen (C5, C7). The app
/// makes it the application's delegate (`UIApplication.shared.delegate = app`), as UIKit's `UIApplicationMain` does.
public final class ShopSnapApp: UIResponder, UIApplicationDelegate {
    public let application: UIApplication
    public let list: ListViewController
    public let detail: DetailViewController
    /// Where the app reports what happens.
    public var report: @Sendable (String) -> Void
    /// Seconds the app blocks before giving its state (a busy app), for showing C8.
    public var saveDelay: Double = 0

    public init(application: UIApplication = .shared, report: @escaping @Sendable (String) -> Void) {
        self.application = application
        self.list = ListViewController(application: application)
        self.detail = DetailViewController(application: application)
        self.report = report
        detail.report = { line in report(line) }
    }

    /// B3: runs after every update of the state, whichever screen made it; the place to stamp the version (H1).
    public func application(_ application: UIApplication, didUpdate userActivity: NSUserActivity) {
        if saveDelay > 0 { Thread.sleep(forTimeInterval: saveDelay) }
        userActivity.addUserInfoEntries(from: [ActivityVersionKey: ActivityVersionValue])
    }

    /// C5: a continuation starts; the state is on its way.
    public func application(_ application: UIApplication, willContinueUserActivityWithType userActivityType: String) -> Bool {
        report("will continue \(userActivityType)")
        return true
    }

    /// C5, C7: the state arrived. Refuses a payload of another version (H1), else hands it to the screen it is for.
    public func application(
        _ application: UIApplication,
        continue userActivity: NSUserActivity,
        restorationHandler: @escaping ([UIUserActivityRestoring]?) -> Void
    ) -> Bool {
        let version = userActivity.userInfo?[ActivityVersionKey] as? String
        guard version == ActivityVersionValue else {
            report("cannot continue: payload version \(version ?? "none") (H1)")
            return false
        }
        switch userActivity.activityType {
        case ActivityTypeView:
            restorationHandler([list])
            report("continued list: \(list.items.joined(separator: ", "))")
            if !list.receipts.isEmpty {
                report("receipts: \(list.receipts.map { $0.isFileURL ? $0.path : $0.absoluteString }.joined(separator: ", "))")
            }
        case ActivityTypeEdit:
            restorationHandler([detail])
            report("continued editing: \(detail.text)")
        default:
            return false
        }
        return true
    }

    /// C5, C6, C8: the continuation failed. The tutorial shows an alert unless the person cancelled it
    /// (`(error as NSError).code == NSUserCancelledError`); ShopSnap reports every failure, with its reason.
    public func application(_ application: UIApplication, didFailToContinueUserActivityWithType userActivityType: String, error: Error) {
        report("failed to continue \(userActivityType): \(error)")
    }
}

/// Tells when the originating side's activity went to another device (A8).
public final class ContinuedReporter: NSUserActivityDelegate {
    let report: (String) -> Void

    public init(report: @escaping (String) -> Void) {
        self.report = report
    }

    public func userActivityWasContinued(_ userActivity: NSUserActivity) {
        report("\(userActivity.activityType) was continued on another device")
    }
}
