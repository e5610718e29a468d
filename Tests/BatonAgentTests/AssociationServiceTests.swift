@testable import BatonAgent
import BatonAssociations
import BatonRegistry
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

/// The association service on its own (issue 26 item 1): built from narrow values (a cache folder, no fetcher, the
/// domains wanted, a clock it is given), it owns the files it holds and sends them out on each change. No network,
/// no agent; its clock is virtual, so an expiry is judged at a time the test sets.
@Suite("Issue 26 item 1: the association service owns its files (E4)")
struct AssociationServiceTests {
    static let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
    static let json = Data(#"{"applinks": {"details": [{"appIDs": ["AKK7J2GV64.org.wikimedia.wikipedia"], "components": [{"/": "/wiki/*"}]}]}}"#.utf8)

    /// `date` as the agent's clock reads wall time: milliseconds since 1970.
    static func milliseconds(_ date: Date) -> UInt64 {
        UInt64(date.timeIntervalSince1970 * 1000)
    }

    /// A file of `domain` fetched at `start`, counting `lifetime` seconds.
    static func record(_ domain: String, lifetime: TimeInterval) -> AssociationRecord {
        var record = AssociationRecord(domain: domain)
        record.url = "https://\(domain)/.well-known/apple-app-site-association"
        record.json = json
        record.fetchedAt = start
        record.lastAttempt = start
        record.expiresAt = start.addingTimeInterval(lifetime)
        return record
    }

    @Test("E4: a file approves until it expires, then says why; a domain whose fetches all failed says its last failure; only changed records count as read")
    func filesJudgedAtATime() {
        var files = AssociationFiles()
        var failing = AssociationRecord(domain: "down.example")
        failing.lastAttempt = Self.start
        failing.lastErrorCode = "connectFailed"
        failing.lastErrorMessage = "down.example: connection refused"
        failing.failures = 1
        #expect(files.absorb([Self.record("wiki.example", lifetime: 100), failing]).count == 2)
        #expect(files.absorb([Self.record("wiki.example", lifetime: 100), failing]).isEmpty, "the same records read again change nothing")

        let before = files.approvals(now: Self.start.addingTimeInterval(99))
        #expect(before.associations["wiki.example"] != nil)
        #expect(before.unavailable["down.example"]?.contains("no fetch of down.example's file has succeeded") == true)

        let after = files.approvals(now: Self.start.addingTimeInterval(100))
        #expect(after.associations["wiki.example"] == nil)
        #expect(after.unavailable["wiki.example"]?.contains("expired at") == true)
        #expect(files.records.map(\.domain) == ["down.example", "wiki.example"])
    }

    @Test("issue 26 item 1, E4: the service starts from its cache before any fetch, takes a file another program caches, and judges an expiry on the clock it is given")
    func serviceOwnsItsFiles() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-association-service-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = AssociationCache(stateFolder: folder)
        try cache.store(Self.record("wiki.example", lifetime: 100))

        let clock = VirtualClock(wall: Self.milliseconds(Self.start.addingTimeInterval(10)))
        let (published, sent) = AsyncStream.makeStream(of: (files: AssociationFiles, at: Date).self)
        let trigger = AssociationService.Trigger()
        let service = AssociationService(
            trigger: trigger,
            policy: AssociationPolicy(),
            cache: cache,
            // No fetcher (as with an unreadable --cacert): nothing is fetched, the cache still counts.
            fetcher: .failure(AssociationFetchError(.tlsFailed, "no fetcher in this test")),
            wantedDomains: { ["wiki.example", "docs.example"] },
            publish: { files, at in sent.yield((files, at)) },
            logger: Logger(label: "test"),
            clock: clock.clock
        )
        var changes = published.makeAsyncIterator()
        let first = try #require(await changes.next())
        #expect(first.files.approvals(now: first.at).associations["wiki.example"] != nil, "the cached file counts before the service runs")

        let running = Task { await service.run() }
        defer { running.cancel() }
        // Another program (`baton aasa fetch`) caches docs.example; the agent's folder watch says so.
        try cache.store(Self.record("docs.example", lifetime: 1000))
        trigger.cacheChanged()
        let read = try #require(await changes.next())
        #expect(read.files.records.map(\.domain) == ["docs.example", "wiki.example"])
        #expect(read.files.approvals(now: read.at).associations["docs.example"] != nil)

        // Past wiki.example's expiry on the service's clock: the next turn drops it and says why.
        clock.setWall(Self.milliseconds(Self.start.addingTimeInterval(101)))
        trigger.appsChanged()
        let expired = try #require(await changes.next())
        #expect(expired.at == Self.start.addingTimeInterval(101))
        let approvals = expired.files.approvals(now: expired.at)
        #expect(approvals.associations["wiki.example"] == nil)
        #expect(approvals.unavailable["wiki.example"]?.contains("expired at") == true)
        #expect(approvals.associations["docs.example"] != nil)
        running.cancel()
        await running.value
    }
}
