#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
import NIOCore
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The Unix socket apps and command lines connect to, the programs launched for them, and the app folders' watcher,
/// which follows installs (issue 11 part 7). At shutdown the command lines' requests are cancelled and awaited, the
/// reaper stops, the watcher closes, and the socket closes and is removed with the file naming it.
///
/// It owns what it runs (issue 26 item 1): the command lines' work pool and the doorbell its reaper sleeps on, both
/// behind its ``ServiceWork``, the one handle the agent keeps (to start a request's work, and to say a program was started);
/// and the reaper's loop, whose wait is ``ReapSchedule``'s, pure. What it needs beyond that comes in at construction
/// as narrow values: the socket, the watcher, and what reaps the programs started; it holds no agent.
struct AppSocketService: Service, CustomStringConvertible {
    /// How the rest of the agent starts the command lines' work (the nearby list, a continue) and wakes the reaper
    /// (its bell is rung by SIGCHLD too): the one handle to this service it keeps.
    typealias Work = ServiceWork

    /// The app socket's listener and the files naming it, closed and removed together.
    struct Socket: Sendable {
        /// Nil when it was never bound (a build that failed first). Closing it removes the socket (``AppTransport``).
        var listener: AppListener?
        /// The socket's path: removed at shutdown.
        var path: String
        /// The state folder's `agent-socket`, naming the path for command lines: removed at shutdown.
        var nameFile: URL

        /// The Unix socket bound to `channel`.
        init(channel: Channel?, path: String, nameFile: URL) {
            self.init(listener: channel.map { UnixAppTransport.listener($0, path: path) }, path: path, nameFile: nameFile)
        }

        init(listener: AppListener?, path: String, nameFile: URL) {
            self.listener = listener
            self.path = path
            self.nameFile = nameFile
        }

        /// Closes the listener and removes the socket and the file naming it; a socket never bound removes nothing,
        /// since what is at the path is another agent's (a second agent refused because one already runs there).
        func close() async {
            guard let listener else { return }
            await listener.close()
            try? FileManager.default.removeItem(at: nameFile)
        }
    }

    let work: Work
    let socket: Socket
    /// Watches the app folders (part 7); closed at shutdown. Nil when none is watched.
    let watcher: FolderWatcher?
    /// Whether a program started here may still run (an app launched, the browser): the reaper then backs SIGCHLD up.
    let childrenRunning: @Sendable () -> Bool
    /// Reaps the programs started here that have ended, so none is left a zombie (the agent's: an app that ended
    /// before it connected is reported to its broker).
    let reap: @Sendable () -> Void
    var schedule = ReapSchedule()
    /// The agent's clock: the reaper's backing-up checks are timed on it.
    var clock: AgentClock = .system

    var description: String { "app socket" }

    func run() async {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await work.pool.run() }
                group.addTask { await reapLoop() }
            }
        }
        watcher?.close()
        await socket.close()
    }

    /// Reaps the programs started here as they end: a SIGCHLD rings the doorbell, and while any runs the schedule's
    /// check backs that up (issue 11 part 8: nothing polls while none runs).
    private func reapLoop() async {
        let signal = DispatchSource.makeSignalSource(signal: SIGCHLD, queue: .global())
        signal.setEventHandler { [children = work.bell] in children.ring() }
        signal.resume()
        defer { signal.cancel() }
        while !Task.isCancelled {
            await work.bell.wait(timeout: schedule.wait(childrenRunning: childrenRunning()), clock: clock)
            reap()
        }
    }
}

extension ServiceWork {
    /// A program was started for an app or a page: the app socket service's reaper looks again now, and backs SIGCHLD
    /// up while it runs.
    func childStarted() {
        bell.ring()
    }
}
