import Baton
import BatonEmbedded
import BatonInMemory
import Foundation
import Testing

/// The guide's first app (docs/GUIDE.md, "Your first app"; issue 24 part 7), compiled and run: the code between the
/// markers below is Examples/FirstApp/Sources/Counter/CounterScreen.swift after its imports, word for word (a test
/// checks it), and the guide shows that file and the example's Package.swift, main.swift and Info.plist whole (a test
/// checks that too). So the guide's code compiles as written, and hands off between two devices.
@MainActor
@Suite("The guide's first app: compiled as written, and handed off between two devices (issue 24)", .serialized)
struct FirstAppTests {
    static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()
    static let example = packageRoot.appendingPathComponent("Examples/FirstApp")

    @Test("the copy here is the example's CounterScreen.swift, and the guide shows each of the example's files whole")
    func copiesAgree() throws {
        let screen = try String(contentsOf: Self.example.appendingPathComponent("Sources/Counter/CounterScreen.swift"), encoding: .utf8)
        let here = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let begin = try #require(here.range(of: "// BEGIN CounterScreen.swift\n"))
        let end = try #require(here.range(of: "// END CounterScreen.swift\n"))
        let copy = String(here[begin.upperBound..<end.lowerBound])
        #expect(screen.hasSuffix(copy) && screen.dropLast(copy.count).allSatisfy { $0 != "{" }, "the copy differs from the example's file")
        let guide = try String(contentsOf: Self.packageRoot.appendingPathComponent("docs/GUIDE.md"), encoding: .utf8)
        for file in ["Package.swift", "Sources/Counter/CounterScreen.swift", "Sources/Counter/main.swift", "Counter.app/Info.plist"] {
            let text = try String(contentsOf: Self.example.appendingPathComponent(file), encoding: .utf8)
            #expect(guide.contains(text), "docs/GUIDE.md does not show Examples/FirstApp/\(file) as it is")
        }
    }

    @Test("the counter counted on the laptop continues on the desktop at the same number, and the laptop is told (C5, C7, A8)")
    func handsOff() async throws {
        let info = try Data(contentsOf: Self.example.appendingPathComponent("Counter.app/Info.plist"))
        // In memory (issue 26 item 3): no socket; nothing here waits for a deadline.
        let devices = try await InMemoryDevices.start(names: ["laptop", "desktop"], infoPlists: [info])
        let laptop = BatonApplication()
        let desktop = BatonApplication()
        let onLaptop = AppDelegate(application: laptop)
        let onDesktop = AppDelegate(application: desktop)
        laptop.delegate = onLaptop
        desktop.delegate = onDesktop
        try await laptop.connect(bundleIdentifier: "com.example.Counter", socketPath: devices.agents[0].socketPath)
        try await desktop.connect(bundleIdentifier: "com.example.Counter", socketPath: devices.agents[1].socketPath)

        try onLaptop.screen.show(5)
        onLaptop.screen.increment()
        onLaptop.screen.increment()
        for _ in 0..<500 where await devices.agents[1].nearbyItems().isEmpty {
            try await Task.sleep(for: .milliseconds(10))
        }
        let outcome = await devices.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil && outcome.app == "com.example.Counter", "\(outcome)")
        for _ in 0..<500 where onDesktop.screen.count != 7 {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(onDesktop.screen.count == 7, "the state the laptop saved arrived (B2, C7)")
        #expect(desktop.currentActivity?.title == "Counting from 7", "the desktop offers it from there now")
        laptop.disconnect()
        desktop.disconnect()
        await devices.shutdown()
    }
}

// BEGIN CounterScreen.swift
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
// END CounterScreen.swift
