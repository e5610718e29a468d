import BatonCore
import BatonDBus
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// A bus app's stream calls carried out (issue 28 item 1; F2, F3; docs/PROTOCOL.md §11): what ``DBusAppSession``
/// decides about streams becomes a ``DBusStream`` through the agent's entry points
/// (``Agent/openBusStream(bundle:credentials:process:continuation:)``, ``Agent/prepareBusStream(bundle:credentials:process:token:)``),
/// and its descriptors go to the app with the bus's answer or call, which closes them once sent.
extension DBusAppConduit {
    /// The agent and the app's bundle, once the app is registered; nil before (or once the agent has gone).
    private var registeredApp: (agent: Agent, bundle: String)? {
        guard let connection, case .app(let bundle, _)? = connection.identity.withLockedValue({ $0 }),
            let agent = (connection.handler as? AgentForwarder)?.agent
        else { return nil }
        return (agent, bundle)
    }

    /// `OpenStream(t continuation)`, call `call` (F2): answered `(t stream, h input, h output)` once the stream is open,
    /// or with why not.
    func openBusStream(call: DBusAppSession.CallID, continuation: UInt64) {
        guard let (agent, bundle) = registeredApp else {
            return bus(.error(call: call, name: DBusAppInterface.errorName(for: FetchFailure.appGone.rawValue), message: "this app is not registered"))
        }
        agent.openBusStream(bundle: bundle, credentials: credentials, continuation: continuation).whenComplete { [self] result in
            switch result {
            case .success(let stream):
                watchResets(of: stream)
                guard let ends = stream.takeAppEnds() else { return }
                bus(.reply(call: call, [.uint64(stream.number), .unixFD(0), .unixFD(1)], descriptors: ends))
            case .failure(let error):
                let refusal = error as? DBusStreamRefusal ?? DBusStreamRefusal(.stream(.cancelled), "\(error)")
                bus(.error(call: call, name: refusal.errorName, message: refusal.message))
            }
        }
    }

    /// `incomingStream(activity, token)` (F3): `AcceptStream(t activity, t stream, h input, h output)` on the app, its
    /// answer expected as `outgoing`; the stream waits under `token` for it (``busStreamAnswered(token:accepted:message:)``).
    func offerBusStream(activity: UInt64, token: Data, outgoing: DBusAppSession.OutgoingID) {
        guard let (agent, bundle) = registeredApp else { return }
        agent.prepareBusStream(bundle: bundle, credentials: credentials, token: token).whenComplete { [self] result in
            guard case .success(let stream) = result else {
                // No pipes to offer: the app cannot take it (the coordinator answers the other device at its deadline,
                // or at once through this decline).
                return input(.answerFailed(outgoing, name: DBusAppInterface.errorName(for: FetchFailure.tooManyStreams.rawValue), message: "no pipes"))
            }
            offeredStreams.withLockedValue { $0[token] = stream }
            watchResets(of: stream)
            guard let ends = stream.takeAppEnds() else { return }
            bus(.callApp(
                destination: sender, member: "AcceptStream", arguments: [.uint64(activity), .uint64(stream.number), .unixFD(0), .unixFD(1)],
                // A second past the coordinator's own deadline: an app that never answers is `appNotAnswering` (§8),
                // not a decline.
                expecting: outgoing, timeoutMilliseconds: StreamLimits.acceptMilliseconds + 1_000, descriptors: ends
            ))
        }
    }

    /// The app answered `AcceptStream` for the stream offered under `token`: it opens, or is declined (`noStreams`).
    func busStreamAnswered(token: Data, accepted: Bool, message: String) {
        guard let stream = offeredStreams.withLockedValue({ $0.removeValue(forKey: token) }), let (agent, _) = registeredApp else { return }
        if accepted {
            agent.acceptBusStream(stream)
        } else {
            agent.declineBusStream(stream, message: message)
        }
    }

    /// The app left with streams offered and not answered: their pipes close (the coordinator fails them `appGone`).
    func closeOfferedStreams() {
        for stream in offeredStreams.withLockedValue({ offered in
            defer { offered = [:] }
            return Array(offered.values)
        }) {
            stream.conduit.close()
        }
    }

    /// `StreamReset(t stream, s error_name, s message)` on the app when the stream ends abnormally, before its pipes close.
    private func watchResets(of stream: DBusStream) {
        // The number only: the handler is kept by the stream's conduit, which the stream holds.
        let number = stream.number
        stream.whenReset { [bus, sender] reset in
            bus(.callApp(
                destination: sender, member: "StreamReset", arguments: [.uint64(number), .string(reset.errorName), .string(reset.message)],
                expecting: nil, timeoutMilliseconds: 0
            ))
        }
    }
}
