import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// The agent as the driver of its ``HandoffBroker``: events go in under the state lock, actions come out and are
/// performed here, outside it (issue 11 part 1). The broker decides every deadline (issue 26 item 2): the driver
/// schedules the timers it asks for on the agent's loop and reports their firing, and reports what has begun (an app
/// asked, a process launched, a request sent, documents looked for), deciding nothing.
extension Agent {
    /// Feeds one event to the broker and performs what it decides.
    func broker(_ event: (inout HandoffBroker) -> [HandoffBroker.Action]) {
        perform(state.withLockedValue { event(&$0.broker) })
    }

    /// Performs the broker's actions, in order.
    func perform(_ actions: [HandoffBroker.Action]) {
        for action in actions {
            switch action {
            case .advertise(let current):
                sendAdvert(current, isCurrent: true)
            case .goodbye(let current):
                sendAdvert(current, isCurrent: false)
            case .askSave(let app, let save, let activity, let deadline):
                // An app gone already is asked nothing: its ipcClosed fails the fetch, the deadline is the backstop.
                state.withLockedValue { $0.appConnections[app] }?.send(.save(request: save, activity: activity, deadlineMilliseconds: deadline))
                broker { $0.saveAsked(save, now: clock.uptime()) }
            case .startTimer(let timer, let milliseconds):
                startTimer(timer, after: milliseconds)
            case .cancelTimer(let timer):
                onLoop { [self] in state.withLockedValue { $0.timers.removeValue(forKey: timer) }?.cancel() }
            case .reply(let fetch, let reply):
                state.withLockedValue { $0.fetchWaiters.removeValue(forKey: fetch) }?(reply)
            case .tellContinued(let app, let activity):
                state.withLockedValue { $0.appConnections[app] }?.send(.continued(activity: activity))
            case .launch(let id, let bundle):
                launch(id, bundle: bundle)
            case .fetch(let id):
                startFetch(id)
            case .route(let id, let payload):
                let route = routePayload(id, payload)
                broker { $0.payloadRouted(id, route) }
            case .awaitDocuments(let id, let paths):
                lookForDocuments(id, paths: paths)
            case .tellWillContinue(let app, let id, let type):
                state.withLockedValue { $0.appConnections[app] }?.send(.willContinue(continuation: id.value, activityType: type))
            case .deliver(let app, let id, let payload):
                recordDelivered(id, to: app)
                state.withLockedValue { $0.appConnections[app] }?.send(.deliver(continuation: id.value, payload: payload))
            case .tellFailed(let app, let id, let type, let reason, let message):
                state.withLockedValue { $0.appConnections[app] }?
                    .send(.failed(continuation: id.value, activityType: type, reason: reason, message: message))
            case .stopWork(let id):
                state.withLockedValue { $0.continuationRecords[id]?.work }?()
            case .finished(let id, let outcome):
                finish(id, outcome)
            }
        }
    }

    /// Schedules the broker's timer `timer` on the agent's loop; its firing goes back to the broker with the time.
    /// Timers are started, cancelled and fired on the loop alone. A cancellation that reaches the loop before its
    /// start (two threads racing) leaves the timer to fire once for nothing: the broker ignores what has ended.
    func startTimer(_ timer: HandoffBroker.TimerID, after milliseconds: UInt64) {
        onLoop { [self] in
            let scheduled = loop.scheduleTask(in: .milliseconds(Int64(clamping: milliseconds))) { [self] in
                let actions = state.withLockedValue { state in
                    state.timers[timer] = nil
                    return state.broker.timerFired(timer, now: clock.uptime())
                }
                perform(actions)
            }
            state.withLockedValue { $0.timers.updateValue(scheduled, forKey: timer) }?.cancel()
        }
    }

    /// Runs `body` on the agent's loop: now when called there, else next.
    func onLoop(_ body: @escaping @Sendable () -> Void) {
        if loop.inEventLoop { body() } else { loop.execute(body) }
    }

    /// A fetch from another device (C4): the broker asks the app and answers exactly once (the state, or why not),
    /// and tells the app `continued` (A8) when `peer`, which `confirms`, says its app has the state (issue 25 item 4),
    /// through `reply`, from the thread that has the answer: the app socket's loop for a save, a timer's for the
    /// deadline. Returns what the link calls when the other device gives up (C6 there).
    func answerFetch(
        sequence: UInt64,
        deadlineMilliseconds: UInt64,
        for peer: DeviceID? = nil,
        confirms: Bool = false,
        reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> PeerLink.Cancel {
        let (fetch, actions) = state.withLockedValue { state -> (HandoffBroker.FetchID, [HandoffBroker.Action]) in
            let fetch = HandoffBroker.FetchID(state.nextFetch)
            state.nextFetch += 1
            // C9: the state leaves with file URLs in synced folders in travel form (Agent+Folders), and its web URLs
            // without their user and password (issue 25 item 7; A5: OfferedURLs).
            let reply: @Sendable (SessionMultiplexer.Reply) -> Void = { [self] answer in
                guard case .payload(let data) = answer else { return reply(answer) }
                reply(.payload(OfferedURLs.withoutCredentials(travelling(data))))
            }
            // F1: the device given the state may then ask for streams to the activity, while its app runs it.
            if let peer, let current = state.broker.current, current.sequence == sequence {
                state.fetchWaiters[fetch] = { [self] answer in
                    if case .payload = answer { recordContinued(current, by: peer) }
                    reply(answer)
                }
            } else {
                state.fetchWaiters[fetch] = reply
            }
            let asker = confirms ? peer.map { "\($0)" } : nil
            return (
                fetch,
                state.broker.fetchAsked(fetch, sequence: sequence, deadlineMilliseconds: deadlineMilliseconds, now: clock.wall(), confirmingAsker: asker)
            )
        }
        perform(actions)
        // The other device gave up (C6 there): the broker forgets the save and answers the waiter.
        return { [self] in broker { $0.fetchCancelled(fetch) } }
    }
}
