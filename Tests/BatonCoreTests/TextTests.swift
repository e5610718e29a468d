import BatonCore
import Foundation
import Testing

/// The text helpers that replace Foundation's (the agent links FoundationEssentials only) answer as Foundation does.
@Suite("Text helpers without Foundation")
struct TextTests {
    @Test("trimming white space and line breaks matches Foundation's trimmingCharacters(in: .whitespacesAndNewlines)")
    func trimmingMatchesFoundation() {
        for text in ["", " ", "\n\t baton:abc \r\n", "abc", "  a b  ", "\u{00A0}x\u{2003}", "\n\n"] {
            #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.debugDescription)")
        }
        #expect("//example.com/".trimming { $0 == "/" } == "example.com")
    }

    @Test("percent decoding matches Foundation's removingPercentEncoding, malformed escapes included")
    func percentDecodingMatchesFoundation() {
        for text in ["a%20b", "%E2%9C%93", "100%", "%zz", "%4", "%C3%28", "plain", "%25", ""] {
            #expect(text.percentDecoded == text.removingPercentEncoding, "\(text.debugDescription)")
        }
    }
}
