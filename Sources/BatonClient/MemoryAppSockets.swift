import NIOConcurrencyHelpers
import NIOCore

/// The agents' app sockets inside this process (issue 26 item 3): an agent built on the memory transport listens at its
/// socket path here instead of binding a socket, and ``AgentClient/connect(path:bundleIdentifier:timeout:group:)``
/// finds it there first, so an app in the same process as an embedded agent talks to it with no socket, by the same
/// path it would use for one.
///
/// One table for the process, as the file system is one; it lives beside the client, which cannot see the agent's
/// ``MemoryNetwork`` of devices. Sendable, checked: everything mutable is in `listeners`, under its lock.
package final class MemoryAppSockets: Sendable {
    /// A listener: the loop its connections' ends run on, and what takes each.
    struct Listener {
        let loop: EventLoop
        let accept: @Sendable (MemoryAppConduit) -> Void
    }

    /// This process's table.
    package static let process = MemoryAppSockets()

    let listeners = NIOLockedValueBox<[String: Listener]>([:])

    package init() {}

    /// Listens at `path`: each connection's end runs on `loop` and goes to `accept` there, before anything the client
    /// sends can reach it. Returns false when someone listens there already.
    package func listen(path: String, loop: EventLoop, accept: @escaping @Sendable (MemoryAppConduit) -> Void) -> Bool {
        listeners.withLockedValue { listeners in
            guard listeners[path] == nil else { return false }
            listeners[path] = Listener(loop: loop, accept: accept)
            return true
        }
    }

    /// Stops listening at `path`; connections made already stay open.
    package func close(path: String) {
        listeners.withLockedValue { $0[path] = nil }
    }

    /// Whether an agent listens at `path` in memory.
    package func isListening(at path: String) -> Bool {
        listeners.withLockedValue { $0[path] != nil }
    }

    /// Connects to the listener at `path`, the client's end running on `loop`; nil when no one listens there.
    package func connect(path: String, loop: EventLoop) -> MemoryAppConduit? {
        guard let listener = listeners.withLockedValue({ $0[path] }) else { return nil }
        let (mine, theirs) = MemoryAppConduit.pair(loop, listener.loop)
        listener.loop.execute { listener.accept(theirs) }
        return mine
    }
}
