import BatonProtocol
import BatonRegistry
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import BatonAgent

/// Discovery as a service that owns its state (issue 26 item 1): the nearby table, the receiver's checks and the
/// activity advertised live in ``Discovery``, under no lock of the agent's, driven on an injected clock; its loop
/// (``DiscoveryService``) holds no agent.
@Suite("Discovery owns the nearby table and the advertised activity (issue 26 item 1)")
struct DiscoveryTests {
    static let laptop = Roster.Member(certificate: Data("laptop".utf8), name: "laptop", addedBy: nil, addedAt: Date(timeIntervalSince1970: 0))
    static let desktop = Roster.Member(certificate: Data("desktop".utf8), name: "desktop", addedBy: nil, addedAt: Date(timeIntervalSince1970: 0))
    static let start: UInt64 = 1_800_000_000_000
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    static func roster() -> Roster {
        var roster = Roster(founder: desktop, key: [UInt8](repeating: 0x42, count: 32))
        roster.add(laptop)
        return roster
    }

    /// The desktop's discovery, with a time to live of 5 s, and the changes its observers hear.
    static func discovery(_ clock: VirtualClock) -> (Discovery, NIOLockedValueBox<[NearbyTable.Change]>) {
        let discovery = Discovery(me: desktop.id, roster: roster(), timeToLiveMilliseconds: 5_000, logger: Self.quiet, clock: clock.clock)
        let heard = NIOLockedValueBox<[NearbyTable.Change]>([])
        discovery.observe { _, change in heard.withLockedValue { $0.append(change) } }
        return (discovery, heard)
    }

    /// The laptop's advert of sequence 7, sealed under `roster`'s key, at `time`.
    static func datagram(current: Bool = true, at time: UInt64, roster: Roster = roster()) throws -> Data {
        let keys = AdvertKeys(roster.accountKey)
        let advert = Advert(
            device: laptop.id, sequence: 7, typeHash: keys.typeHash(team: "RAZE", activityType: "com.razeware.shopsnap.view"),
            flags: current ? [.isCurrent] : [], sessionPort: 47_810, timestamp: time
        )
        return try keys.seal(advert)
    }

    /// What `device`'s broker advertises when a notes activity becomes current (nil if it advertises nothing).
    static func advertised(by device: String) -> HandoffBroker.CurrentActivity? {
        var broker = HandoffBroker(deviceName: device)
        let notice = ActivityNotice(activityType: "com.example.notes.edit", title: "Groceries")
        let actions = broker.becomeCurrent(
            app: HandoffBroker.AppID(1), bundle: "com.example.Notes", team: "TEAM", activity: 7, notice: notice, now: Self.start
        )
        guard case .advertise(let current) = actions.first else { return nil }
        return current
    }

    static var source: SocketAddress {
        get throws { try SocketAddress(ipAddress: "192.0.2.7", port: 47_810) }
    }

    @Test("A9: a member's advert puts its offer in the nearby list under its name, its goodbye takes it away, and observers hear both")
    func advertAndGoodbye() async throws {
        let clock = VirtualClock()
        let (discovery, heard) = Self.discovery(clock)
        guard case .accepted = discovery.receive(try Self.datagram(at: clock.wall), from: try Self.source) else {
            Issue.record("the laptop's advert was refused")
            return
        }
        #expect(discovery.offers().map(\.deviceName) == ["laptop"])
        #expect(discovery.offers().first?.entry.host == "192.0.2.7")
        #expect(discovery.entry(matching: "laptop")?.advert.sequence == 7)
        try await clock.advance(by: 100)
        _ = discovery.receive(try Self.datagram(current: false, at: clock.wall), from: try Self.source)
        #expect(discovery.offers().isEmpty)
        #expect(heard.withLockedValue { $0 } == [.added, .removed])
    }

    @Test("issue 25 item 9: after a key rotation every offer goes (its type hash was keyed by the old key) and adverts under the old key are refused")
    func rotationForgetsEverything() async throws {
        let clock = VirtualClock()
        let (discovery, heard) = Self.discovery(clock)
        let old = Self.roster()
        _ = discovery.receive(try Self.datagram(at: clock.wall), from: try Self.source)
        var rotated = old
        rotated.revoke(DeviceID(certificateDER: Data("gone".utf8)), by: Self.desktop.id, at: Date(), newKey: [UInt8](repeating: 0x43, count: 32))
        #expect(discovery.rosterChanged(rotated))
        #expect(discovery.offers().isEmpty)
        #expect(heard.withLockedValue { $0 } == [.added, .removed])
        try await clock.advance(by: 100)
        #expect(discovery.receive(try Self.datagram(at: clock.wall, roster: old), from: try Self.source) == .notForUs)
        #expect(discovery.receive(try Self.datagram(at: clock.wall, roster: rotated), from: try Self.source) != .notForUs)
        #expect(discovery.rosterChanged(rotated) == false, "the same roster again changes no key")
    }

    @Test("C2, A9: an advertised activity is re-advertised while it is offered; its goodbye ends that")
    func advertisedActivity() throws {
        let clock = VirtualClock()
        let (discovery, _) = Self.discovery(clock)
        let current = try #require(Self.advertised(by: "desktop"), "the broker advertises an activity made current")
        #expect(discovery.offered(at: Self.start) == nil, "nothing advertised yet")
        discovery.advertise(current, isCurrent: true)  // no socket attached: nothing is sent, the activity is kept
        #expect(discovery.offered(at: Self.start)?.current == current)
        #expect(discovery.offered(at: Self.start)?.lastAdvert == 1_000, "timed on the uptime clock")
        discovery.advertise(current, isCurrent: false)
        #expect(discovery.offered(at: Self.start) == nil)
    }

    @Test("issue 26 item 5, A1, E3: each advert carries its activity's keyed type hash, kept between adverts and keyed anew after a key rotation (issue 25 item 9)")
    func typeHashesFollowTheKey() throws {
        let clock = VirtualClock()
        let (discovery, _) = Self.discovery(clock)
        let sent = SentAdverts()
        discovery.attach(sent, sessionPort: 47_810)
        let current = try #require(Self.advertised(by: "desktop"), "the broker advertises an activity made current")
        var web = current
        web.notice = ActivityNotice(activityType: AppRecord.browsingWebActivityType, title: "Docs", webpageHost: "Example.ORG")
        func typeHashes(under roster: Roster) -> [[UInt8]] {
            let keys = AdvertKeys(roster.accountKey)
            return sent.take().map { keys.open($0)?.advert.typeHash ?? [] }
        }

        let old = Self.roster()
        let oldKeys = AdvertKeys(old.accountKey)
        for advert in [current, web, current, web] { discovery.advertise(advert, isCurrent: true) }
        let app = oldKeys.typeHash(team: "TEAM", activityType: "com.example.notes.edit")
        let host = oldKeys.typeHash(webHost: "example.org")
        #expect(typeHashes(under: old) == [app, host, app, host])

        var rotated = old
        rotated.revoke(DeviceID(certificateDER: Data("gone".utf8)), by: Self.desktop.id, at: Date(), newKey: [UInt8](repeating: 0x43, count: 32))
        #expect(discovery.rosterChanged(rotated))
        discovery.advertise(current, isCurrent: true)
        discovery.advertise(web, isCurrent: true)
        let newKeys = AdvertKeys(rotated.accountKey)
        #expect(typeHashes(under: rotated) == [newKeys.typeHash(team: "TEAM", activityType: "com.example.notes.edit"), newKeys.typeHash(webHost: "example.org")])
    }

    @Test("the service expires an offer not heard from within its time to live, on the discovery's clock, and at shutdown stops the broker (its goodbye, A9) once")
    func serviceExpiresAndStops() async throws {
        let clock = VirtualClock()
        let (discovery, _) = Self.discovery(clock)
        let (removals, removed) = AsyncStream.makeStream(of: NearbyTable.Change.self)
        discovery.observe { _, change in if change == .removed { removed.yield(change) } }
        _ = discovery.receive(try Self.datagram(at: clock.wall), from: try Self.source)
        let stopped = NIOLockedValueBox(0)
        let service = DiscoveryService(
            discovery: discovery, advertInterval: 1_000, timeToLive: 5, logger: Self.quiet,
            stop: { stopped.withLockedValue { $0 += 1 } }
        )
        let running = Task { await service.run() }
        try await clock.advance(by: 4_000)
        #expect(discovery.offers().count == 1, "still within its time to live")
        try await clock.advance(by: 1_001)
        discovery.bell.ring()
        var iterator = removals.makeAsyncIterator()
        #expect(await iterator.next() == .removed)
        #expect(discovery.offers().isEmpty)
        running.cancel()
        await running.value
        #expect(stopped.withLockedValue { $0 } == 1)
    }
}

/// An advert transport that keeps what is sent.
final class SentAdverts: AdvertTransport {
    private let sent = NIOLockedValueBox<[Data]>([])

    func send(_ datagram: Data, to addresses: [SocketAddress]) { sent.withLockedValue { $0.append(datagram) } }
    func take() -> [Data] {
        sent.withLockedValue { sent in
            defer { sent.removeAll() }
            return sent
        }
    }
    var multicastIsOn: Bool { true }
    var isFailing: Bool { false }
    var watchesInterfaces: Bool { true }
    func whenInterfacesChange(_ notify: @escaping @Sendable () -> Void) {}
    func takeInterfacesChanged() -> Bool { false }
    func refreshMemberships(log: @escaping @Sendable (String) -> Void) -> Bool { false }
    func close() {}
}
