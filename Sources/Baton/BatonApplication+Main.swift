import Dispatch
import Foundation
import Synchronization

// Issue 25 item 5: the main actor on the process's first thread.
//
// On Linux the main actor's executor is the main dispatch queue, and what runs that queue decides the thread. An
// `@main` type's `static func main() async` (or top-level code with `await`) hands the queue to `dispatch_main()`,
// which on Linux ends the first thread and drains the queue on a worker: after the first `await` every delegate call
// ran with `Thread.isMainThread` false, which toolkits bound to the first thread (GTK) cannot live with. Run by
// Foundation's main run loop on the first thread instead, the same queue stays there for good.

extension BatonApplication {
    /// Runs the app (`UIApplication.main`'s part on Linux): `body` on the main actor, with the main actor on the
    /// process's first thread for as long as the app runs, so every call Baton makes to the app (delegates,
    /// responders, `restorationHandler`, completion handlers, ``events``) comes with `Thread.isMainThread` true. Call
    /// it from a synchronous `static func main()` (or top-level code with no `await`); it never returns.
    ///
    /// The app quits when `body` returns (exit status 0) or throws (the error on standard error, status 1); `exit(_:)`
    /// anywhere quits at once. An app that waits for continuations keeps `body` running, e.g. until the agent goes away:
    ///
    /// ```swift
    /// @main
    /// struct ShopSnap {
    ///     static func main() {
    ///         BatonApplication.main {
    ///             BatonApplication.shared.delegate = appDelegate
    ///             try await BatonApplication.shared.connect()
    ///             while BatonApplication.shared.isConnected { try await Task.sleep(for: .seconds(1)) }
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// Not from inside a task (an `async` `main`, say): its thread is already busy with that task, so the main run loop
    /// cannot run there; that is refused on standard error with exit status 70. A toolkit with its own main loop on the
    /// first thread (GTK's) runs that loop instead of this one and lets it do the main actor's work: see
    /// ``mainQueueDescriptor`` and ``runMainQueue()``.
    public nonisolated static func main(_ body: @escaping @MainActor () async throws -> Void) -> Never {
        refuseOutsideFirstThread("BatonApplication.main")
        Task { @MainActor in
            var code: Int32 = 0
            do {
                try await body()
            } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                code = 1
            }
            mainStatus.store(code, ordering: .releasing)
        }
        // Each turn runs what the main queue holds (every main-actor job, on this thread) and returns; the task above
        // sets the status in its last one.
        while mainStatus.load(ordering: .acquiring) < 0 {
            _ = RunLoop.main.run(mode: .default, before: .distantFuture)
        }
        exit(mainStatus.load(ordering: .acquiring))
    }

    /// The exit status `body` of ``main(_:)`` ended with, -1 while it runs.
    private nonisolated static let mainStatus = Atomic<Int32>(-1)

    #if os(Linux)

    /// For a toolkit that runs its own main loop on the first thread (GTK's `g_application_run`, say) instead of
    /// ``main(_:)``: a file descriptor that becomes readable when work for the main actor is waiting. Watch it for
    /// input in that loop and call ``runMainQueue()`` when it is, and the main actor runs on the first thread,
    /// between the toolkit's own events. With GLib:
    ///
    /// ```swift
    /// g_unix_fd_add(BatonApplication.mainQueueDescriptor, G_IO_IN, { _, _, _ in
    ///     BatonApplication.runMainQueue()
    ///     return gboolean(G_SOURCE_CONTINUE)
    /// }, nil)
    /// ```
    ///
    /// Start the app's own code with `Task { @MainActor in ... }` before entering the loop. This is the hook
    /// Foundation's run loop itself uses (libdispatch's `_dispatch_get_main_queue_handle_4CF`).
    public nonisolated static var mainQueueDescriptor: Int32 {
        dispatchMainQueueHandle()
    }

    /// Runs the work waiting for the main actor (see ``mainQueueDescriptor``), on the first thread, and returns.
    /// Called from a task or another thread it is refused on standard error with exit status 70: the main actor's work
    /// must run on the first thread, alone.
    public nonisolated static func runMainQueue() {
        refuseOutsideFirstThread("BatonApplication.runMainQueue()")
        // The descriptor is an eventfd: reset it first, so work queued while this runs wakes the loop again.
        var count: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &count) { read(dispatchMainQueueHandle(), $0.baseAddress, $0.count) }
        dispatchMainQueueCallback(nil)
    }

    #endif

    /// Exits with status 70 (EX_SOFTWARE), saying why, unless called on the first thread outside any task: the main
    /// run loop, or the toolkit's, can only run the main actor's work there.
    nonisolated static func refuseOutsideFirstThread(_ name: String) {
        let inTask = withUnsafeCurrentTask { $0 != nil }
        guard Thread.isMainThread, !inTask else {
            let reason = inTask ? "inside a task (an async main?)" : "on a thread other than the first"
            let message = "\(name) was called \(reason): call it from a synchronous static func main() "
                + "(or top-level code without await), so the main actor runs on the first thread\n"
            FileHandle.standardError.write(Data(message.utf8))
            exit(70)
        }
    }
}

#if os(Linux)
// libdispatch's hooks for a run loop on the main thread, exported on Linux for Foundation's CFRunLoop (which drives
// `RunLoop.main` with them): the main queue's wake-up descriptor, and the call that drains the queue.
@_silgen_name("_dispatch_get_main_queue_handle_4CF")
private func dispatchMainQueueHandle() -> Int32

@_silgen_name("_dispatch_main_queue_callback_4CF")
private func dispatchMainQueueCallback(_ message: UnsafeMutableRawPointer?)
#endif
