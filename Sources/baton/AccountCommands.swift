import ArgumentParser
import BatonAgent
import Foundation

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Give this device its identity and a one-device account.",
        discussion: """
            Creates a key pair and a self-signed certificate (the device id is its SHA-256), and an account holding \
            only this device. Pair other devices with `baton pair` or `baton invite`. An existing identity is never \
            replaced.
            """
    )

    @OptionGroup var state: StateOptions

    @Option(help: "A name for this device, shown on the others (default: the host name).")
    var name: String?

    func run() throws {
        let deviceName = name ?? ProcessInfo.processInfo.hostName
        let (identity, _) = try reportingAgentErrors { try state.store.initialize(name: deviceName) }
        print("This device is \"\(identity.name)\", id \(identity.id)")
        print("State: \(state.store.folder.path)")
    }
}

struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the devices of this account: which are reachable, and when each was last seen.",
        discussion: """
            Each other device whose agent address is known is probed with a short sync session (at most \
            --probe-seconds), which also brings the rosters in step. Use --offline to list from the local roster only.
            """
    )

    @OptionGroup var state: StateOptions

    @Flag(help: "Also list removed devices.")
    var all = false

    @Flag(help: "Do not contact the other devices.")
    var offline = false

    @Option(help: "How long to wait for each device's answer.")
    var probeSeconds = 2.0

    /// Probes every known address at once; each answer or failure within the time limit.
    func probe(_ store: AccountStore, _ identity: DeviceIdentity, _ peers: [DeviceID: PeerRecord]) async -> [DeviceID: String] {
        let targets = peers.compactMap { id, record in record.address.flatMap(PeerAddress.init(argument:)).map { (id, $0) } }
        let limit = probeSeconds
        return await withTaskGroup(of: (DeviceID, String).self) { group in
            for (id, address) in targets {
                group.addTask {
                    await withTaskGroup(of: String?.self) { race in
                        race.addTask {
                            do {
                                _ = try await syncOnce(with: address, store: store, identity: identity, port: agentPort(store))
                                return "reachable at \(address)"
                            } catch let error as BatonAgentError {
                                return "unreachable at \(address) (\(error.code))"
                            } catch {
                                return "unreachable at \(address)"
                            }
                        }
                        race.addTask {
                            try? await Task.sleep(for: .milliseconds(Int(limit * 1000)))
                            return nil
                        }
                        let first = await race.next() ?? nil
                        race.cancelAll()
                        return (id, first ?? "no answer within \(limit) s from \(address)")
                    }
                }
            }
            var results: [DeviceID: String] = [:]
            for await (id, status) in group { results[id] = status }
            return results
        }
    }

    func run() async throws {
        let store = state.store
        let identity = try reportingAgentErrors { try store.identity() }
        let peersBefore = try reportingAgentErrors { try store.peers() }
        let rosterBefore = try reportingAgentErrors { try store.roster() }
        let reachability = offline ? [:] : await probe(store, identity, peersBefore.filter { rosterBefore.isActive($0.key) && $0.key != identity.id })
        let roster = try reportingAgentErrors { try store.roster() }
        let peers = (try? store.peers()) ?? peersBefore
        let formatter = ISO8601DateFormatter()
        for member in roster.members.values.sorted(by: { ($0.name, $0.id) < ($1.name, $1.id) }) {
            if let revoked = roster.revocations[member.id] {
                if all { say("\(member.id.short)  \(member.name)  removed \(formatter.string(from: revoked.revokedAt))") }
                continue
            }
            if member.id == identity.id {
                say("\(member.id.short)  \(member.name)  this device")
                continue
            }
            let seen = peers[member.id]?.lastSeen.map { "last seen \(formatter.string(from: $0))" } ?? "never seen"
            let status = reachability[member.id] ?? (peers[member.id]?.address == nil ? "address unknown" : "not probed")
            say("\(member.id.short)  \(member.name)  \(status), \(seen)")
        }
        say("account key epoch \(roster.accountKey.epoch), \(roster.activeMembers.count) active device\(roster.activeMembers.count == 1 ? "" : "s")")
    }
}

struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove a device from the account.",
        discussion: """
            The device is revoked and the account key rotated at once on this device; the other members learn both \
            the next time they meet this one. From then on the removed device can open no session with them and read \
            none of their adverts.
            """
    )

    @OptionGroup var state: StateOptions

    @Argument(help: "The device: its name, or the start of its id.")
    var device: String

    func run() throws {
        try reportingAgentErrors {
            let identity = try state.store.identity()
            var roster = try state.store.roster()
            guard let member = roster.member(named: device) else {
                throw BatonAgentError(.unknownDevice, "no single device of this account is named or starts with \"\(device)\" (see `baton devices`)")
            }
            guard member.id != identity.id else {
                throw BatonAgentError(.unknownDevice, "\"\(device)\" is this device; remove it from another one")
            }
            guard roster.revoke(member.id, by: identity.id, at: Date(), newKey: AccountStore.randomKey()) else {
                print("\(member.name) was already removed")
                return
            }
            try state.store.saveRoster(roster)
            print("Removed \(member.name) (\(member.id.short)); account key rotated to epoch \(roster.accountKey.epoch)")
        }
    }
}
