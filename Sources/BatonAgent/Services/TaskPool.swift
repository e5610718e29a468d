import NIOConcurrencyHelpers

/// Work that outlives the call that starts it (a peer's request answered later, a fetch for a continuation, a
/// command line's request), run as child tasks of one service's `run()` (issue 11 part 3): nothing runs untracked,
/// and when the service stops, what is still running is cancelled and awaited. Work started after that is dropped.
final class TaskPool: Sendable {
    /// Cancels one piece of work.
    final class Handle: Sendable {
        fileprivate let bell = Doorbell()
        private let cancelled = NIOLockedValueBox(false)

        /// Cancels the work (its awaits see `Task.isCancelled` and their cancellation handlers run).
        func cancel() {
            cancelled.withLockedValue { $0 = true }
            bell.ring()
        }

        fileprivate var isCancelled: Bool { cancelled.withLockedValue { $0 } }
    }

    private struct Job: Sendable {
        var handle: Handle
        var body: @Sendable () async -> Void
    }

    private let jobs: AsyncStream<Job>
    private let input: AsyncStream<Job>.Continuation

    init() {
        (jobs, input) = AsyncStream.makeStream(of: Job.self)
    }

    /// Runs `body` as a child of ``run()``; the handle cancels it.
    @discardableResult
    func start(_ body: @escaping @Sendable () async -> Void) -> Handle {
        let handle = Handle()
        input.yield(Job(handle: handle, body: body))
        return handle
    }

    /// Runs the work started, until the task running it is cancelled (which cancels the work too) or ``finish()``.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await job in jobs {
                group.addTask { await Self.execute(job) }
            }
            group.cancelAll()
        }
    }

    /// Takes no more work; ``run()`` returns once what is running ends.
    func finish() {
        input.finish()
    }

    /// The body, cancelled when its handle is (a child that waits for the handle beside it).
    private static func execute(_ job: Job) async {
        guard !job.handle.isCancelled else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await job.body()
                job.handle.bell.ring()
            }
            group.addTask {
                // Returns on cancel(), when the body ends (it rings), or when the pool is cancelled.
                await job.handle.bell.wait()
            }
            await group.next()
            group.cancelAll()
        }
    }
}
