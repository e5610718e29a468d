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

/// An activity delegate whose save takes a while (a large document serialized on the spot): the first save lasts
/// until ``finishSaving()`` (at most 10 s), so a test acts while it is under way and ends it when it has seen what it
/// waited for, rather than after a guessed delay.
final class SlowSaver: NSUserActivityDelegate {
    private let condition = NSCondition()
    private var started = 0
    private var finished = false

    /// How many saves have begun (so a test can act while one is under way, not after a guessed delay).
    var savesStarted: Int { condition.withLock { started } }
    /// The count of saves begun, told as it grows (the newest only to a late reader, the count so far at once).
    let starts: AsyncStream<Int>
    private let told: AsyncStream<Int>.Continuation

    init() {
        (starts, told) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
        told.yield(0)
    }

    /// Lets the save under way (and any later one) end.
    func finishSaving() {
        condition.withLock {
            finished = true
            condition.broadcast()
        }
    }

    func userActivityWillSave(_ userActivity: NSUserActivity) {
        // The slow serialization itself: what the test is about (C6: a second continue arrives meanwhile).
        condition.withLock {
            started += 1
            told.yield(started)
            let limit = Date().addingTimeInterval(10)
            while !finished && condition.wait(until: limit) {}
        }
        userActivity.addUserInfoEntries(from: ["slow": true])
    }
}

// MARK: Continuation streams (F1–F3), as Apple's samples use them

/// The originating side: the activity's delegate answers a stream with a reply, with blocking reads and writes
/// right in the delegate method, which (as on Apple's systems) is not called on the main thread.
final class NoteSender: NSUserActivityDelegate {
    let note: Data
    private let lock = NSLock()
    private var _requests: [Data] = []
    var requests: [Data] { lock.lock(); defer { lock.unlock() }; return _requests }

    init(note: Data) {
        self.note = note
    }

    func userActivity(_ userActivity: NSUserActivity, didReceive inputStream: InputStream, outputStream: OutputStream) {
        inputStream.open()
        outputStream.open()
        let request = StreamIO.readAll(inputStream)
        lock.lock()
        _requests.append(request)
        lock.unlock()
        StreamIO.writeAll(note, to: outputStream)
        outputStream.close()
        inputStream.close()
    }
}

/// The continuing side, blocking: ask for the streams, send the request, close the output, read the reply.
enum NoteFetcher {
    static func fetch(_ activity: NSUserActivity, request: Data, completion: @escaping @Sendable (Data?, Error?) -> Void) {
        activity.getContinuationStreams { inputStream, outputStream, error in
            guard let inputStream = inputStream, let outputStream = outputStream else {
                completion(nil, error)
                return
            }
            inputStream.open()
            outputStream.open()
            StreamIO.writeAll(request, to: outputStream)
            outputStream.close()
            let reply = StreamIO.readAll(inputStream)
            inputStream.close()
            completion(reply, inputStream.streamError)
        }
    }
}

enum StreamIO {
    static func readAll(_ stream: InputStream) -> Data {
        var data = Data()
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 65_536)
        defer { buffer.deallocate() }
        while true {
            let count = stream.read(buffer, maxLength: 65_536)
            if count <= 0 { break }
            data.append(buffer, count: count)
        }
        return data
    }

    static func writeAll(_ data: Data, to stream: OutputStream) {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            guard let base = bytes.bindMemory(to: UInt8.self).baseAddress else { return }
            var offset = 0
            while offset < bytes.count {
                let written = stream.write(base + offset, maxLength: bytes.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}

/// The continuing side with a run loop: both streams scheduled on a thread's run loop, driven by their events.
final class StreamPump: StreamDelegate {
    let input: InputStream
    let output: OutputStream
    let request: Data
    var sent = 0
    var reply = Data()
    var events: [String] = []
    var finished = false

    init(input: InputStream, output: OutputStream, request: Data) {
        self.input = input
        self.output = output
        self.request = request
    }

    /// Runs the exchange on a new thread's run loop; returns the reply and the events seen, in order.
    func run(completion: @escaping (Data, [String]) -> Void) {
        let thread = Thread {
            self.input.delegate = self
            self.output.delegate = self
            self.input.schedule(in: .current, forMode: .default)
            self.output.schedule(in: .current, forMode: .default)
            self.input.open()
            self.output.open()
            let deadline = Date().addingTimeInterval(20)
            while !self.finished && Date() < deadline {
                _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(0.1))
            }
            completion(self.reply, self.events)
        }
        thread.start()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        let side = aStream === input ? "in" : "out"
        switch eventCode {
        case .openCompleted:
            events.append("\(side) open")
        case .hasSpaceAvailable:
            guard sent < request.count else { return }
            let count = request.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Int in
                let base = bytes.bindMemory(to: UInt8.self).baseAddress!
                return output.write(base + sent, maxLength: min(100_000, request.count - sent))
            }
            if count > 0 { sent += count }
            if sent == request.count {
                events.append("out done")
                output.close()
            }
        case .hasBytesAvailable:
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = input.read(&buffer, maxLength: buffer.count)
            if count > 0 { reply.append(contentsOf: buffer[0..<count]) }
        case .endEncountered:
            events.append("\(side) end")
            input.close()
            finished = true
        case .errorOccurred:
            events.append("\(side) error \(aStream.streamError.map { "\($0)" } ?? "?")")
            finished = true
        default:
            break
        }
    }
}
