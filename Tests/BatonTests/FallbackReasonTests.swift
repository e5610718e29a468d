import BatonEmbedded
import Foundation
import Testing

/// The reason a continuation gives when no app here continues the activity and its page opens in the browser
/// (issue 24 part 7): the activity has a team (the originating app's); only no app here claims its type for it.
@MainActor
@Suite("The browser fallback's reason is true: the activity has a team, no app here claims it (issue 24: D1, D3, E1)", .serialized)
struct FallbackReasonTests {
    @Test("an activity of team TEAM with a web page, continued where no app of TEAM claims it: the reason says so, not 'names no team'")
    func reasonNamesWhatIsMissing() async throws {
        let recording = try RecordingBrowser()
        defer { recording.remove() }
        let (devices, laptop, activity) = try await BrowserRoutingTests.devices(browser: recording)
        let outcome = await devices.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil && outcome.app == "browser", "\(outcome)")
        #expect(outcome.reason.contains("no app here claims com.example.notes.edit for the team of the app that made it (D1, D3)"), "\(outcome.reason)")
        #expect(!outcome.reason.contains("names no team"), "\(outcome.reason)")
        #expect(try await recording.opened() == "https://notes.example/n/42\n")
        activity.invalidate()
        laptop.disconnect()
        await devices.shutdown()
    }
}
