@testable import BatonAgent
import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The pieces the agent's services are made of (issue 11 parts 3, 7 and 8): the doorbell their loops sleep on, the
/// pool that keeps their work tracked, and the folder watcher that replaces polling.
@Suite("Issue 11: doorbell, task pool, folder watcher")
struct ServiceTests {
    @Test("a ring before the wait is kept: the wait returns at once")
    func ringBeforeWait() async throws {
        let bell = Doorbell()
        bell.ring()
        bell.ring()
        await bell.wait()  // would hang if the ring were lost
        // Two rings are one: the second wait sleeps until its timeout (30 ms of a virtual clock, issue 26 item 3).
        let clock = VirtualClock()
        let second = Task { await bell.wait(timeout: .milliseconds(30), clock: clock.clock) }
        await clock.untilTimers(1)
        while !bell.isWaiting { await Task.yield() }
        try await clock.advance(by: 29)
        #expect(bell.isWaiting, "two rings are one: the second wait sleeps until its timeout")
        try await clock.advance(by: 1)
        await second.value
    }

    @Test("issue 25 item 0: a timer that fires late, for a wait a ring already ended, ends no later wait; that one ends at its own")
    func lateTimerEndsNoLaterWait() async {
        // A clock whose timers the test fires by hand and whose cancel stops none: a cancelled loop timer that
        // fires anyway, as one already running when cancelled does.
        let timers = NIOLockedValueBox<[@Sendable () -> Void]>([])
        let (armed, arm) = AsyncStream.makeStream(of: Void.self)
        let clock = AgentClock(wall: { 0 }, uptimeNanoseconds: { 0 }) { _, _, body in
            timers.withLockedValue { $0.append(body) }
            arm.yield()
            return AgentClock.Timer {}
        }
        var arming = armed.makeAsyncIterator()
        let bell = Doorbell()
        bell.ring()
        await bell.wait(timeout: .milliseconds(20), clock: clock)
        let later = Task { await bell.wait(timeout: .milliseconds(200), clock: clock) }
        await arming.next()
        await arming.next()
        while !bell.isWaiting { await Task.yield() }
        timers.withLockedValue { $0[0] }()
        #expect(bell.isWaiting, "the ended wait's timer, firing late, leaves the later wait waiting")
        timers.withLockedValue { $0[1] }()
        await later.value
    }

    @Test("a ring wakes a waiter; cancelling the waiting task ends the wait")
    func ringWakesAndCancelEnds() async {
        let bell = Doorbell()
        async let woken: Void = bell.wait()
        bell.ring()
        await woken
        let waiting = Task { await bell.wait() }
        waiting.cancel()
        await waiting.value
    }

    @Test("issue 25 item 0: a wait a ring ends leaves nothing behind, however long its timeout")
    func ringEndedWaitsLeaveNothing() async {
        // The search loop waits up to an hour and is rung several times per continuation. Each wait's deadline was
        // a Task.sleep, which on Linux stays queued with its task until the deadline even when the ring ends the
        // wait first: some 400 bytes a wait, 8 MB per 20,000 (the release soak's 2.2 KB per continuation).
        // Measured in a process of its own (this test binary, running only this test): with every other test running
        // in this one (CI's swift test), the process grew 4.7 MB over the same waits, whatever the doorbell did.
        guard ProcessInfo.processInfo.environment["BATON_DOORBELL_ALONE"] != nil else {
            let child = Process()
            child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            child.arguments = ["--testing-library", "swift-testing", "--filter", "ringEndedWaitsLeaveNothing"]
            child.environment = ProcessInfo.processInfo.environment.merging(["BATON_DOORBELL_ALONE": "1"]) { _, new in new }
            let output = Pipe()
            child.standardOutput = output
            child.standardError = output
            child.standardInput = FileHandle.nullDevice
            do {
                try child.run()
            } catch {
                Issue.record("cannot run this test alone: \(error)")
                return
            }
            let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            child.waitUntilExit()
            // "with 1 test": the filter found this test (a run of none would pass too).
            #expect(child.terminationStatus == 0 && said.contains("with 1 test"), "alone:\n\(said.suffix(2_000))")
            return
        }
        let bell = Doorbell()
        for _ in 0..<1_000 {
            bell.ring()
            await bell.wait(timeout: .seconds(3_600), clock: .system)
        }
        // Other tests allocate and free in this process meanwhile (CI runs them all at once): the least growth of
        // three rounds is the doorbell's own.
        var growths: [Int] = []
        for _ in 0..<3 {
            let before = Self.residentBytes()
            for _ in 0..<20_000 {
                bell.ring()
                await bell.wait(timeout: .seconds(3_600), clock: .system)
            }
            growths.append(Self.residentBytes() - before)
            if growths.last ?? 0 < 2_000_000 { break }
        }
        #expect((growths.min() ?? 0) < 2_000_000, "the process grew by \(growths) bytes over 20,000 waits ended by a ring")
        // That a timer firing for an ended wait ends no later wait: lateTimerEndsNoLaterWait, with no window.
    }

    /// The process's resident bytes now (/proc/self/statm): what the soak watches. Memory freed stays resident
    /// for reuse, so this grows only by what is kept.
    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test("work in a pool runs; its handle cancels it; cancelling the pool cancels what runs")
    func taskPool() async {
        let pool = TaskPool()
        let running = Task { await pool.run() }
        let finished = NIOLockedValueBox<[String]>([])
        let ran = Doorbell()
        pool.start {
            finished.withLockedValue { $0.append("quick") }
            ran.ring()
        }
        await ran.wait()
        let started = Doorbell()
        let cancelled = Doorbell()
        let handle = pool.start {
            started.ring()
            try? await Task.sleep(for: .seconds(60))
            finished.withLockedValue { $0.append(Task.isCancelled ? "cancelled" : "slept") }
            cancelled.ring()
        }
        await started.wait()
        handle.cancel()
        await cancelled.wait()
        pool.start {
            started.ring()
            try? await Task.sleep(for: .seconds(60))
            finished.withLockedValue { $0.append(Task.isCancelled ? "stopped with the pool" : "slept") }
        }
        await started.wait()
        running.cancel()
        await running.value
        #expect(finished.withLockedValue { $0 } == ["quick", "cancelled", "stopped with the pool"])
    }

    @Test("the watcher reports a file written, renamed into place and removed, once per burst")
    func folderWatcher() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let reports = NIOLockedValueBox<[Set<String>]>([])
        let bell = Doorbell()
        let watcher = try #require(FolderWatcher(ignoring: ["lock"]) { folders in
            reports.withLockedValue { $0.append(folders) }
            bell.ring()
        })
        defer { watcher.close() }
        #expect(watcher.watch(folder.path))
        #expect(!watcher.watch(folder.appendingPathComponent("missing").path))
        // The lock file every reader of the state opens for writing is not a change (a report would cause the next).
        try Data().write(to: folder.appendingPathComponent("lock"))
        for index in 0..<5 {
            try Data("\(index)".utf8).write(to: folder.appendingPathComponent("file-\(index)"), options: .atomic)
        }
        await bell.wait(timeout: .seconds(5), clock: .system)
        #expect(reports.withLockedValue { $0 } == [[folder.path]], "five writes in a burst are one report")
        try FileManager.default.removeItem(at: folder.appendingPathComponent("file-0"))
        await bell.wait(timeout: .seconds(5), clock: .system)
        #expect(reports.withLockedValue { $0.count } == 2)
        // The lock file written, then a file in another watched folder: one inotify descriptor keeps their order, so
        // once the other folder is reported the lock's write has been read, and it must not be in any report.
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("baton-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: other) }
        #expect(watcher.watch(other.path))
        let before = reports.withLockedValue { $0.count }
        try Data("x".utf8).write(to: folder.appendingPathComponent("lock"))
        try Data("y".utf8).write(to: other.appendingPathComponent("file"))
        await bell.wait(timeout: .seconds(30), clock: .system)
        #expect(reports.withLockedValue { Array($0.dropFirst(before)) } == [[other.path]], "the lock file alone is never reported")
        let reported = reports.withLockedValue { $0.count }
        watcher.close()
        // Not a window in which nothing should come (it was 300 ms, twice the settle): the close taking effect on
        // the watcher's queue, after which nothing of it runs.
        await watcher.untilClosed()
        try Data("late".utf8).write(to: folder.appendingPathComponent("late"))
        #expect(reports.withLockedValue { $0.count } == reported, "nothing is reported after close")
    }
}
