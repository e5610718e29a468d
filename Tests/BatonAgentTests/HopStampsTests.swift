@testable import BatonAgent
@testable import BatonClient
import BatonCore
import Foundation
import NIOCore
import NIOEmbedded
import Testing

/// `baton bench handoff`'s stamps inside the processes (issue 26 item 5): off unless the bench turns them on, and then
/// only the frames that carry a state. Other suites may run beside this one, so it looks only at its own thread's.
@Suite("Hop stamps for the handoff bench", .serialized)
struct HopStampsTests {
    static var thread: UInt { UInt(pthread_self()) }

    static func stamps() -> [HopStamps.Point] {
        HopStamps.take().filter { $0.thread == thread }.map(\.point)
    }

    @Test("issue 26 item 5: a 3 KB frame is stamped read and decoded only while stamping is on; a small one never")
    func stampsOnlyWhenOn() throws {
        let (channel, sink) = try FrameHandlerTests.pipeline()
        let large = try FrameHandlerTests.frame(["t": "saved", "payload": .data(Data(repeating: 7, count: 3 * 1024))])
        let small = try FrameHandlerTests.frame(["t": "continued"])
        defer { HopStamps.turn(on: false) }

        HopStamps.turn(on: false)
        try channel.writeInbound(large)
        #expect(Self.stamps().isEmpty, "off: nothing is stamped")

        HopStamps.turn(on: true)
        try channel.writeInbound(small)
        try channel.writeInbound(large)
        HopStamps.stamp(.agentSavedReceived)
        #expect(Self.stamps() == [.frameRead, .frameDecoded, .agentSavedReceived])
        #expect(Self.stamps().isEmpty, "take() forgets what it took")
        #expect(sink.order == ["saved", "continued", "saved"], "the messages go on as they would")
    }

    @Test("issue 26 item 5: an advert's way is stamped only while stamping is on: decided, sealed and sent on one side, applied on the other (A1, A9)")
    func advertStampsOnlyWhenOn() async throws {
        let clock = VirtualClock()
        let (discovery, heard) = DiscoveryTests.discovery(clock)
        let current = try #require(DiscoveryTests.advertised(by: "desktop"), "the broker advertises an activity made current")
        defer { HopStamps.turn(on: false) }

        HopStamps.turn(on: false)
        discovery.advertise(current, isCurrent: true)
        _ = discovery.receive(try DiscoveryTests.datagram(at: clock.wall), from: try DiscoveryTests.source)
        #expect(Self.stamps().isEmpty, "off: nothing is stamped")

        HopStamps.turn(on: true)
        discovery.advertise(current, isCurrent: true)
        try await clock.advance(by: 100)
        _ = discovery.receive(try DiscoveryTests.datagram(current: false, at: clock.wall), from: try DiscoveryTests.source)
        #expect(Self.stamps() == [.advertDecided, .advertSealed, .advertSent, .advertApplied])
        #expect(heard.withLockedValue { $0 } == [.added, .removed], "the table changes as it would (A9: the goodbye removes)")
    }
}
