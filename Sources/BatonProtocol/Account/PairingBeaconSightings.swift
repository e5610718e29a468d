/// What `baton pair --find` heard while it listened: one entry per waiting `baton pair` run (per beacon nonce),
/// however many copies arrived, with every source address it came from. Pure: the listener feeds it datagrams and
/// their source hosts; it knows no sockets.
///
/// Bounded, since anyone on the LAN can send beacons: at most ``maximumSightings`` runs and
/// ``maximumHostsPerSighting`` addresses each are kept; more are dropped (and counted).
public struct PairingBeaconSightings: Sendable, Hashable {
    /// One waiting device.
    public struct Sighting: Sendable, Hashable {
        /// Its display name, as its first beacon said.
        public let name: String
        /// The TCP port it waits on, as its first beacon said.
        public let port: UInt16
        /// Its run's nonce.
        public let nonce: [UInt8]
        /// The source addresses its beacons came from (`10.0.0.2`, `fe80::1%eth0`), IPv4 first: the ones to dial,
        /// in order.
        public private(set) var hosts: [String]

        mutating func add(_ host: String) -> Bool {
            guard !hosts.contains(host), hosts.count < PairingBeaconSightings.maximumHostsPerSighting else { return false }
            hosts.append(host)
            // IPv4 first: the address a person recognises, and one that needs no interface named.
            hosts = hosts.filter { !$0.contains(":") } + hosts.filter { $0.contains(":") }
            return true
        }
    }

    /// More waiting devices than anyone would choose from in one list: the rest of a flood is dropped.
    public static let maximumSightings = 32
    /// IPv4 and IPv6 on a couple of interfaces; more addresses for one run are dropped.
    public static let maximumHostsPerSighting = 4

    /// The devices heard, in the order first heard.
    public private(set) var sightings: [Sighting] = []
    /// Datagrams that started as a beacon but did not read as one (a newer version, damage, a hostile sender).
    public private(set) var unreadable = 0
    /// Beacons dropped because the list was full, or a later copy named another name or port than the first.
    public private(set) var dropped = 0

    /// The devices heard as a list shows them: by name, then by first address, so a number read from one listing
    /// names the same device in the next (`--choose N`), whichever beacon happened to arrive first.
    public var byName: [Sighting] {
        sightings.sorted { ($0.name, $0.hosts.first ?? "") < ($1.name, $1.hosts.first ?? "") }
    }

    /// An empty list.
    public init() {}

    /// Records one datagram from `host`; anything that is not a beacon (an advert on the same port) is ignored.
    /// Returns the sighting when the datagram named a device not heard before.
    @discardableResult
    public mutating func receive(_ datagram: some Collection<UInt8>, from host: String) -> Sighting? {
        let beacon: PairingBeacon
        do {
            beacon = try PairingBeacon(datagram: datagram)
        } catch let error as BatonProtocolError where error.code == .notPairingBeacon {
            return nil
        } catch {
            unreadable += 1
            return nil
        }
        return record(beacon, from: host)
    }

    /// Records `beacon` heard from `host`. Returns the sighting when it is a device not heard before.
    @discardableResult
    public mutating func record(_ beacon: PairingBeacon, from host: String) -> Sighting? {
        if let index = sightings.firstIndex(where: { $0.nonce == beacon.nonce }) {
            // The first copy decides the name and port: a later one that differs is someone else's forgery or damage.
            guard sightings[index].name == beacon.name, sightings[index].port == beacon.port else {
                dropped += 1
                return nil
            }
            _ = sightings[index].add(host)
            return nil
        }
        guard sightings.count < Self.maximumSightings else {
            dropped += 1
            return nil
        }
        let sighting = Sighting(name: beacon.name, port: beacon.port, nonce: beacon.nonce, hosts: [host])
        sightings.append(sighting)
        return sighting
    }
}
