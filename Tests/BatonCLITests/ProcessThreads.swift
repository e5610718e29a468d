import Foundation

/// Two threads of their own for the tests that start processes and wait for them (`Process.waitUntilExit`, `usleep`
/// polls, `Thread.sleep`): such a test blocks the thread it runs on for seconds. Run on Swift's cooperative pool (two
/// threads on a two-core machine) two of them stalled every in-process test beside them, and a 5 s timeout there
/// failed in CI. Here they take these two threads instead, at most two at once, and the pool stays free.
///
/// A `TaskExecutor`: the test's body still runs in its own task, so Swift Testing's `#expect` and `#require` know
/// which test they belong to.
final class ProcessThreads: TaskExecutor, @unchecked Sendable {
    static let shared = ProcessThreads(count: 2)

    // `@unchecked Sendable`: `jobs` is only touched with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    init(count: Int) {
        for index in 0..<count {
            let thread = Thread { [unowned self] in work() }
            thread.name = "baton-tests-processes-\(index)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs `body`, a test that starts processes and blocks while it waits for them, on ``ProcessThreads`` rather than
/// Swift's cooperative pool.
func startingProcesses<Value>(_ body: () throws -> Value) async throws -> Value {
    try await withTaskExecutorPreference(ProcessThreads.shared) { try body() }
}
