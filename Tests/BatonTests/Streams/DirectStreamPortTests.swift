@testable import Baton
@testable import BatonAgent
import BatonClient
import BatonProtocol
import BatonTestSupport
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 30: the agent's session port takes a direct stream's connection (a ``StreamPreamble``) beside TLS sessions,
/// told apart by the first byte. What reaches it from a stranger must cost nothing and stop nothing: each hostile
/// connection here is closed, and a direct stream opened after all of them still carries its bytes.
@Suite("Issue 30: the session port beside direct streams' connections, against hostile ones", .serialized)
@MainActor
struct DirectStreamPortTests {
    /// What a raw connection to the port heard back: whether the agent closed it within `wait` seconds, and how soon.
    struct Poke {
        var closed: Bool
        var seconds: Double
    }

    /// Connects to 127.0.0.1:`port`, writes `bytes`, and waits up to `wait` seconds for the agent to close.
    static func poke(port: Int, _ bytes: [UInt8], wait: Double) throws -> Poke {
        let socket = try StreamSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(2))
        defer { close(socket) }
        if !bytes.isEmpty { try StreamSocket.write(bytes, to: socket, deadline: NIODeadline.now() + .seconds(2)) }
        let start = Date()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date().timeIntervalSince(start) < wait {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let left = wait - Date().timeIntervalSince(start)
            guard poll(&poller, 1, Int32(max(1, left * 1000))) > 0 else { continue }
            let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            // A TLS alert may come first; the end of the connection (or a reset) is what counts.
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
                return Poke(closed: true, seconds: Date().timeIntervalSince(start))
            }
        }
        return Poke(closed: false, seconds: wait)
    }

    static let token = (0..<16).map { UInt8($0) }

    @Test(
        "issue 30: hostile first bytes on the session port are closed at once: a wrong magic, an unknown token, bytes past the preamble, an HTTP request"
    )
    func hostileBytesClosed() async throws {
        let world = try await TwoDevices(transport: .network)
        let port = world.devices.agents[0].port
        let preamble = try StreamPreamble(token: Self.token).bytes
        let cases: [(String, [UInt8])] = [
            ("a wrong magic", Array("BTNX".utf8) + [1] + Self.token),
            ("a version from the future", Array("BTNS".utf8) + [9] + Self.token),
            ("a token no stream waits for", preamble),
            ("bytes past the preamble", preamble + Array("hello".utf8)),
            ("an HTTP request (read as TLS)", Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
        ]
        for (name, bytes) in cases {
            let poke = try Self.poke(port: port, bytes, wait: 3)
            #expect(poke.closed && poke.seconds < 2, "\(name): closed \(poke.closed) after \(poke.seconds) s")
        }
        await world.stop()
    }

    @Test("issue 30: a connection that starts a preamble and then says nothing is closed at the handshake deadline")
    func silentPreambleClosed() async throws {
        let world = try await TwoDevices(transport: .network)
        let poke = try Self.poke(port: world.devices.agents[0].port, Array("BTN".utf8), wait: 9)
        #expect(poke.closed, "still open after 9 s")
        #expect(poke.seconds > 3 && poke.seconds < 8, "closed after \(poke.seconds) s; the deadline is \(SessionPortSniffer.deadline)")
        await world.stop()
    }

    @Test("issue 30: after hostile connections to both ports, a direct stream carries a mebibyte each way")
    func streamAfterHostileConnections() async throws {
        let server = StreamServer(replySize: 1 << 20)
        let (world, origin, continued) = try await ContinuationStreamsTests.continued(streams: true, delegate: server, route: .direct)
        for agent in world.devices.agents {
            _ = try Self.poke(port: agent.port, Array("BTNS".utf8) + [1] + Self.token, wait: 1)
            _ = try Self.poke(port: agent.port, [0x16, 0x03, 0x01, 0xff, 0xff], wait: 0.2)
        }
        let streams = try await continued.continuationStreams()
        #expect(streams.path == .direct)
        let request = patterned(1 << 20, seed: 5)
        try await streams.output.write(Data(request))
        try await streams.output.finish()
        var reply = Tally()
        for try await chunk in streams.input { reply.add(chunk) }
        #expect(reply == Tally(patterned(1 << 20, seed: UInt8(truncatingIfNeeded: 1 << 20))))
        #expect(server.requests == [Tally(request)], "\(server.failures)")
        _ = origin
        await world.stop()
    }
}
