import ArgumentParser
import BatonEmbedded
import BatonRegistry
import Foundation
import NIOConcurrencyHelpers
import ShopSnapKit

/// `baton demo`: Baton's main job on this machine. Two devices of one account, each with its own agent on
/// loopback, and ShopSnap running on both; a shopping list and then an item being edited go from the laptop to the
/// desktop through the real path: sealed adverts, the nearby table, a TLS 1.3 session, the app's save, delivery.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Hand a ShopSnap shopping list from one device to another on this machine.",
        discussion: """
            Plays the seeds' ShopSnap tutorial with two devices, "laptop" and "desktop": each gets an identity, they \
            pair over TLS 1.3, each runs an agent on loopback (in this process, the embedded mode; the network path \
            is the same as between machines), and ShopSnap runs on both. The laptop shows a list (view activity) and \
            then edits an item (edit activity, needsSave on every keystroke); the desktop sees each in its nearby \
            list and continues it. Prints the timeline with timings.
            """
    )

    func run() async throws {
        try await DemoRun().run()
    }
}

/// The demo's steps, on the main actor where the apps live.
@MainActor
struct DemoRun {
    let clock = DemoClock()

    func run() async throws {
        print("Baton demo: ShopSnap, from \"laptop\" to \"desktop\", two devices of one account on this machine.\n")
        let apps = FileManager.default.temporaryDirectory.appendingPathComponent("baton-demo-apps-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: apps) }
        try writeShopSnapBundle(in: apps)
        let registry = AppRegistry.load(searchPaths: [apps])
        let clock = clock
        let devices = try await LocalDevices.start(names: ["laptop", "desktop"], apps: registry, paired: { first, second, code in
            clock.log("both", "\(first) and \(second) paired over TLS 1.3 (both showed pairing code \(code))")
        })
        do {
            try await play(devices)
        } catch {
            await devices.shutdown()
            throw error
        }
        await devices.shutdown()
        print("\nWhat the payload rules refuse, as the sender would see it:")
        showRefusal("a webpageURL that is not http(s) (A5)") {
            let activity = try UserActivity(activityType: ActivityTypeView, application: BatonApplication())
            try activity.setWebpageURL(URL(string: "ftp://shopsnap.example/list"))
        }
        showRefusal("a 2 MiB userInfo (A11, hard limit \(ActivityPayload.maximumEncodedSize) bytes)") {
            var payload = try ActivityPayload(activityType: ActivityTypeView)
            payload.userInfo = ["photo": .data(Data(count: 2 << 20))]
            _ = try payload.encoded()
        }
        showRefusal("a payload from a newer Baton (H1)") {
            let future = try BinaryPropertyListEncoder.encode(["v": 99, "type": .string(ActivityTypeView)])
            _ = try ActivityPayload(decoding: future)
        }
        print("\nNext: `swift test` runs the checks behind all of this; `baton agent` runs a device for real.")
    }

    func play(_ devices: LocalDevices) async throws {
        let (laptopAgent, desktopAgent) = (devices.agents[0], devices.agents[1])
        clock.log("both", "agents up: laptop on 127.0.0.1:\(laptopAgent.port), desktop on 127.0.0.1:\(desktopAgent.port) (adverts by unicast: loopback has no multicast)")
        let (changes, sink) = AsyncStream.makeStream(of: NearbyTable.Change.self)
        desktopAgent.observeNearby { _, change in sink.yield(change) }
        var nearby = changes.makeAsyncIterator()

        let laptop = BatonApplication()
        let desktop = BatonApplication()
        let clock = clock
        let laptopApp = ShopSnapApp(application: laptop) { clock.log("laptop", "ShopSnap: \($0)") }
        let desktopApp = ShopSnapApp(application: desktop) { clock.log("desktop", "ShopSnap: \($0)") }
        laptop.delegate = laptopApp
        desktop.delegate = desktopApp
        let reported = NIOLockedValueBox<[String]>([])
        let reporter = ContinuedReporter { line in
            clock.log("laptop", "ShopSnap: \(line) (A8)")
            reported.withLockedValue { $0.append(line) }
        }
        try await laptop.connect(bundleIdentifier: shopSnapBundleIdentifier, socketPath: laptopAgent.socketPath)
        try await desktop.connect(bundleIdentifier: shopSnapBundleIdentifier, socketPath: desktopAgent.socketPath)
        clock.log("both", "ShopSnap connected to its agent on each device")
        var events = desktop.events.makeAsyncIterator()

        // 1. The list.
        var started = clock.now
        laptopApp.list.show(["Ice cream", "Apple", "Nuts"])
        laptopApp.list.userActivity?.delegate = reporter
        clock.log("laptop", "ShopSnap shows its list and makes the view activity current")
        _ = await nearby.next(isolation: #isolation)
        clock.log("desktop", "sees it nearby \(clock.since(started)) later (sealed advert, 88 bytes)")
        for item in await desktopAgent.nearbyItems(describe: true) {
            clock.log("desktop", "nearby: \(item.title ?? "?") from \(item.deviceName), would open in \(item.app)")
        }
        started = clock.now
        let first = await desktopAgent.continueNearby(device: "laptop")
        try await waitForContinued(&events, first)
        clock.log("desktop", "continued \(clock.since(started)) after the person chose it: \(first.message)")

        // 2. An item being edited: every keystroke only marks the state dirty. It has a photo, far too big for
        // userInfo: the desktop asks for it over a continuation stream once it has the activity (F1-F3).
        let photo = examplePhoto(count: 4 << 20)
        let arrived = NIOLockedValueBox<Data?>(nil)
        desktopApp.detail.photoArrived = { data in arrived.withLockedValue { $0 = data } }
        laptopApp.detail.continued = { reporter.userActivityWasContinued($0) }
        laptopApp.detail.edit("Cheese", photo: photo)
        let typed = " (aged)"
        for character in typed { laptopApp.detail.type(character) }
        clock.log("laptop", "ShopSnap edits \"Cheese\", \(typed.count) keystrokes, needsSave on each (A6)")
        _ = await nearby.next(isolation: #isolation)
        clock.log("desktop", "sees the edit activity replace the list")
        started = clock.now
        let second = await desktopAgent.continueNearby(device: "laptop")
        try await waitForContinued(&events, second)
        clock.log("desktop", "continued in \(clock.since(started))")
        clock.log(
            "laptop",
            "the state was asked for \(laptopApp.detail.saves) time(s) for \(typed.count) keystrokes (A6: coalesced until another device needs it)"
        )

        // The laptop's app hears of it (A8) on its own connection, possibly a moment after the desktop has the state:
        // wait for that before invalidating, as a person would still be looking at the laptop.
        for _ in 0..<400 where !reported.withLockedValue({ $0.contains { $0.hasPrefix(ActivityTypeEdit) } }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        for _ in 0..<1000 where arrived.withLockedValue({ $0 == nil }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        guard arrived.withLockedValue({ $0 }) == photo else {
            throw CommandLineError("the photo did not arrive whole over the continuation stream")
        }
        clock.log("both", "the photo went laptop → desktop over the continuation stream, checksum \(checksum(photo)) on both")

        // 3. Done editing: the activity is invalidated and gone from the desktop at once.
        started = clock.now
        laptopApp.detail.finish()
        clock.log("laptop", "editing done: the activity is invalidated (A9)")
        _ = await nearby.next(isolation: #isolation)
        clock.log("desktop", "it is gone from the nearby list \(clock.since(started)) later (goodbye advert)")
        let none = await desktopAgent.continueNearby(device: nil)
        clock.log("desktop", "baton continue now says: \(none.message) [\(none.failure?.rawValue ?? "")]")
        laptop.disconnect()
        desktop.disconnect()
        withExtendedLifetime((laptopApp, desktopApp, reporter)) {}
    }

    /// Waits for the desktop app to receive the continuation `outcome` describes, or fails with its reason.
    func waitForContinued(_ events: inout AsyncStream<ContinuationEvent>.Iterator, _ outcome: ContinuationOutcome) async throws {
        if let failure = outcome.failure {
            throw CommandLineError("the continuation failed: \(outcome.message) [\(failure)]")
        }
        while let event = await events.next(isolation: #isolation) {
            switch event {
            case .continued: return
            case .failed(_, let error): throw CommandLineError("the continuation failed: \(error)")
            case .willContinue: continue
            }
        }
    }
}

/// Prints what the payload rules refuse, as the sender would see it.
func showRefusal(_ what: String, _ attempt: () throws -> Void) {
    do {
        try attempt()
        print("  - \(what): accepted (unexpected)")
    } catch {
        print("  - \(what): refused: \(error)")
    }
}

/// Prints timeline lines with the milliseconds since the demo started.
final class DemoClock: Sendable {
    let start = DispatchTime.now().uptimeNanoseconds

    var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// The time since `moment`, for people.
    func since(_ moment: UInt64) -> String {
        String(format: "%.2f ms", Double(now - moment) / 1e6)
    }

    func log(_ device: String, _ event: String) {
        let elapsed = Double(now - start) / 1e6
        print(String(format: "[%8.3f ms] ", elapsed) + device.padding(toLength: 8, withPad: " ", startingAt: 0) + event)
        fflush(nil)
    }
}
