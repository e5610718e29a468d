// Handoff code written the way iOS and macOS apps write it (issue 12): an activity manager off the main actor, a
// browser's tab helper, a view controller that is its activity's delegate and a responder, and app delegates with
// UIKit's and AppKit's exact signatures. Only the imports say Linux: on Apple's systems this file would start with
// `import UIKit` instead.
import BatonAppleNames
import Foundation

/// Builds reading activities wherever it is called from, as a manager class does (not on the main actor).
final class ActivityManager {
    static let readingType = "com.example.maps.reading"

    func readingActivity(place: String, identifier: String) -> NSUserActivity {
        let activity = NSUserActivity(activityType: ActivityManager.readingType)
        activity.title = "Reading about \(place)"
        activity.keywords = Set([place, "reading"])
        activity.isEligibleForSearch = true
        activity.isEligibleForHandoff = true
        activity.isEligibleForPrediction = true
        activity.persistentIdentifier = identifier
        let attributes = CSSearchableItemAttributeSet(itemContentType: "public.text")
        attributes.contentDescription = "All about \(place)"
        attributes.relatedUniqueIdentifier = identifier
        activity.contentAttributeSet = attributes
        activity.userInfo = ["place": place, "zoom": 12]
        activity.requiredUserInfoKeys = ["place", "zoom", "region", "version"]
        return activity
    }
}

extension ActivityManager {
    /// The user deleted a place: it should no longer be found by search (G3).
    func forget(_ identifier: NSUserActivityPersistentIdentifier, then done: @escaping () -> Void) {
        NSUserActivity.deleteSavedUserActivities(withPersistentIdentifiers: [identifier]) {
            done()
        }
    }

    func forgetAll() {
        NSUserActivity.deleteAllSavedUserActivities {}
    }
}

/// A browser's tab: its page is the current activity while the tab is shown.
final class TabActivity {
    static let type = "com.example.maps.web"
    var activity: NSUserActivity?

    func didShow(url: URL, title: String) {
        if activity == nil { activity = NSUserActivity(activityType: TabActivity.type) }
        activity?.webpageURL = url
        activity?.title = title
        activity?.becomeCurrent()
    }

    func didHide() {
        activity?.resignCurrent()
    }

    func close() {
        activity?.invalidate()
        activity = nil
    }
}

/// A screen that shows a map: its activity's delegate fills in the region before a save, and as a responder it adds
/// the zoom and restores a continued activity.
class MapViewController: UIResponder, NSUserActivityDelegate {
    var place = "Lisbon"
    var region = "Lisbon"
    var log: [String] = []

    func show(_ activity: NSUserActivity) {
        activity.delegate = self
        userActivity = activity
        activity.needsSave = true
        activity.becomeCurrent()
    }

    func userActivityWillSave(_ userActivity: NSUserActivity) {
        log.append("willSave")
        userActivity.addUserInfoEntries(from: ["region": region])
    }

    override func updateUserActivityState(_ activity: NSUserActivity) {
        log.append("update")
        // userInfo starts empty here (Apple: it is cleared before the update callbacks): add all this screen shows.
        activity.addUserInfoEntries(from: ["place": place, "zoom": 14])
        super.updateUserActivityState(activity)
    }

    override func restoreUserActivityState(_ activity: NSUserActivity) {
        log.append("restore")
        region = activity.userInfo?["region"] as? String ?? "?"
        super.restoreUserActivityState(activity)
    }
}

/// An iOS app delegate.
class AppDelegate: UIResponder, UIApplicationDelegate {
    var events: [String] = []
    let viewController = MapViewController()

    func application(_ application: UIApplication, willContinueUserActivityWithType userActivityType: String) -> Bool {
        events.append("willContinue \(userActivityType)")
        return true
    }

    func application(
        _ application: UIApplication,
        continue userActivity: NSUserActivity,
        restorationHandler: @escaping ([UIUserActivityRestoring]?) -> Void
    ) -> Bool {
        events.append("continue \(userActivity.activityType)")
        restorationHandler([viewController])
        return true
    }

    func application(_ application: UIApplication, didFailToContinueUserActivityWithType userActivityType: String, error: Error) {
        let error = error as NSError
        if error.domain == NSCocoaErrorDomain, error.code == NSUserCancelledError {
            events.append("cancelled")
        } else {
            events.append("failed \(error.code): \(error.localizedDescription)")
        }
    }

    func application(_ application: UIApplication, didUpdate userActivity: NSUserActivity) {
        events.append("didUpdate")
        userActivity.addUserInfoEntries(from: ["version": 2])
    }
}

/// A macOS app delegate, AppKit's signature (the restoration handler takes a non-optional array).
class MacAppDelegate: NSResponder, NSApplicationDelegate {
    var continued: [String] = []
    let window = MapViewController()

    func application(
        _ application: NSApplication,
        continue userActivity: NSUserActivity,
        restorationHandler: @escaping ([NSUserActivityRestoring]) -> Void
    ) -> Bool {
        continued.append(userActivity.webpageURL?.absoluteString ?? userActivity.activityType)
        restorationHandler([window])
        return true
    }
}

/// A delegate whose `continue` has a signature Apple's does not (a typo): Baton says so instead of staying silent.
class MistypedDelegate: UIResponder, UIApplicationDelegate {
    func application(_ application: UIApplication, continue userActivity: NSUserActivity, restoration: ([Any]) -> Void) -> Bool {
        true
    }
}

/// An activity delegate whose save takes a while (a large document serialized on the spot).
final class SlowSaver: NSUserActivityDelegate {
    func userActivityWillSave(_ userActivity: NSUserActivity) {
        Thread.sleep(forTimeInterval: 0.4)
        userActivity.addUserInfoEntries(from: ["slow": true])
    }
}
