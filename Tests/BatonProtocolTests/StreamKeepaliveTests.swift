import BatonProtocol
import Testing

/// Issue 25 item 7 (F3): a stream partition is noticed when PROTOCOL §8 says, about 4 s after the peer fell silent.
@Suite("Stream keepalive timing (issue 25 item 7, F3)")
struct StreamKeepaliveTests {
    @Test("issue 25 item 7, F3: a silent peer's streams are reset 4-4.5 s after it fell silent, whatever the phase of the checks")
    func partitionResetsInAboutFourSeconds() {
        #expect(StreamLimits.keepaliveMilliseconds == 2_000, "PROTOCOL §8: 2 s quiet, then a ping, then 2 s")
        var latest: UInt64 = 0
        var earliest = UInt64.max
        for silence in stride(from: UInt64(10_000), to: 12_000, by: 25) {
            for phase in stride(from: UInt64(0), to: 2_000, by: 25) {
                let reset = StreamLimits.peerGoneMilliseconds(silentAt: silence, checkPhase: phase)
                latest = max(latest, reset)
                earliest = min(earliest, reset)
            }
        }
        // Checks every 2 s (before) gave up to 6 s.
        #expect(earliest >= 4_000 && latest <= 4_500, "reset after \(earliest)-\(latest) ms")
    }
}
