import BatonProtocol
import Testing

/// Issue 25 item 10: an advert socket is read per datagram at household rates and in 10 ms batches under a flood.
@Suite("Advert read pacing (issue 25 item 10)")
struct AdvertReadPacingTests {
    static let millisecond: UInt64 = 1_000_000

    /// Feeds `rate` datagrams a second, evenly, for `seconds` from `start`, and a tick every 10 ms while paced;
    /// returns the actions with when they happened.
    static func feed(_ pacing: inout AdvertReadPacing, rate: Int, seconds: Double, from start: UInt64) -> [(UInt64, AdvertReadPacing.Action)] {
        var actions: [(UInt64, AdvertReadPacing.Action)] = []
        let tick = AdvertReadPacing.tickNanoseconds
        let perTick = Double(rate) * Double(tick) / 1e9
        var owed = 0.0
        var now = start
        while now < start + UInt64(seconds * 1e9) {
            owed += perTick
            let due = Int(owed)
            owed -= Double(due)
            for index in 0..<due {
                let at = now + UInt64(index) * tick / UInt64(max(due, 1))
                let action = pacing.received(at: at)
                if action != .none { actions.append((at, action)) }
            }
            now += tick
            if pacing.mode == .paced {
                let action = pacing.tick(at: now)
                if action != .none { actions.append((now, action)) }
            }
        }
        return actions
    }

    @Test("issue 25 item 10: 50 devices advertising (50 a second) are read as each datagram arrives, for ever")
    func householdRatesStayImmediate() {
        var pacing = AdvertReadPacing()
        let actions = Self.feed(&pacing, rate: 50, seconds: 30, from: 5 * Self.millisecond)
        #expect(actions.isEmpty)
        #expect(pacing.mode == .immediate)
    }

    @Test("issue 25 item 10: a flood of 5,000 a second switches to batched reads within its first 50 ms, and stays there")
    func floodPaces() {
        var pacing = AdvertReadPacing()
        let actions = Self.feed(&pacing, rate: 5_000, seconds: 10, from: 0)
        #expect(actions.count == 1)
        #expect(actions.first?.1 == .startPacing)
        #expect((actions.first?.0 ?? .max) <= 50 * Self.millisecond)
        #expect(pacing.mode == .paced)
    }

    @Test("issue 25 item 10: once the flood stops, reads go back to immediate within two seconds, even with no datagram at all")
    func floodOverGoesBack() {
        var pacing = AdvertReadPacing()
        _ = Self.feed(&pacing, rate: 5_000, seconds: 3, from: 0)
        #expect(pacing.mode == .paced)
        let after = Self.feed(&pacing, rate: 0, seconds: 3, from: 3_000 * Self.millisecond)
        #expect(after.map(\.1) == [.stopPacing])
        #expect((after.first?.0 ?? .max) <= 5_000 * Self.millisecond)
        #expect(pacing.mode == .immediate)
    }

    @Test("issue 25 item 10: a rate between the two thresholds does not flip the mode every second")
    func hysteresis() {
        var pacing = AdvertReadPacing()
        _ = Self.feed(&pacing, rate: 1_000, seconds: 2, from: 0)
        #expect(pacing.mode == .paced)
        // 180 a second: under the rate that starts pacing, over the one that stops it.
        let middle = Self.feed(&pacing, rate: 180, seconds: 20, from: 2_000 * Self.millisecond)
        #expect(middle.isEmpty)
        #expect(pacing.mode == .paced)
    }

    @Test("issue 25 item 10: a clock that goes back starts a new window rather than trapping or pacing for ever")
    func clockBack() {
        var pacing = AdvertReadPacing()
        _ = Self.feed(&pacing, rate: 5_000, seconds: 1, from: 10_000 * Self.millisecond)
        #expect(pacing.mode == .paced)
        #expect(pacing.tick(at: 0) == .none)
        #expect(pacing.tick(at: 1_500 * Self.millisecond) == .stopPacing)
    }
}
