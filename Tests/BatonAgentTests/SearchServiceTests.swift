@testable import BatonAgent
import BatonCore
import BatonSearch
import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Testing

/// Issue 26 items 1 and 2: search as a service that owns its state. Its decisions (purge timing, reopening, what a
/// failure leads to) are ``SearchIndexUpkeep``, pure, on virtual time; the service is driven through its
/// ``SearchQueue`` alone, holding no agent (SEMANTICS G1-G3).
@Suite("Issue 26 item 1: the search service owns its index; its upkeep on virtual time")
struct SearchServiceTests {
    static let second: UInt64 = 1_000_000_000
    static let bundle = "com.example.shopsnap"

    // MARK: The upkeep, pure

    @Test("G1: expired entries are purged at start, then once an hour; the loop sleeps until the next purge")
    func purgeSchedule() {
        var upkeep = SearchIndexUpkeep(purgeInterval: .seconds(3_600))
        let start = 5 * Self.second
        #expect(upkeep.isPurgeDue(now: start), "at start")
        #expect(upkeep.untilPurge(now: start) == .zero)
        upkeep.purged(now: start)
        #expect(!upkeep.isPurgeDue(now: start + 3_599 * Self.second))
        #expect(upkeep.untilPurge(now: start + 600 * Self.second) == .seconds(3_000), "a job in between does not move it")
        #expect(upkeep.isPurgeDue(now: start + 3_600 * Self.second))
        #expect(upkeep.untilPurge(now: start + 4_000 * Self.second) == .zero, "overdue: at once")
        upkeep.purged(now: start + 4_000 * Self.second)
        #expect(upkeep.untilPurge(now: start + 4_000 * Self.second) == .seconds(3_600), "counted from when it was done")
    }

    @Test("the index is opened again when it is not open, or the file at its path is another (rebuilt) or gone")
    func reopening() {
        let file = SearchIndexUpkeep.FileID(device: 2049, inode: 77)
        let rebuilt = SearchIndexUpkeep.FileID(device: 2049, inode: 78)
        #expect(!SearchIndexUpkeep.mustOpen(isOpen: true, opened: file, onDisk: file))
        #expect(SearchIndexUpkeep.mustOpen(isOpen: true, opened: file, onDisk: rebuilt), "baton search --rebuild")
        #expect(SearchIndexUpkeep.mustOpen(isOpen: true, opened: file, onDisk: nil), "removed")
        #expect(SearchIndexUpkeep.mustOpen(isOpen: false, opened: file, onDisk: file), "could not be opened before")
    }

    @Test("a damaged index is set aside and reopened; another failure keeps it; the shutdown is no failure, and a save it cut is done again")
    func recovery() {
        let damaged = SearchError(.damaged, "The search index is damaged.")
        #expect(SearchIndexUpkeep.recovery(after: damaged, saving: true) == .reopen)
        #expect(SearchIndexUpkeep.recovery(after: damaged, saving: false) == .reopen)
        #expect(SearchIndexUpkeep.recovery(after: SearchError(.unwritable, "read-only"), saving: true) == .keep)
        #expect(SearchIndexUpkeep.recovery(after: SearchError(.database, "disk I/O error"), saving: false) == .keep)
        #expect(SearchIndexUpkeep.recovery(after: POSIXError(.EIO), saving: false) == .keep)
        #expect(SearchIndexUpkeep.recovery(after: CancellationError(), saving: true) == .requeue)
        #expect(SearchIndexUpkeep.recovery(after: CancellationError(), saving: false) == SearchIndexUpkeep.Recovery.none)
    }

    // MARK: The service, through its queue

    @Test("G1, G3: saves reach the index in order, a live activity's later save replaces its entry, delete answers with the count")
    func savesThroughTheQueue() async throws {
        try await withService { queue, _ in
            queue.save(try Self.payload("Weekend groceries"), activity: 1, bundle: Self.bundle, app: 7)
            #expect(try await queue.entry(id: 1).get()?.title == "Weekend groceries")
            queue.save(try Self.payload("Weekend groceries, with eggs"), activity: 1, bundle: Self.bundle, app: 7)
            queue.save(try Self.payload("Not for search", eligible: false), activity: 2, bundle: Self.bundle, app: 7)
            let count = await Self.delete(queue)
            #expect(count == 1, "one entry: the second save replaced the first; the ineligible one was never saved")
            #expect(try await queue.entry(id: 1).get() == nil)
        }
    }

    @Test("a live activity's save after its app's connection closed makes a new entry (forget)")
    func forgetEndsReplacing() async throws {
        try await withService { queue, _ in
            queue.save(try Self.payload("Trip to Lisbon"), activity: 1, bundle: Self.bundle, app: 7)
            queue.forget(app: 7)
            queue.save(try Self.payload("Trip to Porto"), activity: 1, bundle: Self.bundle, app: 7)
            #expect(await Self.delete(queue) == 2)
        }
    }

    @Test("the file replaced under it (baton search --rebuild): the next job opens the new one")
    func followsTheFile() async throws {
        try await withService { queue, path in
            queue.save(try Self.payload("Old list"), activity: 1, bundle: Self.bundle, app: 7)
            #expect(try await queue.entry(id: 1).get() != nil)
            try SearchIndex.setAside(at: path)
            _ = try SearchIndex(path: path)
            #expect(try await queue.entry(id: 1).get() == nil, "the new, empty index")
            queue.save(try Self.payload("New list"), activity: 1, bundle: Self.bundle, app: 7)
            #expect(try await queue.entry(id: 1).get()?.title == "New list", "not written to the old file")
        }
    }

    @Test("what was asked before a graceful shutdown is saved: the service drains its queue after its loop ends")
    func drainsAtShutdown() async throws {
        let folder = try Self.stateFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let queue = SearchQueue()
        let service = SearchService(queue: queue, stateFolder: folder, limits: .default, logger: Self.quiet)
        let group = ServiceGroup(services: [service], logger: Self.quiet)
        async let ran: Void = group.run()
        // Running: the loop answered.
        #expect(try await queue.entry(id: 1).get() == nil)
        for activity in 1...20 {
            queue.save(try Self.payload("List \(activity)"), activity: UInt64(activity), bundle: Self.bundle, app: 7)
        }
        await group.triggerGracefulShutdown()
        try await ran
        let index = try SearchIndex(path: service.path)
        #expect(try await index.search("list", limit: 100).count == 20)
    }

    // MARK: Helpers

    static func payload(_ title: String, eligible: Bool = true) throws -> Data {
        var payload = try ActivityPayload(activityType: "com.example.shopsnap.list")
        payload.title = title
        payload.isEligibleForSearch = eligible
        return try payload.encoded()
    }

    /// Deletes everything of ``bundle``, and returns how many entries went.
    static func delete(_ queue: SearchQueue) async -> Int? {
        await withCheckedContinuation { continuation in
            queue.delete(bundle: bundle, identifiers: nil) { continuation.resume(returning: try? $0.get()) }
        }
    }

    /// A new, empty state folder.
    static func stateFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-search-service-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    /// Runs a search service on a fresh state folder while `body` runs, then stops it and removes the folder.
    func withService(_ body: (SearchQueue, String) async throws -> Void) async throws {
        let folder = try Self.stateFolder()
        let queue = SearchQueue()
        let service = SearchService(queue: queue, stateFolder: folder, limits: .default, logger: Self.quiet)
        let running = Task { await service.run() }
        let outcome = await Result(catching: { try await body(queue, service.path) })
        running.cancel()
        await running.value
        try? FileManager.default.removeItem(at: folder)
        try outcome.get()
    }
}
