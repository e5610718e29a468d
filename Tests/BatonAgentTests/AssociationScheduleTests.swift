@testable import BatonAgent
@testable import BatonAssociations
import BatonRegistry
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// Issue 14 part 1, the pure tier: when association files are fetched (E4), the cache decoder on garbage, and the
/// HTTP response collector's cap on an `EmbeddedChannel`. No sockets, no clock: time is passed in.
@Suite("Issue 14: association schedule, cache records, response cap (E4)")
struct AssociationScheduleTests {
    static let start = Date(timeIntervalSinceReferenceDate: 800_000_000)

    static var policy: AssociationPolicy {
        var policy = AssociationPolicy()
        policy.minimumLifetime = 100
        policy.maximumLifetime = 1000
        policy.defaultLifetime = 500
        policy.retryInitial = 10
        policy.retryMaximum = 40
        policy.concurrentFetches = 2
        return policy
    }

    static func at(_ seconds: TimeInterval) -> Date { start.addingTimeInterval(seconds) }

    static func fetches(_ actions: [AssociationSchedule.Action]) -> [String] {
        actions.compactMap { if case .fetch(let domain) = $0 { domain } else { nil } }
    }

    static func wake(_ actions: [AssociationSchedule.Action]) -> Date? {
        actions.compactMap { if case .wake(let at) = $0 { at } else { nil } }.last
    }

    @Test("E4: lifetimes honour max-age within the bounds; the default without it; backoff doubles to its cap")
    func policyBounds() {
        let policy = Self.policy
        #expect(policy.lifetime(maxAge: nil) == 500)
        #expect(policy.lifetime(maxAge: 0) == 100)
        #expect(policy.lifetime(maxAge: 300) == 300)
        #expect(policy.lifetime(maxAge: 1_000_000) == 1000)
        #expect(policy.refresh(fetchedAt: Self.start, expiresAt: Self.at(500)) == Self.at(400))
        #expect([1, 2, 3, 4, 5, 60].map(policy.backoff) == [10, 20, 40, 40, 40, 40])
        let agent = AssociationPolicy()
        #expect(agent.minimumLifetime == 3600 && agent.maximumLifetime == 7 * 86_400 && agent.defaultLifetime == 86_400)
    }

    @Test("E4: wanted domains are fetched at once, at most the concurrency limit, the rest when one finishes")
    func fetchesWantedDomains() {
        var schedule = AssociationSchedule(policy: Self.policy)
        let first = schedule.wantedDomainsChanged(["a.example", "b.example", "c.example"], now: Self.start)
        #expect(Self.fetches(first) == ["a.example", "b.example"])
        let next = schedule.fetchSucceeded("a.example", fetchedAt: Self.start, expiresAt: Self.at(500), now: Self.at(1))
        #expect(Self.fetches(next) == ["c.example"])
        // The next wake is the refresh at 80 % of a's lifetime.
        #expect(Self.wake(next) == Self.at(400))
        // Nothing is due before then; at it, a is fetched again (once b and c have finished: two at a time).
        _ = schedule.fetchSucceeded("b.example", fetchedAt: Self.at(2), expiresAt: Self.at(900), now: Self.at(2))
        _ = schedule.fetchSucceeded("c.example", fetchedAt: Self.at(2), expiresAt: Self.at(900), now: Self.at(2))
        #expect(Self.fetches(schedule.timePassed(now: Self.at(399))).isEmpty)
        #expect(Self.fetches(schedule.timePassed(now: Self.at(400))) == ["a.example"])
    }

    @Test("E4: a failed fetch is retried after a doubling backoff; the file held counts until it expires, then expired")
    func backoffThenExpiry() {
        var schedule = AssociationSchedule(policy: Self.policy)
        _ = schedule.wantedDomainsChanged(["a.example"], now: Self.start)
        _ = schedule.fetchSucceeded("a.example", fetchedAt: Self.start, expiresAt: Self.at(100), now: Self.start)
        #expect(Self.fetches(schedule.timePassed(now: Self.at(80))) == ["a.example"])
        #expect(Self.wake(schedule.fetchFailed("a.example", now: Self.at(81))) == Self.at(91))
        #expect(Self.fetches(schedule.timePassed(now: Self.at(91))) == ["a.example"])
        #expect(Self.wake(schedule.fetchFailed("a.example", now: Self.at(92))) == Self.at(100), "the expiry comes before the next retry (112)")
        let expiry = schedule.timePassed(now: Self.at(100))
        #expect(expiry.contains(.expired("a.example")))
        #expect(Self.wake(expiry) == Self.at(112))
        #expect(schedule.failures(of: "a.example") == 2)
        // Expired once, not again.
        #expect(!schedule.timePassed(now: Self.at(101)).contains(.expired("a.example")))
    }

    @Test("E4: a cached record decides the first fetch: fresh waits for its refresh, failing waits its backoff, expired at once")
    func cacheDecidesFirstFetch() throws {
        var fresh = AssociationRecord(domain: "fresh.example")
        fresh.json = Data("{}".utf8)
        fresh.fetchedAt = Self.start
        fresh.expiresAt = Self.at(500)
        var failing = AssociationRecord(domain: "failing.example")
        failing.failures = 2
        failing.lastAttempt = Self.at(5)
        var schedule = AssociationSchedule(policy: Self.policy)
        let actions = schedule.wantedDomainsChanged(["fresh.example", "failing.example", "new.example"], known: [fresh, failing], now: Self.at(10))
        #expect(Self.fetches(actions) == ["new.example"])
        #expect(Self.wake(actions) == Self.at(25), "failing.example: 5 s + a 20 s backoff")
        #expect(Self.fetches(schedule.timePassed(now: Self.at(25))) == ["failing.example"])
        _ = schedule.fetchSucceeded("new.example", fetchedAt: Self.at(26), expiresAt: Self.at(2000), now: Self.at(26))
        _ = schedule.fetchSucceeded("failing.example", fetchedAt: Self.at(26), expiresAt: Self.at(2000), now: Self.at(26))
        #expect(schedule.failures(of: "failing.example") == 0)
        #expect(Self.fetches(schedule.timePassed(now: Self.at(399))).isEmpty)
        #expect(Self.fetches(schedule.timePassed(now: Self.at(400))) == ["fresh.example"])
        // A domain no longer wanted is forgotten: nothing is fetched or expired for it.
        _ = schedule.wantedDomainsChanged([], now: Self.at(401))
        #expect(schedule.timePassed(now: Self.at(10_000)).isEmpty)
    }

    @Test("E4: a record another program wrote reschedules the domain; it is ignored while a fetch runs")
    func recordRead() {
        var schedule = AssociationSchedule(policy: Self.policy)
        _ = schedule.wantedDomainsChanged(["a.example"], now: Self.start)
        var record = AssociationRecord(domain: "a.example")
        record.json = Data("{}".utf8)
        record.fetchedAt = Self.start
        record.expiresAt = Self.at(1000)
        #expect(Self.wake(schedule.recordRead(record, now: Self.start)) == nil, "fetching: the fetch's result decides")
        _ = schedule.fetchFailed("a.example", now: Self.at(1))
        #expect(Self.wake(schedule.recordRead(record, now: Self.at(2))) == Self.at(800))
    }

    @Test("cache records round-trip, and garbage, oversized or mismatched ones are typed cacheCorrupt errors, never traps")
    func recordDecoderGarbage() throws {
        var record = AssociationRecord(domain: "wiki.example")
        record.json = Data(#"{"activitycontinuation": {"apps": ["T.b"]}}"#.utf8)
        record.fetchedAt = Self.start
        record.expiresAt = Self.at(3600)
        record.lastErrorCode = "timedOut"
        record.lastErrorMessage = "slow"
        record.failures = 1
        let data = try record.encoded()
        #expect(try AssociationRecord(decoding: data, domain: "wiki.example") == record)
        #expect(try AssociationRecord(decoding: data, domain: "wiki.example").lastError?.code == .timedOut)

        var generator = SystemRandomNumberGenerator()
        var inputs: [Data] = [
            Data(), Data("{".utf8), Data("null".utf8), Data("[]".utf8), Data(#"{"domain": 5}"#.utf8),
            Data(repeating: 0x5B, count: 100_000),  // deep nesting
            Data(repeating: 0x20, count: AssociationRecord.maximumFileSize + 1),
            try { var other = record; other.domain = "other.example"; return try other.encoded() }(),
            try { var other = record; other.version = 2; return try other.encoded() }(),
            try { var other = record; other.failures = -1; return try other.encoded() }(),
            try { var other = record; other.json = Data("[1]".utf8); return try other.encoded() }(),
            try { var other = record; other.lastErrorMessage = String(repeating: "x", count: 5000); return try other.encoded() }(),
        ]
        for _ in 0..<200 {
            var bytes = [UInt8](data)
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            inputs.append(Data(bytes))
            inputs.append(Data(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator))))
        }
        var rejected = 0
        for input in inputs {
            do {
                _ = try AssociationRecord(decoding: input, domain: "wiki.example")
            } catch let error as AssociationFetchError {
                #expect(error.code == .cacheCorrupt)
                rejected += 1
            } catch {
                Issue.record("untyped error \(error)")
            }
        }
        #expect(rejected >= 12)
    }

    @Test("E4: a fresh file one writer records is never lost to a failure another records at the same moment (the cache's lock)")
    func concurrentRecordsKeepTheFreshFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-aasa-race-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let json = Data(#"{"activitycontinuation": {"apps": ["TEAM123456.org.example.App"]}}"#.utf8)
        let fetched = AssociationFetcher.Fetched(
            url: "https://race.example/.well-known/apple-app-site-association", json: json,
            association: try AppSiteAssociation(json: json), signed: false, maxAge: 3600
        )
        let failure = AssociationFetchError(.connectFailed, "down")
        // 20 rounds: the agent's retries record failures in a tight loop while `baton aasa fetch` records the file once.
        // Without the lock a failure's write could put back the record it read before the file, losing the file.
        for round in 0..<20 {
            let cache = AssociationCache(stateFolder: folder.appendingPathComponent("\(round)"))
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for _ in 0..<200 { _ = try? cache.record("race.example", .failure(failure), policy: AssociationPolicy(), now: Date()) }
                }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(5))
                    _ = try? cache.record("race.example", .success(fetched), policy: AssociationPolicy(), now: Date())
                }
            }
            let record = try #require(try cache.read("race.example"))
            #expect(record.json == json, "round \(round): the fetched file was lost")
            #expect(record.failures <= 200)
        }
    }

    @Test("a corrupt cache file is reported, set aside as .damaged, and the others still read")
    func corruptCacheFileSetAside() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-aasa-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = AssociationCache(stateFolder: folder)
        var good = AssociationRecord(domain: "good.example")
        good.json = Data("{}".utf8)
        try cache.store(good)
        try Data("{\"domain\": \"bad.example\", garbage".utf8).write(to: cache.folder.appendingPathComponent("bad.example.json"))
        let mode = try FileManager.default.attributesOfItem(atPath: cache.folder.appendingPathComponent("good.example.json").path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let (records, problems) = cache.readAll()
        #expect(records.map(\.domain) == ["good.example"])
        #expect(problems.map(\.code) == [.cacheCorrupt])
        #expect(FileManager.default.fileExists(atPath: cache.folder.appendingPathComponent("bad.example.json.damaged").path))
        #expect(cache.readAll().problems.isEmpty, "reported once, then set aside")
        #expect(!AssociationCache.isStorable("../etc") && !AssociationCache.isStorable(".hidden") && AssociationCache.isStorable("wiki.example"))
    }

    @Test("--resolve DOMAIN:PORT:ADDRESS parses, IPv6 bracketed or not; bad ones are refused")
    func resolveRules() {
        #expect(ResolveRule(argument: "Wiki.Example:8443:127.0.0.1") == ResolveRule(domain: "wiki.example", port: 8443, address: "127.0.0.1"))
        #expect(ResolveRule(argument: "wiki.example:443:[::1]")?.address == "::1")
        #expect(ResolveRule(argument: "wiki.example:443:::1")?.address == "::1")
        for bad in ["wiki.example", "wiki.example:443", "wiki.example:0:127.0.0.1", ":443:127.0.0.1", "wiki.example:x:1.2.3.4"] {
            #expect(ResolveRule(argument: bad) == nil, "\(bad)")
        }
        #expect(AssociationFetcher.rootFiles(environment: ["BATON_CACERT": "/a.pem:/b.pem"]) == ["/a.pem", "/b.pem"])
    }

    @Test("Cache-Control: max-age is read; no-cache counts as 0; absent is nil")
    func maxAge() {
        #expect(AssociationFetcher.maxAge(HTTPHeaders([("Cache-Control", "public, max-age=600")])) == 600)
        #expect(AssociationFetcher.maxAge(HTTPHeaders([("Cache-Control", "no-cache")])) == 0)
        #expect(AssociationFetcher.maxAge(HTTPHeaders([("Content-Type", "application/json")])) == nil)
    }

    @Test("the response collector refuses a body over the cap as it arrives (no Content-Length), and a large Content-Length at once")
    func collectorCap() throws {
        for declared in [false, true] {
            let channel = EmbeddedChannel()
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
            let promise = channel.eventLoop.makePromise(of: HTTPSClient.Response.self)
            let outcome = NIOLockedValueBox<Result<HTTPSClient.Response, Error>?>(nil)
            promise.futureResult.whenComplete { result in outcome.withLockedValue { $0 = result } }
            try channel.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise, url: "https://x.example/f", maximumSize: 1000))
            var head = HTTPResponseHead(version: .http1_1, status: .ok)
            if declared { head.headers.add(name: "Content-Length", value: "10485760") }
            try channel.writeInbound(HTTPClientResponsePart.head(head))
            var sent = 0
            while sent < 5000, outcome.withLockedValue({ $0 == nil }) {
                try channel.writeInbound(HTTPClientResponsePart.body(ByteBuffer(repeating: 0x20, count: 100)))
                sent += 100
            }
            channel.embeddedEventLoop.run()
            guard case .failure(let error as AssociationFetchError) = outcome.withLockedValue({ $0 }) else {
                Issue.record("not refused: \(String(describing: outcome.withLockedValue { $0 }))")
                continue
            }
            #expect(error.code == .tooLarge)
            #expect(sent <= (declared ? 0 : 1100), "refused as soon as the cap was passed, after \(sent) bytes")
            _ = try? channel.finish()
        }
    }

    @Test("issue 25 item 7, E4: names under RFC 6761's reserved TLDs are never looked up unless --resolve names them")
    func reservedNamesNeverFetched() async throws {
        for name in ["shopsnap.example", "a.b.TEST", "shop.invalid.", "app.localhost", "example", "localhost"] {
            #expect(AssociationFetcher.reservedTLD(of: name) != nil, "\(name)")
        }
        for name in ["example.com", "shopsnap.example.org", "test.dev", "localhost.net"] {
            #expect(AssociationFetcher.reservedTLD(of: name) == nil, "\(name)")
        }
        // No rule: refused before any lookup or connection, with its own code and the way to reach a test server.
        let plain = try AssociationFetcher(connectTimeout: .seconds(2), totalTimeout: .seconds(3))
        for name in ["shopsnap.example", "Shop.Test."] {
            await #expect {
                _ = try await plain.fetch(name)
            } throws: { error in
                let failure = error as? AssociationFetchError
                return failure?.code == .reservedName && failure?.message.contains("--resolve") == true
            }
        }
        // A rule naming the domain: it is fetched from there (nothing listens on port 1, so the connection fails).
        let ruled = try AssociationFetcher(resolve: [ResolveRule(domain: "shopsnap.example", port: 1, address: "127.0.0.1")], connectTimeout: .seconds(2), totalTimeout: .seconds(3))
        await #expect {
            _ = try await ruled.fetch("shopsnap.example")
        } throws: { error in
            (error as? AssociationFetchError)?.code == .connectFailed
        }
    }
}
