@testable import BatonAgent
import BatonCore
import BatonProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Issue 26 item 3: adverts over the memory network, with no socket and no sleep. Every device here runs on one loop,
/// so once a task submitted after the sends has run, every datagram sent has arrived (or never will).
@Suite("Issue 26 item 3: adverts over the memory transport")
struct MemoryAdvertTests {
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let network = MemoryNetwork()

    /// A device's advert transport at `host:47800`, and the datagrams it received, as "text from host".
    func device(_ host: String, multicast: Bool = true) throws -> (MemoryAdvertTransport, NIOLockedValueBox<[String]>) {
        let heard = NIOLockedValueBox<[String]>([])
        let transport = try network.advertTransport(host: host, port: 47_800, multicast: multicast, loop: loop) { datagram, source in
            heard.withLockedValue { $0.append("\(String(decoding: datagram, as: UTF8.self)) from \(source.hostText ?? "?")") }
        }
        return (transport, heard)
    }

    /// Waits until every datagram sent so far has been delivered.
    func delivered() async throws {
        try await loop.submit {}.get()
    }

    @Test("a multicast reaches every other device once, never the sender; a unicast only the one at that address")
    func multicastAndUnicast() async throws {
        let (laptop, atLaptop) = try device("10.0.0.1")
        let (_, atDesktop) = try device("10.0.0.2")
        let (_, atPhone) = try device("10.0.0.3", multicast: false)
        laptop.send(Data("hello".utf8), to: [])
        try await delivered()
        #expect(atDesktop.withLockedValue { $0 } == ["hello from 10.0.0.1"])
        #expect(atPhone.withLockedValue { $0 } == ["hello from 10.0.0.1"], "multicast is the sender's choice")
        #expect(atLaptop.withLockedValue { $0 }.isEmpty)
        let (lonely, _) = try device("10.0.0.4", multicast: false)
        lonely.send(Data("psst".utf8), to: [try SocketAddress(ipAddress: "10.0.0.2", port: 47_800)])
        try await delivered()
        #expect(atDesktop.withLockedValue { $0 } == ["hello from 10.0.0.1", "psst from 10.0.0.4"])
        #expect(atPhone.withLockedValue { $0 } == ["hello from 10.0.0.1"])
    }

    @Test("a closed transport neither sends nor receives, and its address can be taken again")
    func closed() async throws {
        let (laptop, _) = try device("10.0.0.1")
        let (desktop, atDesktop) = try device("10.0.0.2")
        #expect(throws: BatonAgentError.self) { try device("10.0.0.2") }
        desktop.close()
        laptop.send(Data("one".utf8), to: [try SocketAddress(ipAddress: "10.0.0.2", port: 47_800)])
        try await delivered()
        #expect(atDesktop.withLockedValue { $0 }.isEmpty)
        desktop.send(Data("gone".utf8), to: [])
        let (_, atNew) = try device("10.0.0.2")
        laptop.send(Data("two".utf8), to: [])
        try await delivered()
        #expect(atNew.withLockedValue { $0 } == ["two from 10.0.0.1"])
        #expect(!laptop.isFailing)
    }

    @Test("A9 over the memory network: the laptop's advertised activity is in the desktop's nearby list, from the laptop's host; its goodbye removes it")
    func discoveryOverMemory() async throws {
        let clock = VirtualClock()
        let quiet = DiscoveryTests.quiet
        let laptop = Discovery(me: DiscoveryTests.laptop.id, roster: DiscoveryTests.roster(), timeToLiveMilliseconds: 5_000, logger: quiet, clock: clock.clock)
        let desktop = Discovery(me: DiscoveryTests.desktop.id, roster: DiscoveryTests.roster(), timeToLiveMilliseconds: 5_000, logger: quiet, clock: clock.clock)
        let outcomes = NIOLockedValueBox<[AdvertReceiver.Outcome]>([])
        _ = try network.advertTransport(host: "10.0.0.2", port: 47_800, loop: loop) { datagram, source in
            let outcome = desktop.receive(datagram, from: source)
            outcomes.withLockedValue { $0.append(outcome) }
        }
        laptop.attach(try network.advertTransport(host: "10.0.0.1", port: 47_800, loop: loop) { _, _ in }, sessionPort: 47_810)
        let current = try #require(DiscoveryTests.advertised(by: "laptop"), "the broker advertises an activity made current")
        laptop.advertise(current, isCurrent: true)
        try await delivered()
        #expect(desktop.offers().map(\.deviceName) == ["laptop"], "\(outcomes.withLockedValue { $0 })")
        #expect(desktop.offers().first?.entry.host == "10.0.0.1")
        try await clock.advance(by: 100)
        laptop.advertise(current, isCurrent: false)
        try await delivered()
        #expect(desktop.offers().isEmpty)
    }
}
