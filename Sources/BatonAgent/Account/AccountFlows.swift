import BatonCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The conversations that build and keep the account (docs/PROTOCOL.md, "Account sessions"). Each runs over a
/// ``MessageChannel``: TLS 1.3 between device certificates in the agent, an in-memory pipe in tests.
public enum AccountFlows {
    /// How long a peer may take to answer a protocol step.
    public static let stepTimeout = 10.0
    /// How long the other person may take to compare codes and confirm.
    public static let confirmationTimeout = 120.0

    /// Sends one typed message.
    static func send(_ message: AccountMessage, on channel: MessageChannel) async throws {
        try await channel.send(message.propertyList)
    }

    /// Receives the next message, which `match` must accept (it returns the fields of the type named `expected`);
    /// an `error` message from the peer becomes `refusal`; a malformed one is refused and becomes `protocolViolation`.
    static func expect<Value>(
        _ expected: AccountMessage.Kind,
        on channel: MessageChannel,
        timeout: Double = stepTimeout,
        refusal: BatonAgentError.Code = .protocolViolation,
        _ match: (AccountMessage) -> Value?
    ) async throws -> Value {
        let message: AccountMessage
        do {
            message = try AccountMessage(try await channel.receive(timeout: timeout))
        } catch let error as BatonProtocolError {
            throw await refuse(channel, BatonAgentError(.protocolViolation, "the peer sent a malformed message: \(error)"))
        }
        if case .error(let reason) = message {
            throw BatonAgentError(refusal, "the peer refused: \(reason)")
        }
        guard let value = match(message) else {
            throw BatonAgentError(.protocolViolation, "expected \(expected), the peer sent \(message.kind)")
        }
        return value
    }

    static func refuse(_ channel: MessageChannel, _ error: BatonAgentError) async -> BatonAgentError {
        try? await send(.error(message: error.message), on: channel)
        return error
    }

    static func peerCertificate(_ channel: MessageChannel) throws -> Data {
        guard let certificate = channel.peerCertificate else {
            throw BatonAgentError(.protocolViolation, "the session has no verified peer certificate")
        }
        return certificate
    }

    static func decodeRoster(_ data: Data) throws -> Roster {
        do {
            return try Roster(decoding: data)
        } catch {
            throw BatonAgentError(.protocolViolation, "the peer's roster is invalid: \(error)")
        }
    }

    // MARK: Pairing by numeric comparison

    /// What a pairing produced.
    public struct PairingResult: Sendable {
        /// The code both sides showed.
        public let code: String
        /// The device paired with.
        public let peer: Roster.Member
        /// The roster after pairing, as saved.
        public let roster: Roster
    }

    /// One side of a pairing. The initiator (the device that connected) speaks first; the code comes from both
    /// certificates as seen in this session and a nonce from each side. `confirm` shows the code and returns the
    /// person's answer; pairing completes only if both sides said yes.
    public static func pair(
        initiator: Bool,
        over channel: MessageChannel,
        identity: DeviceIdentity,
        store: AccountStore,
        confirm: (String) async -> Bool
    ) async throws -> PairingResult {
        let nonce = SymmetricKey(size: SymmetricKeySize(bitCount: AccountMessage.nonceLength * 8)).withUnsafeBytes { Array($0) }
        let hello = AccountMessage.pairHello(nonce: Data(nonce), name: identity.name)
        if initiator { try await send(hello, on: channel) }
        // The decoder insists on a nonce of `nonceLength` bytes and a name; a hello without them is refused.
        let (peerNonce, peerName) = try await expect(.pairHello, on: channel, refusal: .pairingDeclined) { message in
            if case .pairHello(let nonce, let name) = message { (nonce, name) } else { nil }
        }
        if !initiator { try await send(hello, on: channel) }
        let certificate = try peerCertificate(channel)
        let code = PairingCode.compute(
            localCertificate: identity.certificateDER,
            localNonce: nonce,
            peerCertificate: certificate,
            peerNonce: Array(peerNonce)
        )
        let accepted = await confirm(code)
        try await send(.pairConfirm(accepted: accepted), on: channel)
        let theyAccepted = try await expect(.pairConfirm, on: channel, timeout: confirmationTimeout, refusal: .pairingDeclined) { message in
            if case .pairConfirm(let accepted) = message { accepted } else { nil }
        }
        guard accepted else { throw BatonAgentError(.pairingDeclined, "pairing declined on this device") }
        guard theyAccepted else { throw BatonAgentError(.pairingDeclined, "the other device declined the pairing") }

        // The system's clock, not an agent's (issue 26 item 2): a roster date other devices and processes read.
        let peer = Roster.Member(certificate: certificate, name: peerName, addedBy: identity.id, addedAt: Date())
        // The initiator sends its roster; the responder merges it, adds the initiator, and answers with the result,
        // which the initiator merges in turn (adding the responder).
        if initiator { try await send(.roster(try store.roster().encoded()), on: channel) }
        let theirRoster = try decodeRoster(
            try await expect(.roster, on: channel) { message in
                if case .roster(let roster) = message { roster } else { nil }
            }
        )
        let roster = try store.updateRoster { local in
            local.merge(theirRoster, newKey: AccountStore.randomKey())
            local.add(peer)
            return local
        }
        if !initiator { try await send(.roster(try roster.encoded()), on: channel) }
        return PairingResult(code: code, peer: peer, roster: roster)
    }

    // MARK: Invites

    /// The inviter's side: checks the joiner's secret against the open invites (each works once), adds the joiner
    /// with the certificate it presented, and answers with the roster. `now` is the system's clock, not an agent's
    /// (issue 26 item 2): `baton invite` dated the invite by it.
    public static func admit(over channel: MessageChannel, identity: DeviceIdentity, store: AccountStore, now: Date = Date()) async throws -> Roster.Member {
        // The decoder insists on a secret of `secretLength` bytes, a name and a roster; a join without them is refused.
        let (secret, name, joinerRosterData) = try await expect(.join, on: channel) { message in
            if case .join(let secret, let name, let roster) = message { (secret, name, roster) } else { nil }
        }
        do {
            try store.consumeInvite(secret: Array(secret), now: now)
        } catch let error as BatonAgentError {
            throw await refuse(channel, error)
        }
        let joinerRoster = try decodeRoster(joinerRosterData)
        let joiner = Roster.Member(certificate: try peerCertificate(channel), name: name, addedBy: identity.id, addedAt: now)
        let roster = try store.updateRoster { local in
            local.merge(joinerRoster, newKey: AccountStore.randomKey())
            local.add(joiner)
            return local
        }
        try await send(.welcome(roster: try roster.encoded()), on: channel)
        return joiner
    }

    /// The joiner's side. The channel must already be pinned to the inviter named in the token (the TLS layer
    /// refused any other certificate), so the secret is only ever revealed to the inviter.
    public static func join(over channel: MessageChannel, token: InviteToken, identity: DeviceIdentity, store: AccountStore) async throws -> Roster {
        guard let certificate = channel.peerCertificate, DeviceID(certificateDER: certificate) == token.inviter else {
            throw BatonAgentError(.peerRefused, "the device answering is not the inviter named in the token")
        }
        try await send(.join(secret: Data(token.secret), name: identity.name, roster: try store.roster().encoded()), on: channel)
        let theirs = try decodeRoster(
            try await expect(.welcome, on: channel, refusal: .inviteRejected) { message in
                if case .welcome(let roster) = message { roster } else { nil }
            }
        )
        return try store.updateRoster { local in
            local.merge(theirs, newKey: AccountStore.randomKey())
            return local
        }
    }

    // MARK: Sync

    /// Both sides send their roster and merge the other's. Run only on sessions whose TLS layer admitted active
    /// members; afterwards each side checks the peer is still active (it may have learnt of its removal just now).
    ///
    /// Each side tells the other the port its agent listens on (`agentPort`), so both learn where to reach the other
    /// next time; `dialed` is the address the initiator connected to.
    public static func sync(
        over channel: MessageChannel,
        initiator: Bool,
        identity: DeviceIdentity,
        store: AccountStore,
        agentPort: Int? = nil,
        dialed: String? = nil
    ) async throws -> Roster {
        let mine = AccountMessage.sync(roster: try store.roster().encoded(), agentPort: agentPort)
        if initiator { try await send(mine, on: channel) }
        let (roster, theirPort) = try await expect(.sync, on: channel, refusal: .peerRefused) { message in
            if case .sync(let roster, let port) = message { (roster, port) } else { nil }
        }
        if !initiator { try await send(mine, on: channel) }
        let peer = DeviceID(certificateDER: try peerCertificate(channel))
        let merged = try absorbSync(roster: roster, agentPort: theirPort, from: peer, host: channel.peerHost, dialed: dialed, store: store)
        return merged
    }
}

extension AccountFlows {
    /// The receiving half of a sync, shared by the one-shot exchange and the agent's multiplexed sessions: merges
    /// the peer's roster, checks the peer is still active (it may have learnt of its removal just now), and records
    /// where its agent listens (`dialed`, the address connected to, or the peer's host with the port it announced).
    public static func absorbSync(
        roster: Data,
        agentPort: Int?,
        from peer: DeviceID,
        host: String?,
        dialed: String?,
        store: AccountStore,
        log: (String) -> Void = { _ in }
    ) throws -> Roster {
        let theirs: Roster
        do {
            theirs = try Roster(decoding: roster)
        } catch {
            throw BatonAgentError(.protocolViolation, "the peer's roster is invalid: \(error)")
        }
        let merged = try store.updateRoster { local in
            local.merge(theirs, newKey: AccountStore.randomKey())
            return local
        }
        guard merged.isActive(peer) else {
            throw BatonAgentError(.peerRefused, "\(peer.short) has been removed from the account")
        }
        let address = dialed ?? zip(host, agentPort).map(Agent.joinHostPort)
        do {
            if try store.recordPeer(peer, address: address) {
                log("\(store.peersURL.path) was damaged: set aside as peers.plist.damaged, and rebuilt from syncs")
            }
        } catch {
            // Where a peer listens is a cache that every sync writes again, while the roster above is the account:
            // a full disk (issue 25 item 9) must not fail a merge that was saved, or one that changed nothing.
            log("could not record where \(peer.short) listens (the roster is merged): \(error)")
        }
        return merged
    }
}

/// Both values, or nil.
func zip<A, B>(_ first: A?, _ second: B?) -> (A, B)? {
    guard let first, let second else { return nil }
    return (first, second)
}
