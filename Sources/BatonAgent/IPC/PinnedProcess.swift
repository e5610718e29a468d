import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process that connected to the agent, pinned by a pidfd taken when the connection was accepted
/// (`SO_PEERPIDFD`, Linux 6.5; issue 25 item 8).
///
/// While the process runs, its pid cannot be given to another process, so what `/proc/PID` shows, read before
/// ``isRunning`` answers true, was the connecting process's own: no recycled pid can stand in for it.
///
/// A class, to close the descriptor exactly once when the connection goes; `Sendable`: its stored properties are `let`
/// integers.
final class PinnedProcess: Sendable {
    let pid: Int32
    let descriptor: Int32

    private init(pid: Int32, descriptor: Int32) {
        self.pid = pid
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// The process behind `descriptor`, a pidfd the caller had and now hands over: the one the session bus gave for
    /// an app registering over D-Bus (`ProcessFD`, issue 28 item 1).
    static func adopting(_ descriptor: Int32, pid: Int32) -> PinnedProcess {
        PinnedProcess(pid: pid, descriptor: descriptor)
    }

    /// The pidfd of the process connected to `channel`, or nil where the kernel has none to give (before Linux 6.5,
    /// or at the descriptor limit): the process's start time then stands in (ISSUE 10 item 4).
    static func of(_ channel: Channel, pid: Int32) -> EventLoopFuture<PinnedProcess?> {
        guard let provider = channel as? SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
        // SOL_SOCKET = 1 and SO_PEERPIDFD = 77 on Linux. The descriptor is close-on-exec, as every pidfd is.
        let descriptor: EventLoopFuture<Int32> = provider.unsafeGetSocketOption(level: SocketOptionLevel(1), name: SocketOptionName(77))
        return descriptor.map { $0 >= 0 ? PinnedProcess(pid: pid, descriptor: $0) : nil }.recover { _ in nil }
    }

    /// Whether the process still runs: a pidfd turns readable when its process exits.
    var isRunning: Bool {
        var watched = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&watched, 1, 0) == 0
    }
}
