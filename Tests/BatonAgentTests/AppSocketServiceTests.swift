@testable import BatonAgent
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Issue 26 item 1: the app socket service owns what it runs, driven through its handle alone (no agent), and its
/// reaper's wait is a pure decision.
@Suite("Issue 26 item 1: the app socket service owns its work, its reaper and its socket")
struct AppSocketServiceTests {
    @Test("while a program started here may run the reaper looks every minute besides SIGCHLD; while none runs, never")
    func reapSchedule() {
        #expect(ReapSchedule().wait(childrenRunning: true) == .seconds(60))
        #expect(ReapSchedule().wait(childrenRunning: false) == nil, "idle: no wakeup until a program is started")
    }

    @Test("a started program wakes the reaper; work runs in the service and is cancelled when it stops; then the socket and the file naming it are removed")
    func ownsWorkReaperAndSocket() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("app-socket-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("agent.sock").path
        let nameFile = folder.appendingPathComponent("agent-socket")
        // A socket the service bound: only then is it the service's to remove (a start refused because another agent
        // answers at the path must leave that agent's socket).
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(unixDomainSocketPath: path).get()
        try Data("\(path)\n".utf8).write(to: nameFile)

        let work = AppSocketService.Work()
        let (events, event) = AsyncStream.makeStream(of: String.self)
        // The reaper looks once more as it stops: its looks are heard apart from the work's events.
        let (reaps, reaped) = AsyncStream.makeStream(of: Void.self)
        let running = NIOLockedValueBox(false)
        let service = AppSocketService(
            work: work,
            socket: AppSocketService.Socket(channel: listener, path: path, nameFile: nameFile),
            watcher: nil,
            childrenRunning: { running.withLockedValue { $0 } },
            reap: { reaped.yield() }
        )
        var heard = events.makeAsyncIterator()
        var looked = reaps.makeAsyncIterator()
        await withDiscardingTaskGroup { group in
            group.addTask { await service.run() }
            running.withLockedValue { $0 = true }
            work.childStarted()
            #expect(await looked.next() != nil, "a program started: the reaper looks at once")
            work.start {
                event.yield("started")
                await Doorbell().wait()  // until the service stops
                event.yield(Task.isCancelled ? "cancelled" : "ended")
            }
            #expect(await heard.next() == "started")
            #expect(FileManager.default.fileExists(atPath: path), "the socket stays while the service runs")
            group.cancelAll()
            #expect(await heard.next() == "cancelled")
        }
        #expect(!FileManager.default.fileExists(atPath: path), "the socket is removed with the service")
        #expect(!FileManager.default.fileExists(atPath: nameFile.path), "and the file naming it")
        #expect(!listener.isActive, "and the listener closed")
    }
}
