@testable import Baton
import BatonClient
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 30: a direct stream's peer that vanished mid-write is told from one that only stopped reading (F3's
/// backpressure), by the kernel's TCP_INFO.
@Suite("Issue 30: DirectStreamLiveness")
struct DirectStreamLivenessTests {
    @Test("TCPInfo is laid out as the kernel's struct tcp_info up to tcpi_last_ack_recv")
    func layout() {
        #expect(MemoryLayout<DirectStreamLiveness.TCPInfo>.size == 60)
        #expect(MemoryLayout<DirectStreamLiveness.TCPInfo>.offset(of: \.unacked) == 24)
        #expect(MemoryLayout<DirectStreamLiveness.TCPInfo>.offset(of: \.lastAckReceived) == 56)
    }

    @Test("dead: bytes unacknowledged for 5 s with retransmissions or window probes unanswered; alive otherwise")
    func decision() {
        var info = DirectStreamLiveness.TCPInfo(retransmits: 4, unacked: 10, lastAckReceived: 6_000)
        #expect(DirectStreamLiveness.isDead(info))
        info.retransmits = 0
        info.probes = 3
        #expect(DirectStreamLiveness.isDead(info), "window probes unanswered: the reader's device is gone")
        info.probes = 0
        #expect(!DirectStreamLiveness.isDead(info), "probes answered (the kernel resets the count): a reader that only paused")
        info.retransmits = 4
        info.lastAckReceived = 2_000
        #expect(!DirectStreamLiveness.isDead(info), "an acknowledgement 2 s ago")
        info.lastAckReceived = 60_000
        info.unacked = 0
        #expect(!DirectStreamLiveness.isDead(info), "nothing in flight: quiet, keepalive's case")
    }

    @Test("issue 30, F3: a live peer that does not read for 7 s is not dead, though the writer's window is shut all along")
    func pausedReaderIsAlive() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = bind(listener, $0, length); _ = getsockname(listener, $0, &length) }
        }
        listen(listener, 1)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let writer = try StreamSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(2))
        defer { close(writer) }
        let reader = accept(listener, nil, nil)
        defer { close(reader) }
        try StreamSocket.configureDirectStream(writer)
        let chunk = [UInt8](repeating: 7, count: 65_536)
        let start = Date()
        var info = DirectStreamLiveness.TCPInfo()
        while Date().timeIntervalSince(start) < 7 {
            _ = chunk.withUnsafeBytes { send(writer, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
            var size = socklen_t(MemoryLayout<DirectStreamLiveness.TCPInfo>.size)
            #expect(getsockopt(writer, Int32(IPPROTO_TCP), StreamSocket.tcpInfoOption, &info, &size) == 0)
            #expect(!DirectStreamLiveness.isDead(info), "\(info)")
            usleep(250_000)
        }
        var error: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(writer, SOL_SOCKET, SO_ERROR, &error, &size)
        #expect(error == 0, "the connection is still up: \(String(cString: strerror(error)))")
    }
}
