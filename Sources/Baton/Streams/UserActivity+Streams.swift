import BatonProtocol
import Foundation
import NIOCore

extension UserActivity {
    /// Opens a continuation stream to the app this activity was continued from (F2): what this side writes to
    /// `output`, that app reads, and the other way round. Ask after the activity arrived (in `continue`, or later
    /// while the originating app still runs it); each call opens another stream.
    /// - Throws: ``ContinuationError``: `notContinued` for an activity that did not arrive by continuation,
    ///   `noStreams` when the originating activity did not set ``supportsContinuationStreams`` (or its app declined
    ///   or has no delegate to take it), `tooManyStreams` past the limits (8 per app, 16 per pair of devices),
    ///   `appGone`/`notCurrent` when the originating app quit or invalidated the activity, `peerGone` when its device
    ///   cannot be reached, `appNotAnswering` when that app did not take the stream in time, `agentGone` when this
    ///   app is not connected to its agent, `timedOut` when the agent did not answer within 15 s.
    public func continuationStreams() async throws -> ContinuationStreams {
        ContinuationStreams(try await openStreamEnd())
    }

    /// The continuing side's stream connection, checked here first where it can be (F1, F2).
    func openStreamEnd(timeout: TimeAmount = StreamEnd.openTimeout) async throws(ContinuationError) -> StreamEnd {
        guard let continuation else {
            throw ContinuationError(.notContinued, "the \(activityType) activity was made on this device, not continued from another: it has no stream to ask for")
        }
        guard continuation.supportsStreams else {
            throw ContinuationError(.noStreams, "the originating app did not set supportsContinuationStreams on the \(activityType) activity")
        }
        guard application.isConnected, let path = application.socketPath, let bundle = application.bundleIdentifier else {
            throw ContinuationError(.agentGone, "the app is not connected to its agent (BatonApplication.connect)")
        }
        return try await StreamEnd.open(
            path: path,
            hello: .openStream(bundleIdentifier: bundle, version: IPCMessage.version, continuation: continuation.number, direct: StreamEnd.offersDirect),
            timeout: timeout
        )
    }

    /// Who receives a stream opened to this activity (F3): its ``UserActivityDelegate`` (on the main actor) or its
    /// ``NSUserActivityDelegate`` (on a thread of its own). With both set, the Apple-shaped one when the app holds the
    /// activity through an ``NSUserActivity`` (one is alive), else Baton's.
    enum StreamReceiver {
        case baton(UserActivityDelegate)
        case apple(NSUserActivityDelegate)
    }

    var streamReceiver: StreamReceiver? {
        switch (delegate, apple.delegate) {
        case (nil, nil): nil
        case (let baton?, nil): .baton(baton)
        case (nil, let appleDelegate?): .apple(appleDelegate)
        case (let baton?, let appleDelegate?): apple.hasWrapper ? .apple(appleDelegate) : .baton(baton)
        }
    }

    /// Hands the originating side's end of a stream to the receiver (F3).
    func receiveStream(_ end: StreamEnd) {
        switch streamReceiver {
        case nil:
            end.close()
        case .baton(let receiver):
            receiver.userActivity(self, didReceive: ContinuationStreams(end))
        case .apple(let receiver):
            // On a thread of its own, as Apple calls it off the main thread: code written for Apple's streams may
            // read and write them right here, blocking, for the whole exchange.
            let call = AppleStreamDelivery(receiver: receiver, activity: nsUserActivity, streams: ContinuationInputStream.pair(end))
            Thread.detachNewThread { call.deliver() }
        }
    }
}

extension BatonApplication {
    /// Another device's app asks for a continuation stream to activity `identifier` (F1, F3): connect with `token`
    /// for the activity's delegate, or decline on the main connection when the activity is gone, does not support
    /// streams, or has no delegate to take them.
    func incomingStream(activity identifier: UInt64, token: Data) {
        guard let client else { return }
        func decline(_ reason: String) {
            client.send(.declineStream(token: token, message: reason))
        }
        guard let activity = live[identifier]?.activity, activity.isValid else {
            return decline("the activity no longer exists")
        }
        guard activity.supportsContinuationStreams else {
            return decline("the \(activity.activityType) activity does not support continuation streams")
        }
        guard activity.streamReceiver != nil else {
            return decline("the \(activity.activityType) activity has no delegate to take the stream")
        }
        guard let path = socketPath, let bundle = bundleIdentifier else {
            return decline("the app is not connected to its agent")
        }
        Task {
            // A failure here (the other side gave up, the time to accept ran out) reaches the continuing app from the
            // agents, with its reason: nothing to tell this app.
            guard let end = try? await StreamEnd.open(path: path, hello: .acceptStream(bundleIdentifier: bundle, version: IPCMessage.version, token: token, direct: StreamEnd.offersDirect)) else {
                return
            }
            activity.receiveStream(end)
        }
    }
}

/// An `NSUserActivityDelegate` call carried to the thread it runs on. `@unchecked Sendable`: it is made on the main
/// actor and used once, on that one thread; the streams are this library's, whose state is behind locks, the
/// activity is usable from any thread, and Apple's delegate protocol is not tied to a thread (Apple calls it off the
/// main thread too).
struct AppleStreamDelivery: @unchecked Sendable {
    let receiver: NSUserActivityDelegate
    let activity: NSUserActivity
    let streams: (input: InputStream, output: OutputStream)

    func deliver() {
        receiver.userActivity(activity, didReceive: streams.input, outputStream: streams.output)
    }
}
