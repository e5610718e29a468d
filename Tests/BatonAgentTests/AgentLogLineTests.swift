@testable import BatonAgent
import BatonCore
import Testing

/// One log line stays bounded whatever a peer sent (issue 25 item 6).
@Suite("Agent log lines (issue 25 item 6)")
struct AgentLogLineTests {
    @Test("issue 25 item 6: a peer's 400 KB baton-folder path makes a log line under the limit, with the length left out noted")
    func peerPathIsCut() {
        let path = "baton-folder://docs/" + String(repeating: "a/", count: 200_000) + "plan.txt"
        // As Agent+Continuation logs a document in a folder this device lacks (the message Agent.arriving makes).
        let line = Agent.logLine("continuation 7: \"\(path)\" is in synced folder \"docs\", which this device does not have")
        #expect(line.utf8.count <= Agent.logLineBytes + 40, "\(line.utf8.count) bytes")
        #expect(line.hasPrefix("continuation 7: \"baton-folder://docs/a/a/"))
        let total = "continuation 7: \"\(path)\" is in synced folder \"docs\", which this device does not have".utf8.count
        #expect(line.hasSuffix("… (\(Clipping.grouped(total - Agent.logLineBytes)) more bytes)"), "\(line.suffix(60))")
        #expect(Agent.logLine("sync from a1b2 failed: timed out") == "sync from a1b2 failed: timed out")
    }
}
