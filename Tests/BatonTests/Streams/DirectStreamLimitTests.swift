@testable import Baton
import BatonEmbedded
import BatonRegistry
import BatonCore
import BatonProtocol
import Foundation
import Testing

/// Keeps every stream it is given open, for as long as the test holds it.
@MainActor
final class StreamKeeper: UserActivityDelegate {
    var kept: [ContinuationStreams] = []

    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {
        kept.append(streams)
    }
}

/// The limits F3 sets hold on the direct path too (issue 30 item 2): 8 streams per app, 16 per device pair, relayed and
/// direct together. Three apps on each of two devices on loopback (``LocalDevices``): each laptop app's activity is
/// continued on the desktop in turn and its streams kept open, so the pair's limit is reached by the third app.
@Suite("Stream limits on the direct path: 8 per app, 16 per device pair (issue 30 item 2, F3)", .serialized)
@MainActor
struct DirectStreamLimitTests {
    static func bundle(_ index: Int) -> String { "com.example.Limits\(index)" }
    static func type(_ index: Int) -> String { "com.example.limits\(index).edit" }

    static func info(_ index: Int) -> String {
        """
        <plist version="1.0"><dict>
        <key>CFBundleIdentifier</key><string>\(bundle(index))</string>
        <key>CFBundleExecutable</key><string>limits</string>
        <key>BatonTeamIdentifier</key><string>LIMITTEAM1</string>
        <key>NSUserActivityTypes</key><array><string>\(type(index))</string></array>
        </dict></plist>
        """
    }

    /// Opens one stream, or says why it could not be opened (its ContinuationError's code).
    static func open(_ activity: UserActivity) async -> Result<ContinuationStreams, ContinuationError> {
        do {
            return .success(try await activity.continuationStreams())
        } catch let error as ContinuationError {
            return .failure(error)
        } catch {
            return .failure(ContinuationError(.other, "\(error)"))
        }
    }

    @Test("issue 30 item 2, F3: the 9th direct stream of one app is tooManyStreams; with 16 open between two devices, a third app's first is too")
    func limits() async throws {
        let apps = FileManager.default.temporaryDirectory.appendingPathComponent("baton-limits-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: apps) }
        for index in 1...3 {
            let folder = apps.appendingPathComponent("Limits\(index).app")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(Self.info(index).utf8).write(to: folder.appendingPathComponent("Info.plist"))
        }
        let devices = try await LocalDevices.start(names: ["laptop", "desktop"], apps: AppRegistry.load(searchPaths: [apps])) {
            $0.saveDeadline = 10
        }
        var applications: [BatonApplication] = []
        var activities: [UserActivity] = []
        let keeper = StreamKeeper()
        var held: [ContinuationStreams] = []
        defer {
            for application in applications { application.disconnect() }
        }

        for index in 1...3 {
            let origin = BatonApplication()
            let continuing = BatonApplication()
            applications += [origin, continuing]
            try await origin.connect(bundleIdentifier: Self.bundle(index), socketPath: devices.agents[0].socketPath)
            try await continuing.connect(bundleIdentifier: Self.bundle(index), socketPath: devices.agents[1].socketPath)
            var events = continuing.events.makeAsyncIterator()
            let activity = try UserActivity(activityType: Self.type(index), application: origin)
            activity.title = "Limits \(index)"
            activity.supportsContinuationStreams = true
            activity.delegate = keeper
            activity.becomeCurrent()
            activities.append(activity)
            var listed = false
            for _ in 0..<2_500 where !listed {
                listed = await devices.agents[1].nearbyItems().contains { $0.app == Self.bundle(index) }
                if !listed { try await Task.sleep(for: .milliseconds(2)) }
            }
            try #require(listed, "the desktop lists app \(index)'s activity")
            let outcome = await devices.agents[1].continueNearby(device: "laptop")
            try #require(outcome.failure == nil, "app \(index) continued: \(outcome)")
            var continued: UserActivity?
            while continued == nil, let event = await events.next(isolation: #isolation) {
                switch event {
                case .continued(let activity): continued = activity
                case .failed(_, let error): Issue.record("app \(index) failed to continue: \(error)")
                case .willContinue: continue
                }
            }
            let activityHere = try #require(continued, "app \(index) was continued on the desktop")

            if index < 3 {
                for count in 1...StreamLimits.perApp {
                    switch await Self.open(activityHere) {
                    case .success(let streams):
                        #expect(streams.path == .direct, "app \(index)'s stream \(count) goes direct")
                        held.append(streams)
                    case .failure(let error):
                        Issue.record("app \(index)'s stream \(count) of \(StreamLimits.perApp) was refused: \(error)")
                    }
                }
                let ninth = await Self.open(activityHere)
                #expect(
                    (try? ninth.get()) == nil && ninth.failureCode == .tooManyStreams,
                    "app \(index)'s stream \(StreamLimits.perApp + 1) is tooManyStreams (8 per app): \(ninth)")
            } else {
                #expect(held.count == StreamLimits.perSession, "16 direct streams open between the two devices")
                let seventeenth = await Self.open(activityHere)
                #expect(
                    seventeenth.failureCode == .tooManyStreams,
                    "a third app's first stream is tooManyStreams (16 per device pair): \(seventeenth)")
                // One of the 16 ends (closed on both sides): room for one more, direct again.
                held.removeFirst().close()
                var reopened: ContinuationStreams?
                for _ in 0..<500 where reopened == nil {
                    if case .success(let streams) = await Self.open(activityHere) {
                        reopened = streams
                    } else {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                }
                #expect(reopened?.path == .direct, "once one of the 16 ended, the third app's stream opens, direct")
                if let reopened { held.append(reopened) }
            }
        }
        held.removeAll()
        keeper.kept.removeAll()
        activities.removeAll()
        await devices.shutdown()
    }
}

extension Result where Failure == ContinuationError {
    var failureCode: ContinuationError.Code? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
