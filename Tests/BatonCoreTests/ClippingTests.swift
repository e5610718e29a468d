import BatonCore
import Testing

/// Text from peers and files cut before it reaches a log line or a terminal (issue 25 item 6).
@Suite("Clipping (issue 25 item 6)")
struct ClippingTests {
    @Test("issue 25 item 6: text over the limit keeps whole characters within it and says how many bytes were left out")
    func clipsToBytes() {
        #expect("short".clipped(toBytes: 10) == "short")
        #expect("exactly10!".clipped(toBytes: 10) == "exactly10!")
        #expect("abcdefghijkl".clipped(toBytes: 10) == "abcdefghij… (2 more bytes)")
        // "é" is two bytes and "👍🏽" eight: never cut inside a character.
        #expect("ééé".clipped(toBytes: 5) == "éé… (2 more bytes)")
        #expect("a👍🏽b".clipped(toBytes: 5) == "a… (9 more bytes)")
        let huge = String(repeating: "x", count: 400_000)
        let clipped = huge.clipped(toBytes: Clipping.logBytes)
        #expect(clipped == String(repeating: "x", count: 256) + "… (399,744 more bytes)")
    }

    @Test("issue 25 item 6: counts are written with thousands separators")
    func groupsDigits() {
        #expect(Clipping.grouped(0) == "0")
        #expect(Clipping.grouped(999) == "999")
        #expect(Clipping.grouped(1_000) == "1,000")
        #expect(Clipping.grouped(39_983_616) == "39,983,616")
        #expect(Clipping.note(1_234_567, more: "characters") == "… (1,234,567 more characters)")
    }
}
