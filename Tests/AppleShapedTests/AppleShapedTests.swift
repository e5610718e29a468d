@testable import Baton
import BatonAppleNames
import BatonEmbedded
import BatonInMemory
import Foundation
import Testing

/// Runs the Apple-shaped code of AppleShapedCode.swift on two embedded devices (issue 12, Show).
@Suite("Apple-shaped Handoff code on Baton (issue 12)", .serialized)
@MainActor
struct AppleShapedTests {
    static let info = """
        <plist version="1.0"><dict>
        <key>CFBundleIdentifier</key><string>com.example.Maps</string>
        <key>CFBundleExecutable</key><string>maps</string>
        <key>BatonTeamIdentifier</key><string>MAPSTEAM01</string>
        <key>NSUserActivityTypes</key><array>
          <string>com.example.maps.reading</string><string>com.example.maps.web</string>
        </array>
        </dict></plist>
        """

    /// Two devices; the laptop's app is `UIApplication.shared`, the desktop's another application object.
    @MainActor
    final class World {
        let devices: InMemoryDevices
        let desktop = BatonApplication()

        init() async throws {
            // In memory on virtual time (issue 26 item 3): no socket, and no deadline passes unless a test moves the clock.
            devices = try await InMemoryDevices.start(names: ["laptop", "desktop"], infoPlists: [Data(AppleShapedTests.info.utf8)]) { $0.saveDeadline = 10 }
            try await UIApplication.shared.connect(bundleIdentifier: "com.example.Maps", socketPath: devices.agents[0].socketPath)
            try await desktop.connect(bundleIdentifier: "com.example.Maps", socketPath: devices.agents[1].socketPath)
        }

        func waitUntilNearby(_ type: String? = nil) async throws {
            for _ in 0..<1_000 {
                let items = await devices.agents[1].nearbyItems(describe: type != nil)
                if let item = items.first, type == nil || item.activityType == type { return }
                try await Task.sleep(for: .milliseconds(2))
            }
            Issue.record("nothing nearby")
        }

        /// Continues on the desktop; returns when the continuation has ended for the app, with the activity if it
        /// was continued.
        @discardableResult
        func continueOnDesktop() async -> UserActivity? {
            var events = desktop.events.makeAsyncIterator()
            _ = await devices.agents[1].continueNearby(device: "laptop")
            while let event = await events.next(isolation: #isolation) {
                if case .willContinue = event { continue }
                if case .continued(let activity) = event { return activity }
                break
            }
            return nil
        }

        func stop() async {
            UIApplication.shared.delegate = nil
            UIApplication.shared.disconnect()
            desktop.disconnect()
            await devices.shutdown()
        }
    }

    @Test("manager off the main actor, view controller as delegate and responder, UIKit app delegate: every callback in Apple's order, once", .timeLimit(.minutes(1)))
    func uiKitShapes() async throws {
        let world = try await World()
        let laptopDelegate = AppDelegate()
        UIApplication.shared.delegate = laptopDelegate
        let desktopDelegate = AppDelegate()
        world.desktop.delegate = desktopDelegate
        desktopDelegate.viewController.region = "?"

        let activity = await Task.detached { ActivityManager().readingActivity(place: "Lisbon", identifier: "place-1") }.value
        let screen = MapViewController()
        screen.show(activity)
        try await world.waitUntilNearby()
        let continued = try #require(await world.continueOnDesktop())

        #expect(screen.log == ["willSave", "update"], "the delegate, then the responder, once")
        #expect(laptopDelegate.events == ["didUpdate"])
        #expect(desktopDelegate.events == ["willContinue com.example.maps.reading", "continue com.example.maps.reading"])
        #expect(desktopDelegate.viewController.log == ["restore"] && desktopDelegate.viewController.region == "Lisbon")
        let info = continued.nsUserActivity.userInfo ?? [:]
        #expect(info["place"] as? String == "Lisbon" && info["region"] as? String == "Lisbon")
        #expect(info["zoom"] as? Int == 14 && info["version"] as? Double == 2.0)
        #expect(continued.nsUserActivity.contentAttributeSet?.contentDescription == "All about Lisbon")
        #expect(continued.persistentIdentifier == "place-1" && continued.isEligibleForSearch)
        // G3: the deletion goes to the laptop's agent; the handler runs on the main actor once the agent answered.
        var forgotten = false
        await withCheckedContinuation { (ran: CheckedContinuation<Void, Never>) in
            ActivityManager().forget("place-1") {
                forgotten = true
                ran.resume()
            }
        }
        #expect(forgotten, "the completion handler ran")
        screen.userActivity = nil
        await world.stop()
    }

    @Test("a browser tab's page, continued by an AppKit-shaped delegate; resign and invalidate withdraw it")
    func appKitShapeAndTab() async throws {
        let world = try await World()
        let mac = MacAppDelegate()
        world.desktop.delegate = mac
        let tab = TabActivity()
        tab.didShow(url: try #require(URL(string: "https://maps.example.com/lisbon")), title: "Lisbon")
        try await world.waitUntilNearby(TabActivity.type)
        await world.continueOnDesktop()
        #expect(mac.continued == ["https://maps.example.com/lisbon"])
        #expect(mac.window.log == ["restore"])
        tab.didHide()  // from code on no actor: queued for the main actor, in order
        for _ in 0..<500 where UIApplication.shared.currentActivity != nil {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(UIApplication.shared.currentActivity == nil)
        tab.close()
        await world.stop()
    }

    @Test("a second continue while the first waits for the state cancels it, and Apple's NSUserCancelledError check holds (C6)", .timeLimit(.minutes(1)))
    func cancelledContinuation() async throws {
        let world = try await World()
        let desktopDelegate = AppDelegate()
        world.desktop.delegate = desktopDelegate
        let saver = SlowSaver()
        let activity = ActivityManager().readingActivity(place: "Faro", identifier: "place-3")
        activity.requiredUserInfoKeys = nil
        // Not for search: an activity eligible for it is saved (slowly, here) when it becomes current (G1), and this
        // test needs the first save to happen during the first continuation's fetch.
        activity.isEligibleForSearch = false
        activity.delegate = saver
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        let agent = world.devices.agents[1]
        // The first continuation waits for the laptop's slow save; the second, from off the (then busy) main actor,
        // starts meanwhile and cancels it.
        let saves = saver.savesStarted
        let first = Task.detached { await agent.continueNearby(device: "laptop") }
        // The slow save lasts until the first continuation has ended (cancelled by the second, C6), not a guessed time.
        let released = Task.detached {
            _ = await first.value
            saver.finishSaving()
        }
        // Once the laptop's app has begun the first continuation's save (which blocks the main actor until released).
        let second = Task.detached {
            for await started in saver.starts where started > saves { break }
            return await agent.continueNearby(device: "laptop")
        }
        let outcomes = (await first.value, await second.value)
        await released.value
        #expect(outcomes.0.failure == ContinuationOutcome.Failure(.fetch(.cancelled)) && outcomes.1.failure == nil, "\(outcomes)")
        for _ in 0..<500 where desktopDelegate.events.filter({ $0.hasPrefix("continue") || $0 == "cancelled" }).count < 2 {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(desktopDelegate.events.contains("cancelled"), "\(desktopDelegate.events)")
        #expect(desktopDelegate.events.filter { $0.hasPrefix("continue") }.count == 1, "\(desktopDelegate.events)")
        activity.invalidate()
        await world.stop()
    }

    @Test("a delegate with no continue of Apple's or Baton's shape is warned about once, not left silent")
    func mistypedDelegate() async throws {
        let world = try await World()
        let mistyped = MistypedDelegate()
        world.desktop.delegate = mistyped
        let activity = ActivityManager().readingActivity(place: "Porto", identifier: "place-2")
        activity.requiredUserInfoKeys = nil  // no screen adds the region here
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        #expect(!world.desktop.warnedNoContinue)
        await world.continueOnDesktop()
        #expect(world.desktop.warnedNoContinue)
        activity.invalidate()
        await world.stop()
    }

    /// The laptop offers an activity with continuation streams, `sender` as its delegate; the desktop continues it.
    func streamsWorld(_ sender: NoteSender) async throws -> (World, NSUserActivity, UserActivity) {
        let world = try await World()
        let activity = NSUserActivity(activityType: ActivityManager.readingType)
        activity.title = "Notes about Lisbon"
        activity.supportsContinuationStreams = true
        activity.delegate = sender
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        let continued = try #require(await world.continueOnDesktop())
        return (world, activity, continued)
    }

    /// Repeats every 65,521 bytes (a prime); copied a period at a time, not made byte by byte (debug builds).
    static func patterned(_ count: Int) -> Data {
        let period = Data((0..<min(count, 65_521)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ ($0 >> 9)) })
        var data = Data(capacity: count)
        while data.count + period.count <= count { data.append(period) }
        data.append(period.prefix(count - data.count))
        return data
    }

    @Test("F1-F3 in Apple's shapes: getContinuationStreams and the delegate's didReceive(inputStream:outputStream:), blocking reads and writes")
    func foundationStreams() async throws {
        let sender = NoteSender(note: Self.patterned(3_000_000))
        let (world, activity, continued) = try await streamsWorld(sender)
        let request = Data("send the notes".utf8)
        let (reply, error): (Data?, Error?) = await withCheckedContinuation { done in
            NoteFetcher.fetch(continued.nsUserActivity, request: request) { reply, error in done.resume(returning: (reply, error)) }
        }
        #expect(error == nil)
        let whole = reply == sender.note
        #expect(whole, "the reply came whole and unchanged: \(reply?.count ?? -1) of \(sender.note.count) bytes")
        #expect(sender.requests == [request])
        activity.invalidate()
        await world.stop()
    }

    @Test("F3 with a run loop: streams scheduled on a thread's run loop get openCompleted, hasSpaceAvailable, hasBytesAvailable, endEncountered")
    func runLoopStreams() async throws {
        let sender = NoteSender(note: Self.patterned(1_000_000))
        let (world, activity, continued) = try await streamsWorld(sender)
        let (input, output) = try await continued.nsUserActivity.continuationStreams()
        let request = Self.patterned(700_000)
        let pump = StreamPump(input: input, output: output, request: request)
        let (reply, events): (Data, [String]) = await withCheckedContinuation { done in
            pump.run { reply, events in done.resume(returning: (reply, events)) }
        }
        let whole = reply == sender.note
        #expect(whole, "\(reply.count) of \(sender.note.count) bytes; \(events)")
        #expect(Set(events.prefix(2)) == ["in open", "out open"] && events.suffix(2) == ["out done", "in end"], "\(events)")
        let requested = sender.requests == [request]
        #expect(requested, "\(sender.requests.map(\.count)) bytes asked")
        activity.invalidate()
        await world.stop()
    }

    @Test("F1: getContinuationStreams for an activity made here fails with an NSError in the Cocoa domain, Baton's code inside")
    func foundationStreamsError() async throws {
        let activity = NSUserActivity(activityType: ActivityManager.readingType, application: BatonApplication())
        let error: Error? = await withCheckedContinuation { done in
            activity.getContinuationStreams { input, output, error in
                done.resume(returning: input == nil && output == nil ? error : nil)
            }
        }
        let nsError = try #require(error) as NSError
        #expect(nsError.domain == NSCocoaErrorDomain)
        #expect(nsError.userInfo[ContinuationError.codeKey] as? String == "notContinued")
    }
}
