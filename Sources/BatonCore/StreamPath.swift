/// How a continuation stream's bytes travel (issue 30).
public enum StreamPath: String, Sendable, Hashable, CaseIterable {
    /// The two apps hold a TCP connection with TLS 1.3 between them; the agents only introduced them.
    case direct
    /// Through both agents, over their session (docs/PROTOCOL.md §8): where either end cannot go direct.
    case relayed
}
