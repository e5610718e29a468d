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
            On one device run `baton pair`: it waits, and announces itself on the local network (a small beacon on \
            the multicast groups Baton's adverts use, UDP port --discovery-port, every second; it holds the device's \
            name and the port it waits on, nothing about the account). On the other device of the same network run \
            `baton pair --find`: it listens for a few seconds, lists the devices waiting ("1) desktop \
            (10.0.0.2:47811)"), asks which, and connects. On other networks (across a router, a VPN), run \
            `baton pair HOST:PORT` with the waiting device's address instead.

            Either way both show a code derived from both certificates and the session: if the codes match, answer \
            yes on both. A device in the middle, or someone else's beacon under the same name, would make them \
            differ. Afterwards both devices hold the same account roster and key. No agent needs to run.
            """
    )

    @OptionGroup var state: StateOptions

    @Argument(help: "The waiting device's address; without it (and without --find), this device waits.")
    var address: PeerAddress?

    @Flag(help: "Look for devices waiting to pair on this network, list them, and pair with the one chosen.")
    var find = false

    @Option(name: .customLong("find-seconds"), help: ArgumentHelp("With --find: seconds to listen for waiting devices.", valueName: "seconds"))
    var findSeconds = 3.0

    @Option(help: ArgumentHelp("With --find: pair with device N of the list (sorted by name) without asking.", valueName: "N"))
    var choose: Int?

    @Option(help: "The port to wait on.")
    var port = 47811

    @Option(help: "The address to wait on (`::`: every address, IPv4 and IPv6). A loopback address is not announced.")
    var host = AgentConfiguration.anyHost

    @Flag(help: "Wait without announcing this device on the local network.")
    var noAnnounce = false

    @Option(help: "The UDP port of the beacons (the agents' discovery port).")
    var discoveryPort = 47810

    @Flag(help: "Confirm the code without asking (for tests and scripts that compare codes themselves); with --find, also take the only device found.")
    var yes = false

    @Option(help: "Seconds to wait for the other device and for the person's answer.")
    var timeout = 120.0

    func validate() throws {
        guard (1...65_535).contains(discoveryPort) else { throw ValidationError("--discovery-port must be a port number.") }
        if find, address != nil { throw ValidationError("Give either an address or --find, not both.") }
        if !find, choose != nil { throw ValidationError("--choose picks from the list of --find.") }
        if let choose, choose < 1 { throw ValidationError("--choose counts from 1.") }
        guard findSeconds > 0, findSeconds <= 60 else { throw ValidationError("--find-seconds must be between 0 and 60.") }
    }

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
                return try await pair(dialing: [address.host], port: address.port, identity: identity, store: store)
            }
            if find {
                let (hosts, port) = try await chooseWaitingDevice()
                return try await pair(dialing: hosts, port: port, identity: identity, store: store)
            }
            return try await wait(identity: identity, store: store)
        }
        say("Paired with \(result.peer.name) (\(result.peer.id.short)). The account has \(result.roster.activeMembers.count) devices.")
    }

    /// Connects to the first of `hosts` that answers on `port` and pairs as the initiator.
    func pair(dialing hosts: [String], port: Int, identity: DeviceIdentity, store: AccountStore) async throws -> AccountFlows.PairingResult {
        var unreachable: BatonAgentError?
        for host in hosts {
            let address = Agent.joinHostPort(host, port)
            say("Connecting to \(address) to pair...")
            do {
                return try await AccountTransport.withSession(host: host, port: port, identity: identity, policy: .anyDevice) { session in
                    try await AccountFlows.pair(initiator: true, over: session, identity: identity, store: store) { confirm($0) }
                }
            } catch let error as BatonAgentError where error.code == .peerUnreachable && host != hosts.last {
                // Another address of the same device (its IPv6 link-local beside its IPv4) may still answer.
                say("\(error)")
                unreachable = error
            }
        }
        throw unreachable ?? BatonAgentError(.peerUnreachable, "no address to connect to")
    }

    /// `--find`: listens for beacons, lists what it heard, and returns the chosen device's addresses and port.
    func chooseWaitingDevice() async throws -> (hosts: [String], port: Int) {
        say("Looking for devices waiting to pair on this network (\(Self.seconds(findSeconds)) s)...")
        let heard = try await PairingBeaconListener.listen(discoveryPort: discoveryPort, for: .milliseconds(Int64(findSeconds * 1000)))
        let found = heard.byName
        guard !found.isEmpty else { throw PairingBeaconListener.nothingHeard(seconds: findSeconds, discoveryPort: discoveryPort) }
        say("Found \(found.count) device\(found.count == 1 ? "" : "s") waiting to pair:")
        for (index, sighting) in found.enumerated() {
            say("\(index + 1)) \(sighting.name) (\(sighting.hosts.map { Agent.joinHostPort($0, Int(sighting.port)) }.joined(separator: ", ")))")
        }
        let number: Int
        if let choose {
            guard choose <= found.count else {
                throw CommandLineError("--choose \(choose), but only \(found.count) device\(found.count == 1 ? " was" : "s were") found")
            }
            number = choose
        } else if found.count == 1, yes {
            number = 1
        } else if yes {
            throw CommandLineError("\(found.count) devices wait to pair; say which with --choose N")
        } else {
            print("Pair with which? [\(found.count == 1 ? "1" : "1-\(found.count)"), or Enter to stop] ", terminator: "")
            fflush(nil)
            guard let answer = readLine().flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), (1...found.count).contains(answer) else {
                throw CommandLineError("no device chosen; nothing paired")
            }
            number = answer
        }
        let chosen = found[number - 1]
        return (chosen.hosts, Int(chosen.port))
    }

    /// Waits for the other device (announcing, unless told not to) and pairs as the responder.
    func wait(identity: DeviceIdentity, store: AccountStore) async throws -> AccountFlows.PairingResult {
        let listener: AccountTransport.Listener
        do {
            listener = try await AccountTransport.listen(host: host, port: port, identity: identity, policy: .anyDevice)
        } catch let error as BatonAgentError where host == AgentConfiguration.anyHost && error.code == .addressUnavailable {
            // IPv6 is off on this machine: IPv4 alone, as the agent does.
            listener = try await AccountTransport.listen(host: "0.0.0.0", port: port, identity: identity, policy: .anyDevice)
        }
        let announcing = !noAnnounce && !Self.isLoopback(host)
        let interfaces = PairingBeaconAnnouncer.interfaces()
        say(
            "Waiting for a device to pair on port \(listener.port); on the other device run: "
                + (announcing ? "baton pair --find (on this network) or " : "") + "baton pair THIS-HOST:\(listener.port)"
        )
        var announcer: Task<Void, Never>?
        if announcing {
            var nonce = [UInt8](repeating: 0, count: PairingBeacon.nonceLength)
            var random = SystemRandomNumberGenerator()
            for index in nonce.indices { nonce[index] = random.next() }
            let beacon = try PairingBeacon(nonce: nonce, displayName: identity.name, port: UInt16(listener.port))
            let names = Set(interfaces.v4 + interfaces.v6).sorted()
            if names.isEmpty {
                // Announced from the first round an interface carries multicast (Wi-Fi joined while waiting).
                say("Not announcing yet: no network interface here is up with multicast; until one is, the other device needs this device's address.")
            } else {
                say("Announcing \"\(beacon.name)\" on \(names.joined(separator: ", ")) (UDP \(discoveryPort), every second while waiting).")
            }
            let sender = PairingBeaconAnnouncer(beacon: beacon, discoveryPort: discoveryPort)
            announcer = Task { await sender.run { say("warning: \($0)") } }
        }
        defer { announcer?.cancel() }
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
        announcer?.cancel()
        await announcer?.value
        guard let outcome else { throw BatonAgentError(.timedOut, "no pairing completed") }
        return outcome
    }

    /// Whether `host` is a loopback address: nobody on the network could dial it, so it is not announced.
    static func isLoopback(_ host: String) -> Bool {
        host == "::1" || host.hasPrefix("127.") || host == "localhost"
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
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

