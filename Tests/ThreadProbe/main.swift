import Baton
import BatonAppleNames
import Foundation

// thread-probe: an app that says, for every call Baton makes to it, whether it ran on the process's first thread
// (issue 25 item 5). ThreadProbeCLITests installs it as ShopSnap (same bundle, types and team) on two devices:
//
//   thread-probe offer   the originating app: offers a list that supports streams and search, answers a stream,
//                        then makes its state too large to send, so the next continuation fails
//   thread-probe         the continuing app, as the agent launches it: continues, deletes what it saved for search,
//                        opens a stream and reads the reply
//
// Each call prints "probe: CALL main=true|false". THREAD_PROBE_STARTUP picks how the process starts its main actor:
//   baton      BatonApplication.main (the GUIDE's startup): the main run loop on the first thread
//   loop       a foreign main loop on the first thread (as GTK's would be) that polls
//              BatonApplication.mainQueueDescriptor and calls runMainQueue()
//   dispatch   the main queue handed to dispatchMain(), which is what an `async` main does on Linux: the first thread
//              ends, and the main actor runs on a worker (the old startup, kept to show the probe can tell)
//   task       BatonApplication.main called from inside a task, as from an async main: refused (exit status 70)

func say(_ line: String) {
    FileHandle.standardOutput.write(Data("\(line)\n".utf8))
}

/// Said from every callback: nonisolated, so a call made off the main actor would be seen as such too.
func record(_ call: String) {
    say("probe: \(call) main=\(Thread.isMainThread)")
}

let listType = "com.razeware.shopsnap.view"

// MARK: The originating app (Baton's own shapes)

@MainActor
final class OfferScreen: ActivityResponder, UserActivityDelegate {
    let items = ["Milk", "Eggs"]
    /// Streams answered, kept until their exchange ends.
    var exchanges: [Task<Void, Never>] = []
    /// Whether the state is to be over the 1 MiB a continuation may carry, so the next continuation fails.
    var tooLarge = false

    func offer() throws {
        let activity = try UserActivity(activityType: listType)
        activity.title = "Probe list"
        activity.supportsContinuationStreams = true
        activity.isEligibleForSearch = true
        activity.persistentIdentifier = "probe-list"
        activity.delegate = self
        userActivity = activity
        activity.becomeCurrent()
    }

    override func updateUserActivityState(_ activity: UserActivity) {
        record("updateUserActivityState")
        activity.userInfo["shopsnap.items.key"] = .array(items.map { .string($0) })
        if tooLarge { activity.userInfo["blob"] = .data(Data(count: 1_100_000)) }
    }

    func userActivityWillSave(_ userActivity: UserActivity) {
        record("userActivityWillSave")
    }

    func userActivityWasContinued(_ userActivity: UserActivity) {
        record("userActivityWasContinued")
    }

    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {
        record("didReceiveStreams")
        exchanges.append(Task { @MainActor in
            do {
                var request = Data()
                for try await chunk in streams.input { request.append(chunk) }
                record("streamRequestRead")
                try await streams.output.write(Data("pong:".utf8) + request)
                try await streams.output.finish()
                record("streamReplyWritten")
            } catch {
                say("probe: stream failed: \(error)")
            }
            // The next continuation must fail (for didFailToContinue on the other device).
            self.tooLarge = true
            userActivity.needsSave = true
            say("probe: state too large now")
        })
    }
}

@MainActor
final class OfferDelegate: BatonApplicationDelegate {
    // Apple's form: Baton's default didUpdate passes the activity on to it.
    func application(_ application: BatonApplication, didUpdate userActivity: NSUserActivity) {
        record("didUpdate")
    }
}

// MARK: The continuing app (Apple's shapes, as most Handoff code is written)

final class ListScreen: UIResponder {
    override func restoreUserActivityState(_ activity: NSUserActivity) {
        record("restoreUserActivityState")
        super.restoreUserActivityState(activity)
    }
}

final class ContinuingDelegate: UIResponder, UIApplicationDelegate {
    let list = ListScreen()

    func application(_ application: UIApplication, willContinueUserActivityWithType userActivityType: String) -> Bool {
        record("willContinueUserActivityWithType")
        return true
    }

    func application(_ application: UIApplication, continue userActivity: NSUserActivity,
                     restorationHandler: @escaping ([UIUserActivityRestoring]?) -> Void) -> Bool {
        record("continue")
        restorationHandler([list])
        let activity = userActivity.activity
        Task { @MainActor in
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                NSUserActivity.deleteAllSavedUserActivities {
                    record("deleteAllSavedUserActivities.completionHandler")
                    done.resume()
                }
            }
            do {
                let streams = try await activity.continuationStreams()
                record("continuationStreams.resumed")
                try await streams.output.write(Data("ping".utf8))
                try await streams.output.finish()
                var reply = Data()
                for try await chunk in streams.input { reply.append(chunk) }
                record("streamReplyRead")
                say("probe: streamed \(String(decoding: reply, as: UTF8.self))")
            } catch {
                say("probe: stream failed: \(error)")
            }
        }
        return true
    }

    func application(_ application: UIApplication, didFailToContinueUserActivityWithType userActivityType: String, error: Error) {
        record("didFailToContinueUserActivityWithType")
    }
}

// MARK: Running

@MainActor
func run() async -> Int32 {
    let application = BatonApplication.shared
    let offering = CommandLine.arguments.dropFirst().first == "offer"
    let offerDelegate = OfferDelegate()
    let continuingDelegate = ContinuingDelegate()
    application.delegate = offering ? offerDelegate : continuingDelegate
    let events = Task { @MainActor in
        for await event in application.events {
            switch event {
            case .willContinue: record("events.willContinue")
            case .continued: record("events.continued")
            case .failed: record("events.failed")
            }
        }
    }
    defer { events.cancel() }
    do {
        try await application.connect(bundleIdentifier: ProcessInfo.processInfo.environment["BATON_BUNDLE_IDENTIFIER"] ?? "com.razeware.ShopSnap")
    } catch {
        say("probe: cannot connect: \(error)")
        return 1
    }
    say("probe: connected to \(application.deviceName ?? "?")")
    let screen = OfferScreen()
    if offering {
        do {
            try screen.offer()
        } catch {
            say("probe: cannot offer: \(error)")
            return 1
        }
        say("probe: offering")
    }
    while application.isConnected {
        try? await Task.sleep(for: .milliseconds(50))
    }
    say("probe: the agent went away")
    return 0
}

switch ProcessInfo.processInfo.environment["THREAD_PROBE_STARTUP"] ?? "baton" {
case "task":
    Task { BatonApplication.main { say("probe: ran inside a task") } }
    dispatchMain()
case "dispatch":
    Task { @MainActor in exit(await run()) }
    dispatchMain()
case "loop":
    Task { @MainActor in exit(await run()) }
    let descriptor = BatonApplication.mainQueueDescriptor
    while true {
        var watched = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        if poll(&watched, 1, -1) > 0 { BatonApplication.runMainQueue() }
    }
default:
    BatonApplication.main {
        let status = await run()
        if status != 0 { exit(status) }
    }
}
