import BatonCore
import Crypto
import Foundation

/// The conversations that build and keep the account (docs/PROTOCOL.md, "Account sessions"). Each runs over a
/// ``MessageChannel``: TLS 1.3 between device certificates in the agent, an in-memory pipe in tests.
public enum AccountFlows {
    /// How long a peer may take to answer a protocol step.
    public static let stepTimeout = 10.0
    /// How long the other person may take to compare codes and confirm.
    public static let confirmationTimeout = 120.0

    static func message(_ type: String, _ fields: [String: PropertyList] = [:]) -> PropertyList {
        var all = fields
        all["t"] = .string(type)
        return .dictionary(all)
    }

    /// Receives the next message, which must be of `type`; an `error` message from the peer becomes `error`.
    static func expect(_ type: String, on channel: MessageChannel, timeout: Double = stepTimeout, refusal: BatonAgentError.Code = .protocolViolation) async throws -> PropertyList {
        let message = try await channel.receive(timeout: timeout)
        if message["t"]?.stringValue == "error" {
            throw BatonAgentError(refusal, "the peer refused: \(message["message"]?.stringValue ?? "no reason given")")
        }
        guard message["t"]?.stringValue == type else {
            throw BatonAgentError(.protocolViolation, "expected \(type), the peer sent \(message["t"]?.stringValue ?? "something untyped")")
        }
        return message
    }

    static func refuse(_ channel: MessageChannel, _ error: BatonAgentError) async -> BatonAgentError {
        try? await channel.send(message("error", ["message": .string(error.message)]))
        return error
    }

    static func peerCertificate(_ channel: MessageChannel) throws -> Data {
        guard let certificate = channel.peerCertificate else {
            throw BatonAgentError(.protocolViolation, "the session has no verified peer certificate")
        }
        return certificate
    }

    static func decodeRoster(in message: PropertyList) throws -> Roster {
        guard let data = message["roster"]?.dataValue else { throw BatonAgentError(.protocolViolation, "the message carries no roster") }
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
        let nonce = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        let hello = message("pair-hello", ["nonce": .data(Data(nonce)), "name": .string(identity.name)])
        if initiator { try await channel.send(hello) }
        let theirs = try await expect("pair-hello", on: channel, refusal: .pairingDeclined)
        if !initiator { try await channel.send(hello) }
        guard let peerNonce = theirs["nonce"]?.dataValue, peerNonce.count == 16, let peerName = theirs["name"]?.stringValue else {
            throw await refuse(channel, BatonAgentError(.protocolViolation, "the peer's hello lacks a 16-byte nonce or a name"))
        }
        let certificate = try peerCertificate(channel)
        let code = PairingCode.compute(
            localCertificate: identity.certificateDER,
            localNonce: nonce,
            peerCertificate: certificate,
            peerNonce: Array(peerNonce)
        )
        let accepted = await confirm(code)
        try await channel.send(message("pair-confirm", ["ok": .bool(accepted)]))
        let answer = try await expect("pair-confirm", on: channel, timeout: confirmationTimeout, refusal: .pairingDeclined)
        guard accepted else { throw BatonAgentError(.pairingDeclined, "pairing declined on this device") }
        guard answer["ok"]?.boolValue == true else { throw BatonAgentError(.pairingDeclined, "the other device declined the pairing") }

        let peer = Roster.Member(certificate: certificate, name: peerName, addedBy: identity.id, addedAt: Date())
        // The initiator sends its roster; the responder merges it, adds the initiator, and answers with the result,
        // which the initiator merges in turn (adding the responder).
        if initiator { try await channel.send(message("roster", ["roster": .data(try store.roster().encoded())])) }
        let theirRoster = try decodeRoster(in: try await expect("roster", on: channel))
        let roster = try store.updateRoster { local in
            local.merge(theirRoster, newKey: AccountStore.randomKey())
            local.add(peer)
            return local
        }
        if !initiator { try await channel.send(message("roster", ["roster": .data(try roster.encoded())])) }
        return PairingResult(code: code, peer: peer, roster: roster)
    }

    // MARK: Invites

    /// The inviter's side: checks the joiner's secret against the open invites (each works once), adds the joiner
    /// with the certificate it presented, and answers with the roster.
    public static func admit(over channel: MessageChannel, identity: DeviceIdentity, store: AccountStore, now: Date = Date()) async throws -> Roster.Member {
        let join = try await expect("join", on: channel)
        guard let secret = join["secret"]?.dataValue, secret.count == 16, let name = join["name"]?.stringValue else {
            throw await refuse(channel, BatonAgentError(.protocolViolation, "the join lacks a 16-byte secret or a name"))
        }
        do {
            try store.consumeInvite(secret: Array(secret), now: now)
        } catch let error as BatonAgentError {
            throw await refuse(channel, error)
        }
        let joinerRoster = try decodeRoster(in: join)
        let joiner = Roster.Member(certificate: try peerCertificate(channel), name: name, addedBy: identity.id, addedAt: now)
        let roster = try store.updateRoster { local in
            local.merge(joinerRoster, newKey: AccountStore.randomKey())
            local.add(joiner)
            return local
        }
        try await channel.send(message("welcome", ["roster": .data(try roster.encoded())]))
        return joiner
    }

    /// The joiner's side. The channel must already be pinned to the inviter named in the token (the TLS layer
    /// refused any other certificate), so the secret is only ever revealed to the inviter.
    public static func join(over channel: MessageChannel, token: InviteToken, identity: DeviceIdentity, store: AccountStore) async throws -> Roster {
        guard let certificate = channel.peerCertificate, DeviceID(certificateDER: certificate) == token.inviter else {
            throw BatonAgentError(.peerRefused, "the device answering is not the inviter named in the token")
        }
        try await channel.send(
            message("join", ["secret": .data(Data(token.secret)), "name": .string(identity.name), "roster": .data(try store.roster().encoded())])
        )
        let welcome = try await expect("welcome", on: channel, refusal: .inviteRejected)
        let theirs = try decodeRoster(in: welcome)
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
        var fields: [String: PropertyList] = ["roster": .data(try store.roster().encoded())]
        if let agentPort { fields["agentPort"] = .integer(Int64(agentPort)) }
        let mine = message("sync", fields)
        if initiator { try await channel.send(mine) }
        let received = try await expect("sync", on: channel, refusal: .peerRefused)
        guard let roster = received["roster"]?.dataValue else { throw BatonAgentError(.protocolViolation, "the message carries no roster") }
        if !initiator { try await channel.send(mine) }
        let theirPort = received["agentPort"]?.integerValue.flatMap { (1...65_535).contains($0) ? Int($0) : nil }
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
        if try store.recordPeer(peer, address: address) {
            log("\(store.peersURL.path) was damaged: set aside as peers.plist.damaged, and rebuilt from syncs")
        }
        return merged
    }
}

/// Both values, or nil.
func zip<A, B>(_ first: A?, _ second: B?) -> (A, B)? {
    guard let first, let second else { return nil }
    return (first, second)
}
