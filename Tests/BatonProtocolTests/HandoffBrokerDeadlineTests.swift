import BatonCore
import BatonProtocol
import Foundation
import Testing

/// Every deadline is an event fed to the broker, with the time (issue 26 item 2): a save's (A7), a launched app's
/// hello, a fetch's answer (C8), documents still syncing (C9). Virtual time: `now` is whatever the test says, and a
/// timer "fires" when the test calls `timerFired`. Each deadline is raced against its answer arriving at the same
/// instant, in both orders: exactly one outcome (C5).
@Suite("Handoff broker: deadlines as events (issue 26 item 2)")
struct HandoffBrokerDeadlineTests {
    typealias ID = HandoffBroker.ContinuationID
    static let notes = HandoffBroker.AppID(1)
    static let type = "com.example.notes.edit"
    static let state = Data("state".utf8)
    static let wallClock: UInt64 = 1_800_000_000_000

    static func broker() -> HandoffBroker {
        HandoffBroker(
            deviceName: "desktop",
            saveDeadlineMilliseconds: 1_000,
            deadlines: .init(launchMilliseconds: 10_000, fetchNetworkMilliseconds: 1_000, documentsMilliseconds: 3_000, documentsPollMilliseconds: 100)
        )
    }

    static func running() -> HandoffBroker.Route { .app(bundle: "com.example.Notes", activityType: type, running: notes) }
    static func notRunning() -> HandoffBroker.Route { .app(bundle: "com.example.Notes", activityType: type, running: nil) }

    /// A broker with the notes app's activity current and one fetch of it asked, its save (1) asked of the app at `asked`.
    static func saving(asked: UInt64) -> HandoffBroker {
        var broker = broker()
        _ = broker.becomeCurrent(app: notes, bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: ActivityNotice(activityType: type, title: "Groceries"), now: wallClock)
        let sequence = broker.current?.sequence ?? 0
        _ = broker.fetchAsked(.init(1), sequence: sequence, deadlineMilliseconds: 5_000, now: wallClock)
        #expect(broker.saveAsked(1, now: asked) == [.startTimer(.save(1), afterMilliseconds: 1_000)], "the device's 1 s, from when the app was asked")
        return broker
    }

    /// The replies in `actions`.
    static func replies(_ actions: [HandoffBroker.Action]) -> [SessionMultiplexer.Reply] {
        actions.compactMap { if case .reply(_, let reply) = $0 { reply } else { nil } }
    }

    /// The endings the app hears in `actions`: delivered, or why not (C5).
    static func endings(_ actions: [HandoffBroker.Action]) -> [String] {
        actions.compactMap { action in
            switch action {
            case .deliver: "deliver"
            case .tellFailed(_, _, _, let reason, _): "failed \(reason)"
            default: nil
            }
        }
    }

    // MARK: Save (A7, C8)

    @Test("A7, C8: a save's deadline is a timer the broker starts when the app is asked; its firing is appNotAnswering, once")
    func saveDeadline() {
        var broker = Self.saving(asked: 500)
        #expect(broker.saveAsked(1, now: 600).isEmpty, "asked once: the deadline does not move")
        #expect(broker.timerFired(.save(1), now: 1_499) == [.startTimer(.save(1), afterMilliseconds: 1)], "a timer early by a clock's rounding starts again for the rest")
        #expect(broker.savesInProgress == 1)
        #expect(broker.timerFired(.save(1), now: 1_500) == [.reply(.init(1), .failed(.appNotAnswering, "com.example.Notes did not give its state within 1000 ms"))])
        #expect(broker.timerFired(.save(1), now: 1_600).isEmpty, "one reply")
        #expect(broker.saveAnswered(save: 1, from: Self.notes, payload: Self.state).isEmpty, "the late answer goes nowhere")
    }

    @Test("C5, C8: the save's answer and its deadline at the same instant: exactly one reply, whichever the broker hears first")
    func saveRace() {
        var answeredFirst = Self.saving(asked: 0)
        let answer = answeredFirst.saveAnswered(save: 1, from: Self.notes, payload: Self.state)
        #expect(answer.first == .cancelTimer(.save(1)) && Self.replies(answer) == [.payload(Self.state)])
        #expect(answeredFirst.timerFired(.save(1), now: 1_000).isEmpty)

        var firedFirst = Self.saving(asked: 0)
        let fired = firedFirst.timerFired(.save(1), now: 1_000)
        #expect(Self.replies(fired).count == 1 && !fired.contains(.tellContinued(app: Self.notes, activity: 7)))
        #expect(firedFirst.saveAnswered(save: 1, from: Self.notes, payload: Self.state).isEmpty, "nobody hears continued (A8)")
    }

    // MARK: Launch

    @Test("C5, C8: a launched app's hello is timed from when its process runs; not connecting in time fails launchFailed, the app never told")
    func launchDeadline() {
        var broker = Self.broker()
        #expect(broker.continueAsked(ID(1), route: Self.notRunning()) == [.launch(ID(1), bundle: "com.example.Notes")])
        #expect(broker.launchStarted(ID(1), now: 200) == [.startTimer(.launch(ID(1)), afterMilliseconds: 10_000)])
        #expect(broker.timerFired(.launch(ID(1)), now: 10_199) == [.startTimer(.launch(ID(1)), afterMilliseconds: 1)])
        let message = "com.example.Notes did not connect within 10.0 s of being launched"
        #expect(broker.timerFired(.launch(ID(1)), now: 10_200) == [.finished(ID(1), .init(app: "com.example.Notes", failure: .launchFailed, message: message))])
        #expect(broker.continuations.isEmpty)
        #expect(broker.appConnected(Self.notes, bundle: "com.example.Notes").isEmpty, "connecting late, it is told nothing")
        #expect(broker.launchStarted(ID(1), now: 10_300).isEmpty, "no timer for a continuation that ended")
    }

    @Test("C5: the hello and the launch deadline at the same instant: exactly one of willContinue-then-fetch or launchFailed")
    func launchRace() {
        var connectedFirst = Self.broker()
        _ = connectedFirst.continueAsked(ID(1), route: Self.notRunning())
        _ = connectedFirst.launchStarted(ID(1), now: 0)
        #expect(
            connectedFirst.appConnected(Self.notes, bundle: "com.example.Notes") == [
                .cancelTimer(.launch(ID(1))), .tellWillContinue(app: Self.notes, ID(1), activityType: Self.type), .fetch(ID(1)),
            ]
        )
        #expect(connectedFirst.timerFired(.launch(ID(1)), now: 10_000).isEmpty, "the launch timer after the hello changes nothing")
        #expect(connectedFirst.continuations[ID(1)] != nil, "it goes on to its fetch")

        var firedFirst = Self.broker()
        _ = firedFirst.continueAsked(ID(1), route: Self.notRunning())
        _ = firedFirst.launchStarted(ID(1), now: 0)
        #expect(firedFirst.timerFired(.launch(ID(1)), now: 10_000).count == 1)
        #expect(firedFirst.appConnected(Self.notes, bundle: "com.example.Notes").isEmpty)
    }

    @Test("the launched process ends before its hello: launchFailed now, and its launch timer is cancelled")
    func launchEndsEarly() {
        var broker = Self.broker()
        _ = broker.continueAsked(ID(1), route: Self.notRunning())
        _ = broker.launchStarted(ID(1), now: 0)
        let message = "com.example.Notes exited with status 1 before it connected"
        #expect(
            broker.launchedAppEnded("com.example.Notes", message: message) == [
                .cancelTimer(.launch(ID(1))), .finished(ID(1), .init(app: "com.example.Notes", failure: .launchFailed, message: message)),
            ]
        )
    }

    // MARK: Fetch (C8)

    @Test("C8: a fetch is timed from when it goes out, the save deadline and the network's second; no answer in time is timedOut, naming the device")
    func fetchDeadline() {
        var broker = Self.broker()
        _ = broker.continueAsked(ID(1), route: Self.running())
        #expect(broker.fetchSent(ID(1), to: "laptop", now: 50) == [.startTimer(.fetch(ID(1)), afterMilliseconds: 2_000)])
        let message = "laptop did not answer within 2.0 s"
        #expect(
            broker.timerFired(.fetch(ID(1)), now: 2_050) == [
                .tellFailed(app: Self.notes, ID(1), activityType: Self.type, reason: .fetch(.timedOut), message: message),
                .finished(ID(1), .init(app: "com.example.Notes", failure: .fetch(.timedOut), message: message)),
            ]
        )
        #expect(broker.fetchReplied(ID(1), payload: Self.state).isEmpty, "the late state goes nowhere")
        #expect(broker.fetchFailed(ID(1), reason: .cancelled, message: "the request stopped").isEmpty, "nor the request's own end")
    }

    @Test("C5, C8: the state and the fetch deadline at the same instant: exactly one of continue or didFail")
    func fetchRace() {
        var repliedFirst = Self.broker()
        _ = repliedFirst.continueAsked(ID(1), route: Self.running())
        _ = repliedFirst.fetchSent(ID(1), to: "laptop", now: 0)
        let replied = repliedFirst.fetchReplied(ID(1), payload: Self.state)
        #expect(replied.first == .cancelTimer(.fetch(ID(1))))
        #expect(Self.endings(replied + repliedFirst.timerFired(.fetch(ID(1)), now: 2_000)) == ["deliver"])

        var firedFirst = Self.broker()
        _ = firedFirst.continueAsked(ID(1), route: Self.running())
        _ = firedFirst.fetchSent(ID(1), to: "laptop", now: 0)
        let fired = firedFirst.timerFired(.fetch(ID(1)), now: 2_000)
        #expect(Self.endings(fired + firedFirst.fetchReplied(ID(1), payload: Self.state)) == ["failed timedOut"])
    }

    @Test("C6: a newer continuation cancels the fetch under way and its deadline's timer, once")
    func newerContinuationCancelsTimer() {
        var broker = Self.broker()
        _ = broker.continueAsked(ID(1), route: Self.running())
        _ = broker.fetchSent(ID(1), to: "laptop", now: 0)
        let actions = broker.continueAsked(ID(2), route: Self.running())
        #expect(actions.filter { if case .cancelTimer = $0 { true } else { false } } == [.cancelTimer(.fetch(ID(1)))])
        #expect(Self.endings(actions) == ["failed cancelled"])
        #expect(broker.timerFired(.fetch(ID(1)), now: 2_000).isEmpty)
    }

    // MARK: Documents still syncing (C9)

    @Test("C9: documents still syncing are looked for every 100 ms until the bound; the broker asks, the agent only looks")
    func documentsPoll() {
        var broker = Self.broker()
        _ = broker.continueAsked(ID(1), route: Self.running())
        #expect(broker.fetchReplied(ID(1), payload: Self.state, awaiting: ["/data/docs/plan.txt"]) == [.awaitDocuments(ID(1), paths: ["/data/docs/plan.txt"])])
        let missing = HandoffBroker.DocumentsCheck.missing(path: "/data/docs/plan.txt", folder: "folder \"docs\" (/data/docs)")
        #expect(broker.documentsChecked(ID(1), missing, now: 1_000) == [.startTimer(.documents(ID(1)), afterMilliseconds: 100)])
        #expect(broker.timerFired(.documents(ID(1)), now: 1_100) == [.awaitDocuments(ID(1), paths: ["/data/docs/plan.txt"])], "look again")
        #expect(broker.timerFired(.documents(ID(1)), now: 1_200).isEmpty, "one look per timer")
        #expect(broker.documentsChecked(ID(1), missing, now: 1_100) == [.startTimer(.documents(ID(1)), afterMilliseconds: 100)])
        // The file arrives: the state goes on to the app, once.
        #expect(broker.documentsChecked(ID(1), .present, now: 1_150) == [
            .cancelTimer(.documents(ID(1))),
            .deliver(app: Self.notes, ID(1), payload: Self.state),
            .finished(ID(1), .init(app: "com.example.Notes", failure: nil, message: "continued in com.example.Notes (5 bytes of state)")),
        ])
        #expect(broker.timerFired(.documents(ID(1)), now: 1_200).isEmpty)
        #expect(broker.documentsChecked(ID(1), missing, now: 1_200).isEmpty)
    }

    @Test("C9, C5: a document that never syncs fails documentNotSynced at the first look past the bound, naming the file and its folder")
    func documentsBound() {
        var broker = Self.broker()
        _ = broker.continueAsked(ID(1), route: Self.running())
        _ = broker.fetchReplied(ID(1), payload: Self.state, awaiting: ["/data/docs/plan.txt"])
        let missing = HandoffBroker.DocumentsCheck.missing(path: "/data/docs/plan.txt", folder: "folder \"docs\" (/data/docs)")
        var now: UInt64 = 500
        var actions = broker.documentsChecked(ID(1), missing, now: now)
        var looks = 1
        while case .startTimer(let timer, let after) = actions.last {
            now += after
            #expect(broker.timerFired(timer, now: now) == [.awaitDocuments(ID(1), paths: ["/data/docs/plan.txt"])])
            actions = broker.documentsChecked(ID(1), missing, now: now)
            looks += 1
        }
        #expect(now == 3_500 && looks == 31, "every 100 ms for 3 s from the first look, then once more at the bound")
        let message = "/data/docs/plan.txt is not on this device after waiting 3.0 s for it to sync into folder \"docs\" (/data/docs) (C9)"
        #expect(
            actions == [
                .tellFailed(app: Self.notes, ID(1), activityType: Self.type, reason: .documentNotSynced, message: message),
                .stopWork(ID(1)),
                .finished(ID(1), .init(app: "com.example.Notes", failure: .documentNotSynced, message: message)),
            ]
        )
    }

    @Test("C5, C9: the file arriving at the last look, and a look at the bound: exactly one of continue or didFail")
    func documentsRace() {
        var arrived = Self.broker()
        _ = arrived.continueAsked(ID(1), route: Self.running())
        _ = arrived.fetchReplied(ID(1), payload: Self.state, awaiting: ["/d/a.txt"])
        _ = arrived.documentsChecked(ID(1), .missing(path: "/d/a.txt", folder: nil), now: 0)
        _ = arrived.timerFired(.documents(ID(1)), now: 3_000)
        #expect(Self.endings(arrived.documentsChecked(ID(1), .present, now: 3_000)) == ["deliver"], "here at the last look: continued")
        #expect(arrived.documentsChecked(ID(1), .missing(path: "/d/a.txt", folder: nil), now: 3_000).isEmpty)

        var late = Self.broker()
        _ = late.continueAsked(ID(1), route: Self.running())
        _ = late.fetchReplied(ID(1), payload: Self.state, awaiting: ["/d/a.txt"])
        _ = late.documentsChecked(ID(1), .missing(path: "/d/a.txt", folder: nil), now: 0)
        let failed = late.documentsChecked(ID(1), .missing(path: "/d/a.txt", folder: nil), now: 3_000)
        #expect(Self.endings(failed) == ["failed documentNotSynced"])
        #expect(failed.first == .cancelTimer(.documents(ID(1))), "the pending look is cancelled")
        #expect(late.documentsChecked(ID(1), .present, now: 3_001).isEmpty && late.timerFired(.documents(ID(1)), now: 3_100).isEmpty)

        var refused = Self.broker()
        _ = refused.continueAsked(ID(1), route: Self.running())
        _ = refused.fetchReplied(ID(1), payload: Self.state, awaiting: ["/d/a.txt"])
        let escaping = refused.documentsChecked(ID(1), .refused(message: "/d/a.txt leads outside folder \"d\""), now: 0)
        #expect(Self.endings(escaping) == ["failed documentNotSynced"])
    }

    // MARK: C5 as a property, with time

    @Test("C5, C8 as a property: in 2,000 random runs with virtual time, every told app hears exactly one ending, every continuation finishes once, and every timer started is cancelled or fires")
    func exactlyOneEndingWithTime() {
        var generator = SeededRandom(state: 26)
        for _ in 0..<2_000 {
            var broker = Self.broker()
            var now: UInt64 = 0
            var pending: [HandoffBroker.TimerID: UInt64] = [:]
            var actions: [HandoffBroker.Action] = []
            var nextID: UInt64 = 1
            func take(_ new: [HandoffBroker.Action]) {
                for action in new {
                    switch action {
                    case .startTimer(let timer, let after):
                        #expect(pending[timer] == nil, "\(timer) started twice")
                        pending[timer] = now + after
                    case .cancelTimer(let timer):
                        #expect(pending.removeValue(forKey: timer) != nil, "\(timer) cancelled but not running")
                    default:
                        break
                    }
                }
                actions += new
            }
            func fire(_ timer: HandoffBroker.TimerID) {
                pending[timer] = nil
                take(broker.timerFired(timer, now: now))
            }
            for _ in 0..<16 {
                let id = ID(UInt64.random(in: 1...max(1, nextID), using: &generator))
                let check: HandoffBroker.DocumentsCheck = Bool.random(using: &generator) ? .present : .missing(path: "/d/a.txt", folder: nil)
                switch Int.random(in: 0..<12, using: &generator) {
                case 0:
                    let routes: [HandoffBroker.Route] = [Self.running(), Self.notRunning(), .byPayload]
                    take(broker.continueAsked(ID(nextID), route: routes[Int.random(in: 0..<routes.count, using: &generator)]))
                    nextID += 1
                case 1: take(broker.appConnected(Self.notes, bundle: "com.example.Notes"))
                case 2: take(broker.launchStarted(id, now: now))
                case 3: take(broker.fetchSent(id, to: "laptop", now: now))
                case 4: take(broker.fetchReplied(id, payload: Self.state, awaiting: Bool.random(using: &generator) ? ["/d/a.txt"] : []))
                case 5: take(broker.documentsChecked(id, check, now: now))
                case 6: take(broker.cancel(id))
                case 7: take(broker.appGone(Self.notes))
                case 8: take(broker.payloadRouted(id, .app(bundle: "com.example.Notes", activityType: Self.type, running: nil, payload: Self.state)))
                case 9:
                    // A timer due and an answer for the same continuation at the same instant, in either order.
                    guard let (timer, due) = pending.randomElement(using: &generator).map({ ($0.key, $0.value) }) else { continue }
                    now = max(now, due)
                    if Bool.random(using: &generator) {
                        fire(timer)
                        take(broker.fetchReplied(id, payload: Self.state))
                    } else {
                        take(broker.fetchReplied(id, payload: Self.state))
                        if pending[timer] != nil { fire(timer) }
                    }
                default:
                    // Time passes; every timer due fires, in a random order.
                    now += UInt64.random(in: 0...4_000, using: &generator)
                    for timer in pending.filter({ $0.value <= now }).keys.shuffled(using: &generator) where pending[timer] != nil {
                        fire(timer)
                    }
                }
            }
            take(broker.stop())
            #expect(pending.isEmpty, "timers left running: \(pending)")
            var tally = EndingTally()
            for action in actions { tally.count(action) }
            tally.expectExactlyOneEnding(continuations: 1..<nextID)
        }
    }
}
