import ArgumentParser
import BatonAgent
import Foundation
import Logging
import UnixSignals
import NIOCore
import NIOPosix
import NIOConcurrencyHelpers
import BatonRegistry

/// Prints a line and flushes it at once, so a person (or a test reading the pipe) sees it immediately.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

/// The port the agent of this state folder announced, if it runs.
func agentPort(_ store: AccountStore) -> Int? {
    guard let data = FileManager.default.contents(atPath: store.folder.appendingPathComponent("agent-port").path) else { return nil }
    return Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}

/// One sync session with `address`; returns the merged roster.
func syncOnce(with address: PeerAddress, store: AccountStore, identity: DeviceIdentity, port: Int?) async throws -> Roster {
    try await AccountTransport.withSession(host: address.host, port: address.port, identity: identity, policy: .activeMembers(of: store)) { session in
        try await AccountFlows.sync(over: session, initiator: true, identity: identity, store: store, agentPort: port, dialed: address.description)
    }
}


struct PairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair this device with another by comparing a six-digit code.",
        discussion: """
            On one device run `baton pair` (it waits for the other); on the other run `baton pair HOST:PORT` with the \
            first device's address. Both show a code derived from both certificates and the session: if the codes \
            match, answer yes on both. A device in the middle would make them differ. Afterwards both devices hold the \
            same account roster and key.
            """
    )

    @OptionGroup var state: StateOptions

    @Argument(help: "The waiting device's address; without it, this device waits.")
    var address: PeerAddress?

    @Option(help: "The port to wait on.")
    var port = 47811

    @Option(help: "The address to wait on.")
    var host = "0.0.0.0"

    @Flag(help: "Confirm the code without asking (for tests and scripts that compare codes themselves).")
    var yes = false

    @Option(help: "Seconds to wait for the other device and for the person's answer.")
    var timeout = 120.0

    func confirm(_ code: String) -> Bool {
        say("Pairing code: \(code.prefix(3)) \(code.suffix(3))")
        if yes {
            say("Confirmed without asking (--yes).")
            return true
        }
        print("Does the other device show the same code? [y/N] ", terminator: "")
        fflush(nil)
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
        return answer == "y" || answer == "yes"
    }

    func run() async throws {
        let store = state.store
        let identity = try reportingAgentErrors { try store.identity() }
        let result: AccountFlows.PairingResult = try await reportingAgentErrorsAsync {
            if let address {
                say("Connecting to \(address) to pair...")
                return try await AccountTransport.withSession(host: address.host, port: address.port, identity: identity, policy: .anyDevice) { session in
                    try await AccountFlows.pair(initiator: true, over: session, identity: identity, store: store) { confirm($0) }
                }
            }
            let listener = try await AccountTransport.listen(host: host, port: port, identity: identity, policy: .anyDevice)
            say("Waiting for a device to pair on port \(listener.port); on the other device run: baton pair THIS-HOST:\(listener.port)")
            var outcome: AccountFlows.PairingResult?
            try await listener.serveUntilDone(timeout: timeout) { session in
                do {
                    outcome = try await AccountFlows.pair(initiator: false, over: session, identity: identity, store: store) { confirm($0) }
                    return true
                } catch let error as BatonAgentError {
                    say("Pairing attempt from \(session.peerName) failed: \(error)")
                    throw error
                }
            }
            guard let outcome else { throw BatonAgentError(.timedOut, "no pairing completed") }
            return outcome
        }
        say("Paired with \(result.peer.name) (\(result.peer.id.short)). The account has \(result.roster.activeMembers.count) devices.")
    }
}

struct InviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Print a one-time token that lets a headless machine join, and wait for it.",
        discussion: """
            The token holds this device's address, its device id (the joiner accepts no other certificate), a 128-bit \
            secret and an expiry. It works once. On the new machine: baton join TOKEN.
            """
    )

    @OptionGroup var state: StateOptions

    @Option(help: "The port to wait on.")
    var port = 47812

    @Option(help: "The address to wait on.")
    var host = "0.0.0.0"

    @Option(help: "The address the joiner should dial (default: this machine's first non-loopback IPv4 address).")
    var address: String?

    @Option(help: "Minutes the token stays valid.")
    var expires = 10.0

    func validate() throws {
        guard expires > 0, expires <= 24 * 60 else { throw ValidationError("--expires must be between 0 and 1440 minutes.") }
    }

    static func guessAddress() -> String {
        let devices = (try? System.enumerateDevices()) ?? []
        for device in devices {
            if case .v4 = device.address, let ip = device.address?.ipAddress, !ip.hasPrefix("127.") { return ip }
        }
        return "127.0.0.1"
    }

    func run() async throws {
        let store = state.store
        let identity = try reportingAgentErrors { try store.identity() }
        try await reportingAgentErrorsAsync {
            let listener = try await AccountTransport.listen(host: host, port: port, identity: identity, policy: .anyDevice)
            let expiry = Date().addingTimeInterval(expires * 60)
            let secret = try store.createInvite(expires: expiry)
            let token = InviteToken(host: address ?? Self.guessAddress(), port: listener.port, inviter: identity.id, secret: secret, expires: expiry)
            say(token.description)
            say("Valid for \(Int(expires)) minutes, once. On the new machine run: baton join <token>")
            try await listener.serveUntilDone(timeout: expires * 60) { session in
                do {
                    let member = try await AccountFlows.admit(over: session, identity: identity, store: store)
                    say("Welcomed \(member.name) (\(member.id.short)).")
                    return true
                } catch let error as BatonAgentError {
                    say("A join attempt from \(session.peerName) failed: \(error)")
                    return false
                }
            }
        }
    }
}

struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join an account with a token from `baton invite`."
    )

    @OptionGroup var state: StateOptions

    @Argument(help: "The token.")
    var token: String

    func run() async throws {
        let store = state.store
        let identity = try reportingAgentErrors { try store.identity() }
        let invite: InviteToken
        do {
            invite = try InviteToken(parsing: token)
        } catch let error as BatonProtocolError {
            throw CommandLineError(error.description)
        }
        guard invite.expires > Date() else { throw CommandLineError("the invite token expired at \(invite.expires); ask for a new one [inviteExpired]") }
        let roster = try await reportingAgentErrorsAsync {
            try await AccountTransport.withSession(host: invite.host, port: invite.port, identity: identity, policy: .only(invite.inviter)) { session in
                try await AccountFlows.join(over: session, token: invite, identity: identity, store: store)
            }
        }
        _ = try? store.recordPeer(invite.inviter, address: nil)
        say("Joined. The account has \(roster.activeMembers.count) devices: \(roster.activeMembers.map(\.name).joined(separator: ", ")).")
    }
}

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Exchange rosters with other devices of the account now.",
        discussion: "Without --peer, every device whose agent address is known. Exits 1 if any could not be synced."
    )

    @OptionGroup var state: StateOptions

    @Option(name: .customLong("peer"), help: "An agent's HOST:PORT; repeatable.")
    var peers: [PeerAddress] = []

    func run() async throws {
        let store = state.store
        let identity = try reportingAgentErrors { try store.identity() }
        var targets = peers.map(\.description)
        for address in store.knownPeerAddresses(excluding: identity.id) where !targets.contains(address) {
            targets.append(address)
        }
        guard !targets.isEmpty else {
            say("No peer addresses known; give one with --peer HOST:PORT.")
            return
        }
        var failed = 0
        for target in targets {
            guard let address = PeerAddress(argument: target) else { continue }
            do {
                let roster = try await syncOnce(with: address, store: store, identity: identity, port: agentPort(store))
                say("\(address): synced (\(roster.activeMembers.count) devices, key epoch \(roster.accountKey.epoch))")
            } catch let error as BatonAgentError {
                failed += 1
                say("\(address): \(error)")
            }
        }
        if failed > 0 { throw ExitCode(1) }
    }
}

