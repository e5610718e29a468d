import BatonCore
import BatonProtocol
import Foundation
import Testing

/// The originating side of the handoff broker, transition by transition, without sockets or clocks (issue 11 part 2).
@Suite("Handoff broker: the current activity and the fetches of it")
struct HandoffBrokerTests {
    static let notes = HandoffBroker.AppID(1)
    static let other = HandoffBroker.AppID(2)
    static let now: UInt64 = 1_800_000_000_000
    static let notice = ActivityNotice(activityType: "com.example.notes.edit", title: "Groceries")

    static func broker() -> HandoffBroker {
        HandoffBroker(deviceName: "laptop", saveDeadlineMilliseconds: 1_000)
    }

    /// A broker whose current activity is the notes app's activity 7.
    static func current() -> (HandoffBroker, HandoffBroker.CurrentActivity) {
        var broker = broker()
        _ = broker.becomeCurrent(app: notes, bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: notice, now: now)
        return (broker, broker.current!)
    }

    @Test("A9, C2: becomeCurrent advertises at once; the same activity keeps its sequence, another gets a higher one")
    func becomeCurrent() throws {
        var broker = Self.broker()
        let first = broker.becomeCurrent(app: Self.notes, bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: Self.notice, now: Self.now)
        let current = try #require(broker.current)
        #expect(first == [.advertise(current)])
        #expect(current.sequence >= Self.now, "milliseconds since 1970 as a floor, so sequences grow across restarts")
        var retitled = Self.notice
        retitled.title = "Groceries (3)"
        #expect(broker.becomeCurrent(app: Self.notes, bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: retitled, now: Self.now + 5).count == 1)
        #expect(broker.current?.sequence == current.sequence && broker.current?.notice.title == "Groceries (3)")
        #expect(current.revision == 0 && broker.current?.revision == 1, "a new title moves the revision on (C3)")
        _ = broker.becomeCurrent(app: Self.notes, bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: retitled, now: Self.now + 6)
        #expect(broker.current?.revision == 1, "the same notice again changes nothing")
        _ = broker.becomeCurrent(app: Self.other, bundle: "com.example.Other", team: "TEAM", activity: 1, notice: Self.notice, now: Self.now - 60_000)
        #expect(broker.current!.sequence > current.sequence, "a clock going backwards never reuses a sequence")
        #expect(broker.current?.app == Self.other)
    }

    @Test("A10: an activity not eligible for handoff, or expired, is current but said goodbye to, and never fetched")
    func notOffered() {
        var broker = Self.broker()
        var hidden = Self.notice
        hidden.isEligibleForHandoff = false
        let actions = broker.becomeCurrent(app: Self.notes, bundle: "b", team: "T", activity: 1, notice: hidden, now: Self.now)
        #expect(actions == [.goodbye(broker.current!)])
        let sequence = broker.current!.sequence
        #expect(broker.fetchAsked(.init(1), sequence: sequence, deadlineMilliseconds: 1_000, now: Self.now) == [.reply(.init(1), .failed(.notEligible, "b does not allow this activity to be handed off"))])

        var expiring = Self.notice
        expiring.expirationDate = Date(timeIntervalSince1970: Double(Self.now + 1_000) / 1000)
        _ = broker.becomeCurrent(app: Self.notes, bundle: "b", team: "T", activity: 2, notice: expiring, now: Self.now)
        #expect(broker.current!.isOffered(at: Self.now))
        #expect(!broker.current!.isOffered(at: Self.now + 1_000))
        let replies = broker.fetchAsked(.init(2), sequence: broker.current!.sequence, deadlineMilliseconds: 1_000, now: Self.now + 2_000)
        #expect(replies == [.reply(.init(2), .failed(.notCurrent, "the activity expired (A10)"))])
    }

    @Test("A9: only the app that made an activity current can resign it; then a goodbye")
    func resign() {
        var (broker, current) = Self.current()
        #expect(broker.resign(app: Self.other, activity: 7).isEmpty)
        #expect(broker.resign(app: Self.notes, activity: 8).isEmpty)
        #expect(broker.resign(app: Self.notes, activity: 7) == [.goodbye(current)])
        #expect(broker.current == nil)
        #expect(broker.resign(app: Self.notes, activity: 7).isEmpty, "once")
    }

    @Test("C4, A7, A8: a fetch asks the app with the shorter deadline; its answer goes back once, and the app hears continued")
    func fetchAndSave() {
        var (broker, current) = Self.current()
        let ask = broker.fetchAsked(.init(1), sequence: current.sequence, deadlineMilliseconds: 5_000, now: Self.now)
        #expect(ask == [.askSave(app: Self.notes, save: 1, activity: 7, deadlineMilliseconds: 1_000)], "the device's 1 s, not the 5 s asked")
        let payload = Data("state".utf8)
        #expect(broker.saveAnswered(save: 1, from: Self.notes, payload: payload) == [.cancelTimer(save: 1), .tellContinued(app: Self.notes, activity: 7), .reply(.init(1), .payload(payload))])
        #expect(broker.saveAnswered(save: 1, from: Self.notes, payload: payload).isEmpty, "exactly one reply")
        #expect(broker.savesInProgress == 0)
    }

    @Test("C3: the summary answers only for the sequence advertised")
    func summary() {
        let (broker, current) = Self.current()
        #expect(broker.summary(sequence: current.sequence)?.title == "Groceries")
        #expect(broker.summary(sequence: current.sequence)?.bundleIdentifier == "com.example.Notes")
        #expect(broker.summary(sequence: current.sequence + 1) == nil)
    }

    @Test("C4: a fetch for an activity that is not current, or not this one, fails notCurrent at once")
    func notCurrent() {
        var broker = Self.broker()
        #expect(broker.fetchAsked(.init(1), sequence: 1, deadlineMilliseconds: 1_000, now: Self.now) == [.reply(.init(1), .failed(.notCurrent, "that activity is no longer current on laptop"))])
        var (withCurrent, current) = Self.current()
        let stale = withCurrent.fetchAsked(.init(2), sequence: current.sequence - 1, deadlineMilliseconds: 1_000, now: Self.now)
        #expect(stale == [.reply(.init(2), .failed(.notCurrent, "that activity is no longer current on laptop"))])
    }

    @Test("C8: the deadline passes first: appNotAnswering once; the late answer is ignored and nobody hears continued")
    func lateAnswer() {
        var (broker, current) = Self.current()
        _ = broker.fetchAsked(.init(1), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now)
        #expect(broker.deadlinePassed(save: 1) == [.reply(.init(1), .failed(.appNotAnswering, "com.example.Notes did not give its state within 1000 ms"))])
        #expect(broker.saveAnswered(save: 1, from: Self.notes, payload: Data()).isEmpty)
        #expect(broker.deadlinePassed(save: 1).isEmpty)
    }

    @Test("C8: the app exits during its save: appGone for the fetch, and its activity's goodbye")
    func appExitsDuringSave() {
        var (broker, current) = Self.current()
        _ = broker.fetchAsked(.init(1), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now)
        #expect(broker.appGone(Self.other).isEmpty, "another app going changes nothing")
        let gone = broker.appGone(Self.notes)
        #expect(gone == [.cancelTimer(save: 1), .reply(.init(1), .failed(.appGone, "com.example.Notes went away before giving its state")), .goodbye(current)])
        #expect(broker.current == nil && broker.savesInProgress == 0)
    }

    @Test("a save answered by another app, a failed save, a payload over the limit (A11)")
    func badAnswers() {
        var (broker, current) = Self.current()
        _ = broker.fetchAsked(.init(1), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now)
        #expect(broker.saveAnswered(save: 1, from: Self.other, payload: Data()).isEmpty, "not the app asked")
        #expect(broker.saveFailed(save: 1, from: Self.notes, text: "no document") == [.cancelTimer(save: 1), .reply(.init(1), .failed(.saveFailed, "com.example.Notes on laptop could not give its state: no document"))])
        _ = broker.fetchAsked(.init(2), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now)
        let huge = Data(count: ActivityPayload.maximumEncodedSize + 1)
        let replies = broker.saveAnswered(save: 2, from: Self.notes, payload: huge)
        #expect(replies.count == 2)
        guard case .reply(_, .failed(.tooLarge, _)) = replies.last else {
            Issue.record("\(replies)")
            return
        }
    }

    @Test("C6 on the other device: a cancelled fetch is forgotten; its save's late answer goes nowhere")
    func cancelledFetch() {
        var (broker, current) = Self.current()
        _ = broker.fetchAsked(.init(1), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now)
        #expect(broker.fetchCancelled(.init(1)) == [.cancelTimer(save: 1), .reply(.init(1), .failed(.cancelled, "the other device gave up on this fetch"))])
        #expect(broker.saveAnswered(save: 1, from: Self.notes, payload: Data()).isEmpty)
        #expect(broker.fetchCancelled(.init(1)).isEmpty)
    }

    @Test("two devices fetch at once: two saves, each answered once, in any order")
    func concurrentFetches() {
        var (broker, current) = Self.current()
        _ = broker.fetchAsked(.init(1), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now)
        _ = broker.fetchAsked(.init(2), sequence: current.sequence, deadlineMilliseconds: 500, now: Self.now)
        #expect(broker.savesInProgress == 2)
        #expect(broker.saveAnswered(save: 2, from: Self.notes, payload: Data("b".utf8)).last == .reply(.init(2), .payload(Data("b".utf8))))
        #expect(broker.deadlinePassed(save: 1).count == 1)
        #expect(broker.savesInProgress == 0)
    }

    @Test("the agent stops: every fetch fails and the goodbye goes out")
    func stop() {
        var (broker, current) = Self.current()
        _ = broker.fetchAsked(.init(1), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now)
        #expect(broker.stop() == [.cancelTimer(save: 1), .reply(.init(1), .failed(.appGone, "the agent on laptop is stopping")), .goodbye(current)])
        #expect(broker.stop().isEmpty)
    }

    // MARK: Issue 25 item 4: A8 only after the other device's app has the state

    @Test("issue 25 item 4, A8: with a confirming device, the state leaves without continued; the app hears it on the confirmation, once")
    func continuedOnlyWhenConfirmed() {
        var (broker, current) = Self.current()
        _ = broker.fetchAsked(.init(1), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now, confirmingAsker: "desktop")
        let payload = Data("state".utf8)
        #expect(broker.saveAnswered(save: 1, from: Self.notes, payload: payload) == [.cancelTimer(save: 1), .reply(.init(1), .payload(payload))], "no continued as the state leaves")
        #expect(broker.unconfirmedHandoffs == 1)
        #expect(broker.peerContinued(asker: "phone", sequence: current.sequence).isEmpty, "another device's confirmation is not this one's")
        #expect(broker.peerContinued(asker: "desktop", sequence: current.sequence + 1).isEmpty, "nor one for another advert")
        #expect(broker.peerContinued(asker: "desktop", sequence: current.sequence) == [.tellContinued(app: Self.notes, activity: 7)])
        #expect(broker.peerContinued(asker: "desktop", sequence: current.sequence).isEmpty, "told once")
        #expect(broker.unconfirmedHandoffs == 0)
    }

    @Test("issue 25 item 4, A8: a device that fetched and never confirms (its app failed) leaves nothing told; what it leaves is bounded and goes with the app")
    func unconfirmedIsBounded() {
        var (broker, current) = Self.current()
        for fetch in 1...UInt64(HandoffBroker.maximumUnconfirmed + 10) {
            _ = broker.fetchAsked(.init(fetch), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now, confirmingAsker: "device \(fetch)")
            let answered = broker.saveAnswered(save: fetch, from: Self.notes, payload: Data("s".utf8))
            #expect(!answered.contains(.tellContinued(app: Self.notes, activity: 7)))
        }
        #expect(broker.unconfirmedHandoffs == HandoffBroker.maximumUnconfirmed)
        #expect(broker.peerContinued(asker: "device 1", sequence: current.sequence).isEmpty, "the oldest was dropped")
        #expect(broker.peerContinued(asker: "device 42", sequence: current.sequence) == [.tellContinued(app: Self.notes, activity: 7)])
        _ = broker.appGone(Self.notes)
        #expect(broker.unconfirmedHandoffs == 0, "nothing kept for an app that is gone")
    }

    @Test("issue 25 item 4, C8: a save the app refuses at once is saveFailed, not appNotAnswering's timeout, and nobody hears continued")
    func refusedSave() {
        var (broker, current) = Self.current()
        _ = broker.fetchAsked(.init(1), sequence: current.sequence, deadlineMilliseconds: 1_000, now: Self.now, confirmingAsker: "desktop")
        let refused = broker.saveFailed(save: 1, from: Self.notes, text: "the note was deleted")
        #expect(refused == [.cancelTimer(save: 1), .reply(.init(1), .failed(.saveFailed, "com.example.Notes on laptop could not give its state: the note was deleted"))])
        #expect(broker.deadlinePassed(save: 1).isEmpty, "one reply")
        #expect(broker.peerContinued(asker: "desktop", sequence: current.sequence).isEmpty, "nothing was sent, nothing to tell")
        #expect(FetchFailure(rawValue: "saveFailed") == .saveFailed && FetchFailure.saveFailed != .appNotAnswering)
    }
}
