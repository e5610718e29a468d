import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whether a bus app still holds the read end of its stream's `input` pipe (issue 28 item 1): a close-on-exec
/// duplicate of the agent's write end, which the kernel marks with `POLLERR` once no reader is left.
///
/// The pipe channel cannot say it: NIO closes a pipe's write end on its own when the reader goes, without an event,
/// so an app that closed both its ends would look like one that only ended its side. The duplicate is closed with the
/// agent's write end (the half-close, or the channel's close): while it is open, the app reads no end of file.
///
/// Sendable, checked: its one descriptor is under a lock.
final class DBusStreamReaderWatch: Sendable {
    private let descriptor: NIOLockedValueBox<Int32?>

    /// Duplicates `writeEnd` (close-on-exec).
    /// - Throws: ``DBusStreamRefusal`` (`tooManyStreams`) at the descriptor limit.
    init(writeEnd: Int32) throws {
        let copy = fcntl(writeEnd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else {
            throw DBusStreamRefusal(.stream(.tooManyStreams), "the agent cannot watch a stream's pipe: \(String(cString: strerror(errno)))")
        }
        descriptor = NIOLockedValueBox(copy)
    }

    /// True once the app has closed its `input` (no reader is left); false while it holds it, or after ``close()``.
    func noReaderLeft() -> Bool {
        descriptor.withLockedValue { descriptor in
            guard let descriptor else { return false }
            var watched = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            return poll(&watched, 1, 0) == 1 && watched.revents & Int16(POLLERR) != 0
        }
    }

    /// Closes the duplicate (once).
    func close() {
        descriptor.withLockedValue { descriptor in
            if let open = descriptor { closeDescriptor(open) }
            descriptor = nil
        }
    }

    deinit {
        close()
    }
}

/// `close(2)`, named apart from ``DBusStreamReaderWatch/close()``.
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
