import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One advert socket's descriptor, opened and bound here rather than by NIO (issue 25 item 1). NIO reads from a
/// duplicate of it (``DatagramBootstrap/withBoundSocket(_:)``); adverts are sent from this one with `sendto`, so a
/// send that fails (EPERM from a firewall rule, ENETUNREACH or ENODEV while a link is down) is an error returned
/// here and nothing more. NIO closes a datagram channel on any write error but EMSGSIZE and EHOSTUNREACH
/// (`PendingDatagramWritesManager`), and there is no option to change that, so adverts never go through its writes.
final class AdvertSender: Sendable {
    private let descriptor: NIOLockedValueBox<CInt>

    private init(_ descriptor: CInt) {
        self.descriptor = NIOLockedValueBox(descriptor)
    }

    /// A UDP socket bound to `address` (SO_REUSEADDR on, like every advert socket, so agents and `baton pair --find`
    /// share the discovery port; `v6Only` for the IPv6 group's socket beside the IPv4 one). Throws an `IOError`
    /// (EADDRINUSE when the port is taken) saying which call failed.
    static func bound(to address: SocketAddress, v6Only: Bool = false) throws -> AdvertSender {
        let family: CInt
        switch address {
        case .v4: family = AF_INET
        case .v6: family = AF_INET6
        case .unixDomainSocket: throw IOError(errnoCode: EAFNOSUPPORT, reason: "socket")
        }
        let fd = socket(
            family,
            CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue) | CInt(SOCK_NONBLOCK.rawValue),
            0
        )
        guard fd >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        func fail(_ call: String) -> IOError {
            let error = IOError(errnoCode: errno, reason: call)
            systemClose(fd)
            return error
        }
        var on: CInt = 1
        guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<CInt>.size)) == 0 else {
            throw fail("setsockopt(SO_REUSEADDR)")
        }
        if v6Only {
            guard setsockopt(fd, CInt(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<CInt>.size)) == 0 else {
                throw fail("setsockopt(IPV6_V6ONLY)")
            }
        }
        let bound = Self.withSockaddr(address) { pointer, length in systemBind(fd, pointer, length) } ?? -1
        guard bound == 0 else { throw fail("bind(\(address))") }
        return AdvertSender(fd)
    }

    /// A duplicate of the descriptor for NIO to read from (and close, when its channel closes).
    func duplicate() throws -> CInt {
        let copy = descriptor.withLockedValue { fcntl($0, F_DUPFD_CLOEXEC, 0) }
        guard copy >= 0 else { throw IOError(errnoCode: errno, reason: "fcntl(F_DUPFD_CLOEXEC)") }
        return copy
    }

    /// Sends one datagram without waiting; returns the error when the kernel refused it (nil when it was sent).
    func send(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress) -> IOError? {
        descriptor.withLockedValue { fd in
            guard fd >= 0 else { return IOError(errnoCode: EBADF, reason: "sendto") }
            let sent =
                Self.withSockaddr(address) { pointer, length in
                    sendto(fd, bytes.baseAddress, bytes.count, CInt(MSG_DONTWAIT) | CInt(MSG_NOSIGNAL), pointer, length)
                } ?? -1
            return sent >= 0 ? nil : IOError(errnoCode: errno, reason: "sendto")
        }
    }

    /// Closes the descriptor (NIO's duplicate is closed with its channel). Closing twice is harmless.
    func close() {
        descriptor.withLockedValue { fd in
            if fd >= 0 { systemClose(fd) }
            fd = -1
        }
    }

    /// Calls `body` with `address` as a `sockaddr` and its length; nil for a Unix-domain address.
    private static func withSockaddr<Result>(
        _ address: SocketAddress,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
    ) -> Result? {
        switch address {
        case .v4(let v4):
            var raw = v4.address
            return withUnsafePointer(to: &raw) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .v6(let v6):
            var raw = v6.address
            return withUnsafePointer(to: &raw) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        case .unixDomainSocket:
            return nil
        }
    }
}

// libc's close and bind, named apart from the methods above (and from the C library's module, Glibc or Musl).
private func systemClose(_ fd: CInt) { _ = close(fd) }
private func systemBind(_ fd: CInt, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> CInt {
    bind(fd, address, length)
}
