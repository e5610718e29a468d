#if canImport(Glibc)
import BatonClient
import Dispatch
import Glibc
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing

/// Issue 30: the raw socket calls direct streams stand on, on real sockets: a connected TCP socket passed over a Unix
/// socket and used by the receiver, exact reads, deadlines, a NIO channel's socket taken over by its cookie, the
/// keepalive options, a refused connect.
@Suite("Direct streams' sockets: passing a TCP socket between processes, taking one over from NIO (issue 30)")
struct StreamSocketTests {
    /// A Unix stream socket pair, close-on-exec.
    static func socketPair() throws -> (Int32, Int32) {
        var pair: [Int32] = [-1, -1]
        let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair)
        try #require(made == 0, "socketpair: errno \(errno)")
        return (pair[0], pair[1])
    }

    /// A TCP socket listening on 127.0.0.1 at a port the kernel picked, and the port.
    static func listener() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(descriptor >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && listen(descriptor, 4) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        try #require(bound, "bind/listen: errno \(errno)")
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A connected pair of TCP sockets on loopback: the connecting end (non-blocking, from StreamSocket.connect) and
    /// the accepted one (blocking, and not close-on-exec: a test's own).
    static func tcpPair() throws -> (connected: Int32, accepted: Int32) {
        let (listening, port) = try listener()
        defer { close(listening) }
        let connected = try StreamSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
        let accepted = accept(listening, nil, nil)
        try #require(accepted >= 0)
        return (connected, accepted)
    }

    static func soon(_ milliseconds: Int64 = 5000) -> NIODeadline { .now() + .milliseconds(milliseconds) }

    static func isCloseOnExec(_ descriptor: Int32) -> Bool { fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0 }

    static func code(_ body: () throws(StreamSocketError) -> Void) -> StreamSocketError.Code? {
        do {
            try body()
            return nil
        } catch {
            return error.code
        }
    }

    @Test("a TCP socket passed over a Unix socket: the receiver's copy is close-on-exec and carries bytes both ways")
    func passDescriptor() throws {
        let (connected, accepted) = try Self.tcpPair()
        defer { close(accepted) }
        let (sender, receiver) = try Self.socketPair()
        defer {
            close(sender)
            close(receiver)
        }
        try StreamSocket.send(Array("take".utf8), passing: connected, on: sender)
        close(connected)  // the sender's copy goes; the socket lives on in the receiver's

        let (bytes, descriptors) = try StreamSocket.receive(exactly: 4, on: receiver, deadline: Self.soon())
        #expect(bytes == Array("take".utf8))
        try #require(descriptors.count == 1)
        let passed = descriptors[0]
        defer { close(passed) }
        #expect(Self.isCloseOnExec(passed))
        #expect(StreamSocket.cookie(ofDescriptor: passed) != nil)

        try StreamSocket.write(Array("hello".utf8), to: passed, deadline: Self.soon())
        #expect(try StreamSocket.receive(exactly: 5, on: accepted, deadline: Self.soon()).bytes == Array("hello".utf8))
        try StreamSocket.write(Array("world!".utf8), to: accepted, deadline: Self.soon())
        let back = try StreamSocket.receive(exactly: 6, on: passed, deadline: Self.soon())
        #expect(back.bytes == Array("world!".utf8) && back.descriptors.isEmpty)
    }

    @Test("receive(exactly:) gathers bytes that come in pieces, a descriptor among them, and never reads past its count")
    func exactPieces() throws {
        let (writer, reader) = try Self.socketPair()
        defer {
            close(writer)
            close(reader)
        }
        let (extra, other) = try Self.socketPair()
        defer { close(other) }
        try StreamSocket.write(Array("ab".utf8), to: writer, deadline: Self.soon())
        // The rest comes later, from another thread, the descriptor with the middle piece.
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
            defer { done.signal() }
            try? StreamSocket.send(Array("c".utf8), passing: extra, on: writer)
            usleep(50_000)
            try? StreamSocket.write(Array("defgh".utf8), to: writer, deadline: .now() + .seconds(5))
        }
        let first = try StreamSocket.receive(exactly: 5, on: reader, deadline: Self.soon())
        done.wait()
        close(extra)
        #expect(first.bytes == Array("abcde".utf8))
        #expect(first.descriptors.count == 1)
        for descriptor in first.descriptors {
            #expect(Self.isCloseOnExec(descriptor))
            close(descriptor)
        }
        // What is past the count stays in the socket for the next read.
        var peek = [UInt8](repeating: 0, count: 16)
        #expect(recv(reader, &peek, peek.count, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) == 3)
        #expect(try StreamSocket.receive(exactly: 3, on: reader, deadline: Self.soon()).bytes == Array("fgh".utf8))
        #expect(try StreamSocket.receive(exactly: 0, on: reader, deadline: Self.soon()).bytes.isEmpty)
    }

    @Test("the deadline: timedOut once it passes with bytes missing, not before, not long after")
    func timeout() throws {
        let (writer, reader) = try Self.socketPair()
        defer {
            close(writer)
            close(reader)
        }
        try StreamSocket.write([1, 2], to: writer, deadline: Self.soon())
        let start = NIODeadline.now()
        #expect(Self.code { () throws(StreamSocketError) in _ = try StreamSocket.receive(exactly: 4, on: reader, deadline: .now() + .milliseconds(150)) } == .timedOut)
        let waited = NIODeadline.now() - start
        #expect(waited >= .milliseconds(150) && waited < .seconds(2), "waited \(waited)")
        // A deadline already passed gives up without waiting.
        #expect(Self.code { () throws(StreamSocketError) in _ = try StreamSocket.receive(exactly: 4, on: reader, deadline: .now()) } == .timedOut)
    }

    @Test("closed: end of file before the count, a descriptor that came with the bytes closed; a write to a closed peer")
    func closed() throws {
        let (writer, reader) = try Self.socketPair()
        defer { close(reader) }
        let (extra, other) = try Self.socketPair()
        defer { close(other) }
        try StreamSocket.send([1, 2], passing: extra, on: writer)
        close(extra)  // the only copy left is the one on its way
        close(writer)
        var failure: StreamSocketError?
        do {
            _ = try StreamSocket.receive(exactly: 4, on: reader, deadline: Self.soon())
        } catch {
            failure = error
        }
        #expect(failure?.code == .closed)
        #expect(failure?.description.contains("closed") == true)
        // The failed receive closed the descriptor it had taken: no copy of `extra` is left, so its peer reads end of file.
        var byte: UInt8 = 0
        #expect(recv(other, &byte, 1, Int32(MSG_DONTWAIT)) == 0)
        #expect(Self.code { () throws(StreamSocketError) in try StreamSocket.write([1], to: reader, deadline: Self.soon()) } == .closed)
    }

    @Test("a NIO channel's socket taken over by its cookie: the duplicate outlives the channel and carries bytes both ways")
    func takeOverFromNIO() async throws {
        let accepted = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Channel.self)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { channel in
                accepted.succeed(channel)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let port = try #require(server.localAddress?.port)
        let plain = try StreamSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
        defer { close(plain) }
        let child = try await accepted.futureResult.get()

        let cookie = try await StreamSocket.cookie(of: child).get()
        let taken = try #require(StreamSocket.duplicate(cookie: cookie))
        defer { close(taken) }
        #expect(StreamSocket.cookie(ofDescriptor: taken) == cookie)
        #expect(Self.isCloseOnExec(taken))
        #expect(StreamSocket.cookie(ofDescriptor: plain) != cookie, "each end of a connection is its own socket")
        #expect(StreamSocket.duplicate(cookie: .max) == nil, "no socket has that cookie")

        try await child.close()
        #expect(Self.code { () throws(StreamSocketError) in _ = try StreamSocket.receive(exactly: 1, on: plain, deadline: .now() + .milliseconds(100)) } == .timedOut,
                "closing the channel did not end the connection")
        try StreamSocket.write(Array("from the app".utf8), to: taken, deadline: Self.soon())
        #expect(try StreamSocket.receive(exactly: 12, on: plain, deadline: Self.soon()).bytes == Array("from the app".utf8))
        try StreamSocket.write(Array("and back".utf8), to: plain, deadline: Self.soon())
        #expect(try StreamSocket.receive(exactly: 8, on: taken, deadline: Self.soon()).bytes == Array("and back".utf8))
    }

    @Test("a channel without a socket has no cookie: notFound")
    func noSocket() async throws {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        await #expect(throws: StreamSocketError(.notFound, "the connection has no socket to take over (SO_COOKIE): it is not a TCP or Unix socket channel")) {
            try await StreamSocket.cookie(of: channel).get()
        }
        #expect(StreamSocket.cookie(ofDescriptor: -1) == nil)
    }

    @Test("configureDirectStream: TCP_NODELAY, keepalive after 2 s every 1 s twice, no TCP_USER_TIMEOUT (it would drop a live slow reader), read back")
    func directStreamOptions() throws {
        let (connected, accepted) = try Self.tcpPair()
        defer {
            close(connected)
            close(accepted)
        }
        try StreamSocket.configureDirectStream(connected)
        func option(_ level: Int32, _ name: Int32) -> Int32 {
            var value: Int32 = -1
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(connected, level, name, &value, &length) == 0 ? value : -1
        }
        let tcp = Int32(IPPROTO_TCP)
        // The numbers are <netinet/tcp.h>'s: TCP_NODELAY 1, TCP_KEEPIDLE 4, TCP_KEEPINTVL 5, TCP_KEEPCNT 6, TCP_USER_TIMEOUT 18.
        #expect(option(tcp, 1) == 1)
        #expect(option(SOL_SOCKET, SO_KEEPALIVE) == 1)
        #expect(option(tcp, 4) == StreamSocket.keepaliveIdleSeconds && StreamSocket.keepaliveIdleSeconds == 2)
        #expect(option(tcp, 5) == StreamSocket.keepaliveIntervalSeconds && StreamSocket.keepaliveIntervalSeconds == 1)
        #expect(option(tcp, 6) == StreamSocket.keepaliveCount && StreamSocket.keepaliveCount == 2)
        #expect(option(tcp, 18) == 0, "TCP_USER_TIMEOUT stays unset: on this kernel it drops a peer that only stopped reading")
        #expect(Self.code { () throws(StreamSocketError) in try StreamSocket.configureDirectStream(-1) } == .system)
    }

    @Test("connect to a port nobody listens on fails at once, naming connect and ECONNREFUSED's text")
    func refused() throws {
        let (listening, port) = try Self.listener()
        close(listening)  // the port is now closed
        let start = NIODeadline.now()
        var failure: StreamSocketError?
        do {
            let descriptor = try StreamSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
            close(descriptor)
        } catch {
            failure = error
        }
        #expect(NIODeadline.now() - start < .seconds(1))
        #expect(failure?.code == .system)
        #expect(failure?.message.contains("connect to 127.0.0.1:\(port)") == true, "\(String(describing: failure))")
        #expect(failure?.message.contains("Connection refused") == true, "\(String(describing: failure))")
        #expect(Self.code { () throws(StreamSocketError) in _ = try StreamSocket.connect(host: "127.0.0.1", port: 0, timeout: .seconds(1)) } == .system)
    }

    @Test("connect returns a non-blocking, close-on-exec socket; a name resolves, each of its addresses tried")
    func connectedSocket() throws {
        let (connected, accepted) = try Self.tcpPair()
        defer {
            close(connected)
            close(accepted)
        }
        #expect(fcntl(connected, F_GETFL) & O_NONBLOCK != 0)
        #expect(Self.isCloseOnExec(connected))
        let (listening, port) = try Self.listener()
        defer { close(listening) }
        // localhost may be ::1 first, where nothing listens: the IPv4 address is tried next.
        let named = try StreamSocket.connect(host: "localhost", port: port, timeout: .seconds(5))
        close(named)
    }
}
#endif
