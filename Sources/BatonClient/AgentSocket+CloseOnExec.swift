#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension AgentSocket {
    /// Why ``connectedDescriptor(_:)`` could not connect: the system call's `errno`.
    package struct ConnectFailure: Error {
        package var code: Int32
    }

    /// A Unix stream socket connected to the agent at `path`, close-on-exec from its creation (NIO's own sockets are
    /// not), for NIO's `withConnectedSocket`.
    ///
    /// A program the app starts (`posix_spawn`, `system`) must not inherit the app's connection to its agent: the
    /// agent refuses a connection that another process also holds, at the hello and before each delivery (issue 25
    /// item 8), so an inherited copy would cost the app its continuations.
    package static func connectedDescriptor(_ path: String) throws(ConnectFailure) -> CInt {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw ConnectFailure(code: errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            close(descriptor)
            throw ConnectFailure(code: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
            for (index, byte) in bytes.enumerated() { sunPath[index] = byte }
            sunPath[bytes.count] = 0
        }
        // A Unix socket connects at once or not at all (EAGAIN: the agent's backlog is full), as NIO's connect would.
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw ConnectFailure(code: code)
        }
        return descriptor
    }
}
