#if canImport(Glibc)
import Glibc
import NIOCore

/// Raw socket calls for direct continuation streams (issue 30; SEMANTICS F1-F3, docs/PROTOCOL.md §8 "Direct
/// streams"): an agent takes over a TCP connection NIO accepted or makes one itself, and passes the connected socket
/// to an app over the app's Unix socket (`SCM_RIGHTS`), so the two apps speak TLS 1.3 to each other with no agent
/// copying their bytes.
///
/// Blocking in the sense that each call runs to its end on the calling thread (a `receive` or `write` waits in
/// `poll` until its deadline): call them off an event loop. Every descriptor this hands out is close-on-exec, so a
/// program an agent or app starts never inherits a stream. Every failure is a ``StreamSocketError``.
package enum StreamSocket {
    /// `SO_COOKIE` (Linux 4.13, `<asm-generic/socket.h>`), which Swift's Glibc module does not export.
    package static let socketCookieOption: Int32 = 57
    /// `TCP_KEEPIDLE`, `TCP_KEEPINTVL`, `TCP_KEEPCNT` and `TCP_INFO` from `<netinet/tcp.h>`, which Swift's Glibc module
    /// does not export either.
    private static let tcpKeepIdleOption: Int32 = 4
    private static let tcpKeepIntervalOption: Int32 = 5
    private static let tcpKeepCountOption: Int32 = 6
    package static let tcpInfoOption: Int32 = 11
    /// `TCP_NODELAY`: a stream carries requests and replies as the apps write them (F3), not batched by Nagle.
    private static let tcpNoDelayOption: Int32 = 1

    /// A direct stream's keepalive (docs/PROTOCOL.md: a dead peer ends the stream within seconds, as the relayed
    /// streams' ping does): the first probe after 2 s of quiet...
    package static let keepaliveIdleSeconds: Int32 = 2
    /// ...then one every second...
    package static let keepaliveIntervalSeconds: Int32 = 1
    /// ...and the connection is dropped after 2 unanswered: a silent peer is noticed 4 s after it last spoke.
    package static let keepaliveCount: Int32 = 2
    /// Not `TCP_USER_TIMEOUT`: on this kernel it also ends a connection whose peer is there but does not read (zero
    /// window probes answered, measured: a 2 s timeout dropped a live reader's connection after 2.5 s), which would
    /// turn a slow reader's backpressure into `peerGone`. A peer that vanishes mid-write is the library's
    /// ``DirectStreamLiveness`` instead: no acknowledgement for ``deadPeerMilliseconds`` while retransmissions or window
    /// probes go unanswered.
    package static let deadPeerMilliseconds: UInt32 = 5000

    /// The most descriptors one ``receive(exactly:on:deadline:)`` takes with its bytes; more are closed by the kernel
    /// and the receive fails. One is all a stream passes.
    package static let maximumDescriptors = 8

    // MARK: Socket cookies

    /// The kernel's socket cookie (`SO_COOKIE`: a number unique to the socket for as long as it exists, never reused
    /// while it does) of a NIO channel's socket, asked on the channel's event loop. Fails (``StreamSocketError/Code/notFound``)
    /// when the channel has no socket (an embedded or in-memory channel) or is closed.
    package static func cookie(of channel: Channel) -> EventLoopFuture<UInt64> {
        guard let provider = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(
                StreamSocketError(.notFound, "the connection has no socket to take over (SO_COOKIE): it is not a TCP or Unix socket channel")
            )
        }
        let cookie: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(socketCookieOption)
        )
        return cookie.flatMapErrorThrowing { error in
            throw StreamSocketError(.notFound, "getsockopt(SO_COOKIE) on the connection's socket: \(error)")
        }
    }

    /// The socket cookie of descriptor `fd`; nil when it is not a socket (or not open).
    package static func cookie(ofDescriptor fd: Int32) -> UInt64? {
        var cookie: UInt64 = 0
        var length = socklen_t(MemoryLayout<UInt64>.size)
        guard getsockopt(fd, SOL_SOCKET, socketCookieOption, &cookie, &length) == 0, length == socklen_t(MemoryLayout<UInt64>.size) else {
            return nil
        }
        return cookie
    }

    /// A close-on-exec duplicate of the descriptor in this process whose socket has `cookie`; nil when none has it.
    ///
    /// Lists `/proc/self/fd` and asks each descriptor its cookie in place (a descriptor that is no socket answers
    /// nothing); only the one that matches is duplicated (`F_DUPFD_CLOEXEC`), and the cookie is checked again on the
    /// duplicate, so a number closed and reused by another thread meanwhile cannot hand out the wrong socket (a
    /// mismatching duplicate is closed and the search goes on). No other descriptor is ever duplicated, not even for a
    /// moment: a transient copy of another part of the process's socket or pipe would keep it open behind its owner's
    /// back (a write to a peer that just closed would then succeed instead of failing). This is how a socket NIO owns
    /// is taken over: the caller closes the NIO channel afterwards, which `close()`s only NIO's descriptor, and the
    /// socket lives on in the duplicate (the caller's to close).
    package static func duplicate(cookie: UInt64) -> Int32? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        let listing = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let fd = Int32(name), fd != listing, Self.cookie(ofDescriptor: fd) == cookie else { continue }
            let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
            guard copy >= 0 else { continue }
            if Self.cookie(ofDescriptor: copy) == cookie { return copy }
            close(copy)
        }
        return nil
    }

    // MARK: Passing descriptors

    /// Sends `bytes` on the Unix socket `socket` with `descriptor` attached (one `SCM_RIGHTS` control message), with
    /// `MSG_NOSIGNAL`: the whole of `bytes` in one `sendmsg`, or an error. A full send buffer (`EAGAIN` on a
    /// non-blocking socket) is an error too: the caller sends only small messages on a socket that is otherwise idle.
    /// `bytes` must not be empty (a stream socket carries a descriptor only with data). The caller still owns
    /// `descriptor` (the receiver gets a copy) and closes it when it no longer needs it.
    package static func send(_ bytes: [UInt8], passing descriptor: Int32, on socket: Int32) throws(StreamSocketError) {
        guard !bytes.isEmpty else {
            throw StreamSocketError(.system, "sendmsg with SCM_RIGHTS needs at least one byte to carry the descriptor")
        }
        var control = [UInt8](repeating: 0, count: ControlMessage.space(MemoryLayout<Int32>.size))
        control.withUnsafeMutableBytes { raw in
            var header = cmsghdr()
            header.cmsg_len = ControlMessage.length(MemoryLayout<Int32>.size)
            header.cmsg_level = SOL_SOCKET
            header.cmsg_type = Int32(SCM_RIGHTS)
            raw.storeBytes(of: header, as: cmsghdr.self)
            raw.storeBytes(of: descriptor, toByteOffset: ControlMessage.headerSpace, as: Int32.self)
        }
        var bytes = bytes
        let sent = bytes.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { controlBytes in
                ControlMessage.withMessage(data, control: controlBytes) { sendmsg(socket, &$0, Int32(MSG_NOSIGNAL)) }
            }
        }
        guard sent >= 0 else { throw StreamSocketError.system("sendmsg of \(bytes.count) bytes with a descriptor", errno: errno) }
        guard sent == bytes.count else {
            throw StreamSocketError(.system, "sendmsg sent \(sent) of \(bytes.count) bytes with a descriptor: the socket's buffer is full")
        }
    }

    /// Reads exactly `count` bytes from `socket` with `recvmsg` (`MSG_CMSG_CLOEXEC`), waiting with `poll` until
    /// `deadline`, and returns them with the descriptors passed with them (`SCM_RIGHTS`; close-on-exec, the caller's to
    /// close).
    ///
    /// Never reads past `count`, so what follows stays in the socket for its next reader. Works on blocking and
    /// non-blocking sockets alike (each `recvmsg` is `MSG_DONTWAIT`). End of file before `count` bytes is
    /// ``StreamSocketError/Code/closed``, the deadline passing ``StreamSocketError/Code/timedOut``, more than
    /// ``maximumDescriptors`` at once ``StreamSocketError/Code/system``; on any failure the descriptors already received
    /// are closed.
    package static func receive(
        exactly count: Int, on socket: Int32, deadline: NIODeadline
    ) throws(StreamSocketError) -> (bytes: [UInt8], descriptors: [Int32]) {
        var bytes = [UInt8](repeating: 0, count: count)
        var descriptors: [Int32] = []
        var received = 0
        var control = [UInt8](repeating: 0, count: ControlMessage.space(maximumDescriptors * MemoryLayout<Int32>.size))
        do throws(StreamSocketError) {
            while received < count {
                var truncated = false
                let result = bytes.withUnsafeMutableBytes { data in
                    control.withUnsafeMutableBytes { controlBytes in
                        ControlMessage.withMessage(UnsafeMutableRawBufferPointer(rebasing: data[received...]), control: controlBytes) { message in
                            let result = recvmsg(socket, &message, Int32(MSG_DONTWAIT) | Int32(MSG_CMSG_CLOEXEC))
                            if result >= 0 {
                                descriptors += ControlMessage.descriptors(in: UnsafeRawBufferPointer(controlBytes), length: message.msg_controllen)
                                truncated = message.msg_flags & Int32(MSG_CTRUNC) != 0
                            }
                            return result
                        }
                    }
                }
                if result > 0 {
                    received += result
                } else if result == 0 {
                    throw StreamSocketError(.closed, "recvmsg: the other end closed the socket after \(received) of \(count) bytes")
                } else {
                    let code = errno
                    switch code {
                    case EINTR:
                        continue
                    case EAGAIN, EWOULDBLOCK:
                        try wait(for: Int16(POLLIN), on: socket, until: deadline, doing: "recvmsg of \(count) bytes (\(received) came)")
                    case ECONNRESET:
                        throw StreamSocketError(.closed, "recvmsg: the other end reset the connection after \(received) of \(count) bytes")
                    default:
                        throw StreamSocketError.system("recvmsg", errno: code)
                    }
                }
                if truncated {
                    throw StreamSocketError(.system, "recvmsg: more than \(maximumDescriptors) descriptors came at once; the kernel closed the rest")
                }
            }
        } catch {
            for descriptor in descriptors { close(descriptor) }
            throw error
        }
        return (bytes, descriptors)
    }

    /// Writes all of `bytes` to `socket` (`MSG_NOSIGNAL | MSG_DONTWAIT`), waiting with `poll` for room until
    /// `deadline`. A peer that closed is ``StreamSocketError/Code/closed``; the deadline passing
    /// ``StreamSocketError/Code/timedOut`` (some of the bytes may have gone).
    package static func write(_ bytes: [UInt8], to socket: Int32, deadline: NIODeadline) throws(StreamSocketError) {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { data in
                Glibc.send(socket, data.baseAddress.map { $0 + written }, bytes.count - written, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if result >= 0 {
                written += result
                continue
            }
            let code = errno
            switch code {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                try wait(for: Int16(POLLOUT), on: socket, until: deadline, doing: "send of \(bytes.count) bytes (\(written) went)")
            case EPIPE, ECONNRESET:
                throw StreamSocketError(.closed, "send: the other end closed the connection after \(written) of \(bytes.count) bytes (\(errorText(code)))")
            default:
                throw StreamSocketError.system("send", errno: code)
            }
        }
    }

    // MARK: TCP

    /// A TCP connection to `host`:`port`, close-on-exec, returned in non-blocking mode (as NIO's
    /// `withConnectedSocket` takes it; ``receive(exactly:on:deadline:)`` and ``write(_:to:deadline:)`` poll).
    ///
    /// `host` is a numeric IPv4 or IPv6 address (with a `%zone` for a link-local one) or a name, resolved with
    /// `getaddrinfo`; each address is tried in turn with a non-blocking `connect`, all of them within `timeout`. A host
    /// that does not resolve is ``StreamSocketError/Code/notFound``; `timeout` passing ``StreamSocketError/Code/timedOut``;
    /// a refused connection (nothing listening) ``StreamSocketError/Code/system`` naming `ECONNREFUSED`.
    package static func connect(host: String, port: Int, timeout: TimeAmount) throws(StreamSocketError) -> Int32 {
        guard (1...65535).contains(port) else {
            throw StreamSocketError(.system, "connect to \(host):\(port): \(port) is not a TCP port")
        }
        let deadline = NIODeadline.now() + timeout
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            let reason = resolved == EAI_SYSTEM ? errorText(errno) : String(cString: gai_strerror(resolved))
            throw StreamSocketError(.notFound, "getaddrinfo(\(host)): \(reason)")
        }
        defer { freeaddrinfo(list) }
        var lastError = StreamSocketError(.notFound, "getaddrinfo(\(host)) gave no address")
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let address = next {
            next = address.pointee.ai_next
            do {
                return try connect(address.pointee, to: "\(host):\(port)", until: deadline)
            } catch {
                lastError = error
                if error.code == .timedOut { break }
            }
        }
        throw lastError
    }

    /// One address of ``connect(host:port:timeout:)``.
    private static func connect(_ address: addrinfo, to name: String, until deadline: NIODeadline) throws(StreamSocketError) -> Int32 {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let descriptor = socket(address.ai_family, type, address.ai_protocol)
        guard descriptor >= 0 else { throw StreamSocketError.system("socket for \(name)", errno: errno) }
        do throws(StreamSocketError) {
            if Glibc.connect(descriptor, address.ai_addr, address.ai_addrlen) != 0 {
                let code = errno
                guard code == EINPROGRESS || code == EINTR else { throw StreamSocketError.system("connect to \(name)", errno: code) }
                try wait(for: Int16(POLLOUT), on: descriptor, until: deadline, doing: "connect to \(name)")
                var failure: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 else {
                    throw StreamSocketError.system("getsockopt(SO_ERROR) after connect to \(name)", errno: errno)
                }
                guard failure == 0 else { throw StreamSocketError.system("connect to \(name)", errno: failure) }
            }
            return descriptor
        } catch {
            close(descriptor)
            throw error
        }
    }

    /// Sets the options a direct stream's TCP socket gets on both devices: `TCP_NODELAY`; `SO_KEEPALIVE` with
    /// ``keepaliveIdleSeconds``, ``keepaliveIntervalSeconds`` and ``keepaliveCount``. So a quiet connection to a peer
    /// that vanished (its device asleep, off the network) ends within seconds on both sides, as the relayed streams'
    /// keepalive does (docs/PROTOCOL.md §8); one with bytes in flight is the library's liveness check.
    package static func configureDirectStream(_ fd: Int32) throws(StreamSocketError) {
        try setOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE")
        try setOption(fd, Int32(IPPROTO_TCP), tcpNoDelayOption, 1, "TCP_NODELAY")
        try setOption(fd, Int32(IPPROTO_TCP), tcpKeepIdleOption, keepaliveIdleSeconds, "TCP_KEEPIDLE")
        try setOption(fd, Int32(IPPROTO_TCP), tcpKeepIntervalOption, keepaliveIntervalSeconds, "TCP_KEEPINTVL")
        try setOption(fd, Int32(IPPROTO_TCP), tcpKeepCountOption, keepaliveCount, "TCP_KEEPCNT")
    }

    private static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32, _ label: String) throws(StreamSocketError) {
        var value = value
        guard setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw StreamSocketError.system("setsockopt(\(label))", errno: errno)
        }
    }

    // MARK: Waiting

    /// Waits until `socket` is ready for `events` (or has an error or hang-up, which the next call reports), or throws
    /// ``StreamSocketError/Code/timedOut`` once `deadline` has passed.
    private static func wait(for events: Int16, on socket: Int32, until deadline: NIODeadline, doing what: String) throws(StreamSocketError) {
        while true {
            let left = deadline - .now()
            guard left.nanoseconds > 0 else { throw StreamSocketError(.timedOut, "\(what): no answer before the deadline") }
            // Rounded up, so a wait never ends just short of the deadline and spins.
            let milliseconds = min((left.nanoseconds + 999_999) / 1_000_000, Int64(Int32.max))
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(milliseconds))
            if ready > 0 { return }
            let code = errno
            if ready < 0, code != EINTR { throw StreamSocketError.system("poll (\(what))", errno: code) }
        }
    }

    static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text)
    }
}

/// The layout of `struct cmsghdr` control messages (`CMSG_SPACE`, `CMSG_LEN`, `CMSG_NXTHDR`: macros Swift does not
/// import), aligned to `size_t` as glibc's are.
private enum ControlMessage {
    static func align(_ length: Int) -> Int {
        let word = MemoryLayout<Int>.size
        return (length + word - 1) & ~(word - 1)
    }

    static var headerSpace: Int { align(MemoryLayout<cmsghdr>.size) }

    /// Calls `body` with a `msghdr` of one `iovec` over `data` and the control buffer `control`: what `sendmsg` and
    /// `recvmsg` take, valid only inside `body`.
    static func withMessage(
        _ data: UnsafeMutableRawBufferPointer, control: UnsafeMutableRawBufferPointer, _ body: (inout msghdr) -> Int
    ) -> Int {
        var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
        return withUnsafeMutablePointer(to: &vector) { vectorPointer in
            var message = msghdr()
            message.msg_iov = vectorPointer
            message.msg_iovlen = 1
            message.msg_control = control.baseAddress
            message.msg_controllen = control.count
            return body(&message)
        }
    }

    /// `CMSG_LEN`: the header and `length` bytes of data.
    static func length(_ length: Int) -> Int { headerSpace + length }

    /// `CMSG_SPACE`: what a message with `length` bytes of data takes in the buffer.
    static func space(_ length: Int) -> Int { headerSpace + align(length) }

    /// The descriptors of the `SCM_RIGHTS` messages in the first `length` bytes of `buffer`.
    static func descriptors(in buffer: UnsafeRawBufferPointer, length: Int) -> [Int32] {
        var found: [Int32] = []
        var offset = 0
        let end = min(length, buffer.count)
        while offset + MemoryLayout<cmsghdr>.size <= end {
            let header = buffer.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self)
            let messageLength = Int(header.cmsg_len)
            guard messageLength >= headerSpace, offset + messageLength <= end else { break }
            if header.cmsg_level == SOL_SOCKET, header.cmsg_type == Int32(SCM_RIGHTS) {
                let count = (messageLength - headerSpace) / MemoryLayout<Int32>.size
                for index in 0..<count {
                    found.append(buffer.loadUnaligned(fromByteOffset: offset + headerSpace + index * MemoryLayout<Int32>.size, as: Int32.self))
                }
            }
            offset += align(messageLength)
        }
        return found
    }
}

/// Why a ``StreamSocket`` call failed: the system call and `errno`'s text in ``message``.
///
/// Compare ``code`` (stable) rather than ``message`` (for people).
package struct StreamSocketError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    package enum Code: Sendable, Hashable {
        /// The other end closed (or reset) the connection before the call was done.
        case closed
        /// The deadline or timeout passed first.
        case timedOut
        /// A system call failed; ``StreamSocketError/message`` names it and its `errno`.
        case system
        /// What was asked for does not exist: no socket with that cookie, a channel without a socket, a host that
        /// does not resolve.
        case notFound
    }

    /// What kind of failure this is.
    package let code: Code
    /// What was wrong, for a person: the system call and `errno`'s text.
    package let message: String

    /// An error with a code and a message.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A failed system call: `call` and `strerror(code)`.
    static func system(_ call: String, errno code: Int32) -> StreamSocketError {
        StreamSocketError(.system, "\(call): \(StreamSocket.errorText(code)) (errno \(code))")
    }

    package var description: String { "\(message) [\(code)]" }
}
#endif
