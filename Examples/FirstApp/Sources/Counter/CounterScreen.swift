import Baton
import Foundation

/// The app's one screen: a number that goes up. Its activity carries the number to your other devices.
@MainActor
final class CounterScreen: ActivityResponder {
    /// The activity type this app hands off, listed in Info.plist's NSUserActivityTypes.
    static let activityType = "com.example.counter.counting"

    /// The app's link to its agent: `.shared`, or another for a second app in the same process (tests).
    let application: BatonApplication
    private(set) var count = 0

    init(application: BatonApplication = .shared) {
        self.application = application
    }

    /// Shows `count` and offers it to your other devices (A9).
    func show(_ count: Int) throws {
        self.count = count
        let activity = try UserActivity(activityType: Self.activityType, application: application)
        activity.title = "Counting from \(count)"
        activity.delegate = self
        userActivity = activity
        activity.becomeCurrent()
    }

    func increment() {
        count += 1
        userActivity?.needsSave = true                  // A6: the state is asked for only when needed
    }

    override func updateUserActivityState(_ activity: UserActivity) {   // B2: userInfo starts empty
        activity.userInfo["count"] = .integer(Int64(count))
    }

    override func restoreUserActivityState(_ activity: UserActivity) {  // C7
        count = activity.userInfo["count"]?.integerValue.map { Int($0) } ?? 0
    }
}

// Delegate methods go in an extension that declares the conformance: there a misspelled one is a compiler warning
// ("nearly matches defaulted requirement"); in the class body it compiles silently and is never called.
extension CounterScreen: UserActivityDelegate {
    func userActivityWasContinued(_ userActivity: UserActivity) {     // A8: another device took over
        say("counter: continued on another device at \(count)")
    }
}

/// Receives continuations (C5, C7).
@MainActor
final class AppDelegate {
    let screen: CounterScreen

    init(application: BatonApplication = .shared) {
        screen = CounterScreen(application: application)
    }
}

extension AppDelegate: BatonApplicationDelegate {
    func application(_ application: BatonApplication, continue userActivity: UserActivity,
                     restorationHandler: @escaping @MainActor ([UserActivityResponder]) -> Void) -> Bool {
        guard userActivity.activityType == CounterScreen.activityType else { return false }
        restorationHandler([screen])                    // calls screen.restoreUserActivityState(_:)
        try? screen.show(screen.count)                  // and offers it from here now
        say("counter: continued, counting from \(screen.count)")
        return true
    }

    func application(_ application: BatonApplication, didFailToContinueUserActivityWithType userActivityType: String, error: Error) {
        say("counter: could not continue \(userActivityType): \(error)")
    }
}

/// Writes a line to standard output at once. A launched app's output goes where the agent's goes (a file, the journal),
/// where `print` would hold it in a buffer until the app exits.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
