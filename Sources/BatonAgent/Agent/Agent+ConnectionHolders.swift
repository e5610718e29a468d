import BatonClient
import NIOConcurrencyHelpers

extension Agent {
    /// Whether the agent has said that it cannot see who holds app connections (said once: it is the kernel's answer,
    /// the same for every connection).
    static let holdersUnknownLogged = NIOLockedValueBox(false)

    /// Why `connection` may not speak for an app because of who holds its client end, or nil when the process that
    /// connected holds it and no other process does (issue 25 item 8).
    ///
    /// The check that came before (ISSUE 10 item 4) compared what the connecting process ran when the connection
    /// was *accepted*; a process that connects, hands the socket to a child and execs the app's binary before the
    /// agent gets to the accept looked like the app (seen in 1 of 40 tries). Who holds the socket now cannot be
    /// staged that way: after the exec the connecting process no longer holds it (close-on-exec), or holds it
    /// alongside the child, and either way the hello is refused. The pidfd taken at accept proves afterwards that
    /// the pid read in `/proc` was still the connecting process, not a recycled pid.
    func heldElsewhere(_ connection: IPCConnection) -> String? {
        guard let cookie = connection.cookie else { return nil }
        let pid = connection.credentials.pid
        switch SocketHolders.ofPeer(cookie: cookie) {
        case .unknown(let reason, let lasting):
            // Where the kernel has no sock_diag for Unix sockets the executable checks stand alone: said once. A
            // passing failure (no descriptor left, the client already gone) is not worth a line; the earlier checks
            // refuse a client that cannot be looked at.
            guard lasting else { return nil }
            let first = Self.holdersUnknownLogged.withLockedValue { logged in
                defer { logged = true }
                return !logged
            }
            if first { log("cannot see which processes hold app connections (\(reason)); apps are told apart by their executable only") }
            return nil
        case .held(let holders):
            if let pinned = connection.pinned, !pinned.isRunning {
                return "process \(pid), which made this connection, has exited; another process speaks on it"
            }
            let others = holders.filter { $0 != pid }
            guard others.isEmpty else {
                let named = others.prefix(4).map { "\($0) (\(PeerCredentials.executable(of: $0) ?? "?"))" }.joined(separator: ", ")
                return "the connection process \(pid) made is also held by process \(named); an app's connection must be its own"
            }
            guard holders.contains(pid) else {
                return "process \(pid) no longer holds the connection it made; another process speaks on it"
            }
            return nil
        }
    }
}
