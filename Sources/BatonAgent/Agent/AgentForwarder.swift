/// The agent as its links and its app socket hold it: weakly (issue 26 item 1: no two objects hold each other).
///
/// The agent holds its links (``PeerLinks``) and its app socket's listener; they, each ``PeerLink`` and each
/// ``IPCConnection`` hold this instead of the agent, so nothing they keep (an app still connected, a link still
/// open, the listener's accept handler) keeps an agent alive once its owner has let it go. Once the agent is gone,
/// what still arrives finds no one: a peer's request is answered `notCurrent` and its link closed, an app's
/// connection is closed.
///
/// `Sendable`: its one field is a `weak let`, never assigned after `init`.
final class AgentForwarder: PeerLinkResponder, IPCHandler {
    weak let agent: Agent?

    init(_ agent: Agent) {
        self.agent = agent
    }

    // MARK: What peers ask over a link

    func respond(
        to request: SessionMultiplexer.Request,
        on link: PeerLink,
        reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> PeerLink.Cancel {
        guard let agent else { return Self.gone(link, reply) }
        return agent.respond(to: request, on: link, reply: reply)
    }

    func respondToStream(
        id: UInt64,
        sequence: UInt64,
        window: UInt64,
        direct: DirectStreamOffer?,
        on link: PeerLink,
        reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> PeerLink.Cancel {
        guard let agent else { return Self.gone(link, reply) }
        return agent.handoff.respondToStream(id: id, sequence: sequence, window: window, direct: direct, on: link, reply: reply)
    }

    func peerContinued(sequence: UInt64, on link: PeerLink) {
        agent?.peerContinued(sequence: sequence, on: link)
    }

    func peerClock(_ milliseconds: UInt64, on link: PeerLink) {
        agent?.peerClock(milliseconds, on: link)
    }

    func linkClosed(_ link: PeerLink) {
        agent?.linkClosed(link)
    }

    func linkOpened(_ link: PeerLink) {
        guard let agent else { return link.close() }
        agent.linkOpened(link)
    }

    /// A request on a link of an agent that is gone: it stopped with the agent (its broker failed everything
    /// current), and so does the link.
    private static func gone(_ link: PeerLink, _ reply: @Sendable (SessionMultiplexer.Reply) -> Void) -> PeerLink.Cancel {
        reply(.failed(.notCurrent, "the agent that answered here has stopped"))
        link.close()
        return {}
    }

    // MARK: What apps send over the app socket

    func ipcReceived(_ message: IPCMessage, on connection: IPCConnection) {
        guard let agent else { return connection.conduit.close() }
        agent.ipcReceived(message, on: connection)
    }

    func ipcClosed(_ connection: IPCConnection) {
        agent?.ipcClosed(connection)
    }

    func ipcRefused(_ connection: IPCConnection, code: IPCRefusal, message: String) {
        agent?.ipcRefused(connection, code: code, message: message)
    }
}
