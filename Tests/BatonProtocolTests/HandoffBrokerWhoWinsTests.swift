import BatonCore
import BatonProtocol
import Foundation
import Testing

/// Who wins (issue 27 item 3; A9; docs/ARCHITECTURE.md, "Who wins"): one current activity per device, the latest of
/// what the person did. The broker tells the app it took current from, and an update of an activity that is no longer
/// current does not take it back.
@Suite("Handoff broker: who wins (issue 27 item 3, A9)")
struct HandoffBrokerWhoWinsTests {
    static let notes = HandoffBroker.AppID(1)
    static let media = HandoffBroker.AppID(2)
    static let now: UInt64 = 1_800_000_000_000
    static let groceries = ActivityNotice(activityType: "com.example.notes.edit", title: "Groceries")
    static let song = ActivityNotice(activityType: "org.baton.media.playing", title: "Song — Artist")

    /// The notes app's activity 7 was current; then the media app's activity 1 took over.
    static func superseded() -> (HandoffBroker, [HandoffBroker.Action]) {
        var broker = HandoffBroker(deviceName: "laptop")
        _ = broker.becomeCurrent(app: notes, bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: groceries, now: now)
        let actions = broker.becomeCurrent(app: media, bundle: "org.baton.media", team: "BATONMEDIA", activity: 1, notice: song, now: now + 10)
        return (broker, actions)
    }

    @Test("issue 27 item 3, A9: when another app's activity becomes current, the app it replaced is told, once")
    func supersededAppIsTold() throws {
        let (broker, actions) = Self.superseded()
        let current = try #require(broker.current)
        #expect(current.app == Self.media && current.notice.title == "Song — Artist")
        #expect(actions == [.advertise(current), .tellNotCurrent(app: Self.notes, activity: 7)])
        var again = broker
        var moved = Self.song
        moved.title = "Song — Artist (live)"
        let update = again.becomeCurrent(app: Self.media, bundle: "org.baton.media", team: "BATONMEDIA", activity: 1, notice: moved, now: Self.now + 20)
        #expect(!update.contains(.tellNotCurrent(app: Self.notes, activity: 7)), "told once: the media app updating its own activity tells nobody")
    }

    @Test("issue 27 item 3: an app's own next activity replaces its last one without telling it (it knows)")
    func sameAppIsNotTold() {
        var broker = HandoffBroker(deviceName: "laptop")
        _ = broker.becomeCurrent(app: Self.media, bundle: "org.baton.media", team: "BATONMEDIA", activity: 1, notice: Self.song, now: Self.now)
        let next = broker.becomeCurrent(app: Self.media, bundle: "org.baton.media", team: "BATONMEDIA", activity: 2, notice: Self.song, now: Self.now + 1)
        #expect(next.count == 1 && broker.current?.activity == 2)
    }

    @Test("issue 27 item 3, A9: a superseded app's update (a new title) does not take current back, nor change what is offered")
    func updateDoesNotTakeOver() throws {
        var (broker, _) = Self.superseded()
        let before = try #require(broker.current)
        var retitled = Self.groceries
        retitled.title = "Groceries (3)"
        let actions = broker.becomeCurrent(
            app: Self.notes, bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: retitled, isUpdate: true, now: Self.now + 20
        )
        #expect(actions.isEmpty, "no advert, no goodbye: other devices go on being offered the track")
        #expect(broker.current == before)
        // Nor once nothing is current: the person did nothing in the notes app.
        _ = broker.resign(app: Self.media, activity: 1)
        #expect(broker.becomeCurrent(app: Self.notes, bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: retitled, isUpdate: true, now: Self.now + 30).isEmpty)
        #expect(broker.current == nil, "A9: when the current one resigns, the device offers nothing")
    }

    @Test("issue 27 item 3, A9: the current activity's own update is applied (same sequence, a new revision)")
    func updateOfCurrentApplies() throws {
        var (broker, _) = Self.superseded()
        let before = try #require(broker.current)
        var moved = Self.song
        moved.title = "Next verse"
        let actions = broker.becomeCurrent(app: Self.media, bundle: "org.baton.media", team: "BATONMEDIA", activity: 1, notice: moved, isUpdate: true, now: Self.now + 20)
        let after = try #require(broker.current)
        #expect(actions == [.advertise(after)])
        #expect(after.sequence == before.sequence && after.revision == before.revision + 1 && after.notice.title == "Next verse")
    }

    @Test("issue 27 item 3, A9: the superseded app's explicit becomeCurrent (the person went back to it) takes over, and tells the other")
    func explicitBecomeCurrentTakesOver() throws {
        var (broker, _) = Self.superseded()
        let song = try #require(broker.current)
        let actions = broker.becomeCurrent(app: Self.notes, bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: Self.groceries, now: Self.now + 30)
        let notes = try #require(broker.current)
        #expect(notes.app == Self.notes && notes.activity == 7)
        #expect(notes.sequence > song.sequence, "a new advert: other devices replace the track by the note")
        #expect(actions == [.advertise(notes), .tellNotCurrent(app: Self.media, activity: 1)])
    }
}
