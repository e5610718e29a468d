import BatonClient
import BatonCore
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Continuation streams for apps on the session bus (issue 28 item 1; F1–F3; docs/PROTOCOL.md §11 "Streams"): each
/// is an ``IPCConnection`` over a ``DBusStreamConduit`` (two pipes), and goes the Unix socket's way from there: the
/// handoff coordinator's `openStream` and `acceptStream`, the same limits, the same splice.
///
/// Who the caller is was settled when it registered (§11 "Identity": the bus's credentials against the app's
/// program): the adapter calls these only for the unique name registered as `bundle`, with the credentials it
/// read then. Here the stream is checked as a stream hello is, less the executable: the user, and a registered app
/// with a team.
extension Agent {
    /// `OpenStream(t continuation)` of the continuing app `bundle` (F2): the stream to the app whose activity was
    /// delivered here as `continuation`. The future succeeds once the stream is open at both ends (reply then with
    /// the stream's number and its app ends, and close them); it fails with a ``DBusStreamRefusal`` (`notContinued`,
    /// `noStreams`, `tooManyStreams`, `peerGone`, ... as §8 says; reply with its ``DBusStreamRefusal/errorName``).
    func openBusStream(bundle: String, credentials: PeerCredentials, process: ProcessStamp? = nil, continuation: UInt64) -> EventLoopFuture<DBusStream> {
        makeBusStream(bundle: bundle, credentials: credentials, process: process, token: nil).flatMap { [self] stream in
            // On the loop (the stream's channel runs on the agent's): the coordinator's state lives there.
            if busStreamAdmitted(bundle: bundle, on: stream.connection) {
                handoff.openStream(continuation: continuation, bundle: bundle, on: stream.connection)
            }
            return stream.opened.map { stream }
        }
    }

    /// The originating app `bundle` was told `incomingStream(activity, token)` on its main connection (F3): the
    /// stream's pipes, for `AcceptStream(t activity, t stream, h input, h output)`. Then, within 5 s, on a successful
    /// reply ``acceptBusStream(_:)``, on an error reply or none ``declineBusStream(_:message:)``.
    func prepareBusStream(bundle: String, credentials: PeerCredentials, process: ProcessStamp? = nil, token: Data) -> EventLoopFuture<DBusStream> {
        makeBusStream(bundle: bundle, credentials: credentials, process: process, token: token)
    }

    /// The app took the stream (`AcceptStream` answered): the stream opens. The future is ``DBusStream/opened``:
    /// it fails when the announcement had expired (`notPermitted`) or the session went (`peerGone`).
    @discardableResult
    func acceptBusStream(_ stream: DBusStream) -> EventLoopFuture<Void> {
        guard let token = stream.token else {
            stream.connection.refuse(.protocolViolation, "stream \(stream.number) was opened by its app, not announced to it")
            return stream.opened
        }
        loop.execute { [self] in
            guard busStreamAdmitted(bundle: stream.bundle, on: stream.connection) else { return }
            handoff.acceptStream(token: token, bundle: stream.bundle, on: stream.connection)
        }
        return stream.opened
    }

    /// The app declined the stream (an error reply to `AcceptStream`, `message` its text): the other device's app
    /// is refused `noStreams`, and the pipes close.
    func declineBusStream(_ stream: DBusStream, message: String) {
        loop.execute { [self] in
            if let token = stream.token { handoff.streamDeclined(token: token, bundle: stream.bundle, message: message) }
            stream.conduit.close()
        }
    }

    /// The pipes and the connection over them, the conduit attached to it, on the agent's loop.
    private func makeBusStream(bundle: String, credentials: PeerCredentials, process: ProcessStamp?, token: Data?) -> EventLoopFuture<DBusStream> {
        let pipes: DBusStreamPipes
        do {
            pipes = try DBusStreamPipes()
        } catch {
            return loop.makeFailedFuture(error)
        }
        return DBusStreamConduit.make(on: loop, pipes: pipes, credentials: credentials).map { [self] conduit in
            let connection = IPCConnection(conduit: conduit, credentials: credentials, handler: AgentForwarder(self), process: process)
            conduit.attach(connection)
            return DBusStream(bundle: bundle, token: token, pipes: pipes, connection: connection, conduit: conduit)
        }.flatMapErrorThrowing { error in
            // The agent's ends went with the conduit; the app's were never handed out.
            close(pipes.appInput)
            close(pipes.appOutput)
            throw error
        }
    }

    /// A stream's checks (§7 as for a stream hello, the executable being the bus registration's): the agent's user,
    /// a registered app with a team. False after refusing the connection with the first failure.
    private func busStreamAdmitted(bundle: String, on connection: IPCConnection) -> Bool {
        let credentials = connection.credentials
        guard credentials.uid == getuid() else {
            connection.refuse(.notPermitted, "process \(credentials.pid) belongs to user \(credentials.uid), this agent to \(getuid())")
            return false
        }
        guard let app = registry.app(bundleIdentifier: bundle), app.isIdentityResolved, app.teamIdentifier != nil else {
            connection.refuse(.unknownApp, "\(bundle) is not a registered app with a resolved identity and team (see `baton apps inspect`)")
            return false
        }
        return true
    }
}
