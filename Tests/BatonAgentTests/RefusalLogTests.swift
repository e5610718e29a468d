@testable import BatonAgent
import Logging
import NIOConcurrencyHelpers
import Testing

/// The agent's refusals are logged once per kind, then summed up at most every ten minutes (issue 25 item 12): the
/// security suite (SecuritySuiteTests) sees one line per attack; this checks the quiet period and the summary.
@Suite("Refusal log (issue 25 item 12)")
struct RefusalLogTests {
    /// Keeps the messages logged through it.
    struct Recorder: LogHandler {
        let lines: NIOLockedValueBox<[String]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
            lines.withLockedValue { $0.append("\(level) \(message)") }
        }
    }

    @Test("issue 25 item 12: 10,000 refusals of one kind are one line; the first after 10 min says how many came between; kinds are apart")
    func oncePerKindThenSummed() {
        let lines = NIOLockedValueBox<[String]>([])
        let log = RefusalLog(logger: Logger(label: "test") { _ in Recorder(lines: lines) })
        var built = 0
        for second in 0..<10_000 {
            log.refused(.advertReplayed, { built += 1; return "an advert from 127.0.0.\(second % 250)" }, now: UInt64(second) * 1_000_000)
        }
        #expect(lines.withLockedValue { $0 }.count == 1)
        #expect(built == 1, "the text of a refusal not logged is never built")
        let first = lines.withLockedValue { $0 }.first ?? ""
        #expect(first.hasPrefix("notice refused an advert from 127.0.0.0 [advertReplayed]"), "\(first)")

        log.refused(.advertNotForUs, { "an advert from 127.0.0.9" }, now: 20_000_000)
        #expect(lines.withLockedValue { $0 }.count == 2, "another kind has its own line")

        log.refused(.advertReplayed, { "an advert from 127.0.0.1" }, now: RefusalLog.quietPeriod + 5_000_000)
        let summary = lines.withLockedValue { $0 }.last ?? ""
        #expect(summary.contains("[advertReplayed], and 9999 more of these since the last such line"), "\(summary)")
        log.refused(.advertReplayed, { "an advert from 127.0.0.1" }, now: RefusalLog.quietPeriod + 6_000_000)
        #expect(lines.withLockedValue { $0 }.count == 3, "quiet again for another period")
    }
}
