import BatonProtocol
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import BatonAgent

/// The advert sockets' troubles (issue 25 item 1), decided by small machines with the time passed in: failed sends
/// are said once and their end once; a socket that closes is reopened after 1 s, 2, 4, 8, 16, then every 30 s.
@Suite("Advert socket health: failed sends logged once, reopening with backoff (issue 25)")
struct AdvertSocketHealthTests {
    typealias Failures = AdvertSocketHealth.SendFailures
    typealias Backoff = AdvertSocketHealth.ReopenBackoff

    static func failure(
        _ destination: String,
        _ error: String = "Operation not permitted (errno: 1)"
    ) -> Failures.Failure {
        Failures.Failure(destination: destination, error: error)
    }

    @Test("a link down for 3 s fails every round: one warning naming what failed, then one line when all works again")
    func outageIsOneWarningAndOneRecovery() {
        var failures = Failures()
        #expect(failures.round(failures: [], at: 0) == nil, "all well: nothing to say")
        let round = [Self.failure("239.77.11.1"), Self.failure("ff02::77:11:1%eth0")]
        #expect(failures.round(failures: round, at: 1_000) == .started(round))
        for second in 2...4 {
            #expect(
                failures.round(failures: round, at: UInt64(second) * 1_000) == nil,
                "the same failures again: silence"
            )
        }
        #expect(failures.round(failures: [], at: 4_500) == .recovered(failedSends: 8, milliseconds: 3_500))
        #expect(failures.round(failures: [], at: 5_500) == nil, "said once")
        #expect(failures == Failures(), "and forgotten: the next outage is warned about again")
        #expect(
            failures.round(failures: [Self.failure("239.77.11.1")], at: 9_000)
                == .started([Self.failure("239.77.11.1")])
        )
    }

    @Test(
        "a peer that never answers is warned about once; another destination failing later is a new warning; nothing spins"
    )
    func newDestinationsWarnAgain() {
        var failures = Failures()
        let peer = Self.failure("10.9.9.9:47810", "Network is unreachable (errno: 101)")
        #expect(failures.round(failures: [peer], at: 0) == .started([peer]))
        for second in 1...100 { #expect(failures.round(failures: [peer], at: UInt64(second) * 1_000) == nil) }
        let group = Self.failure("239.77.11.1")
        #expect(failures.round(failures: [peer, group], at: 101_000) == .started([group]), "only what is new")
        #expect(failures.round(failures: [peer, group], at: 102_000) == nil)
    }

    @Test(
        "a socket that closes: one warning, then tries after 1, 2, 4, 8, 16 and 30 s, 30 s at most, and one line when back"
    )
    func reopenBacksOff() {
        var backoff = Backoff()
        #expect(backoff.closed(at: 10_000) == 11_000, "first try 1 s later; the caller warns")
        #expect(backoff.closed(at: 10_500) == nil, "a second report of the same closing: no second warning or timer")
        var now: UInt64 = 11_000
        var waits: [UInt64] = []
        for _ in 0..<8 {
            let next = backoff.reopenFailed(at: now)
            waits.append((next ?? now) - now)
            now = next ?? now
        }
        #expect(waits == [2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000, 30_000])
        #expect(backoff.reopened(at: now) == now - 10_000, "back: how long it was closed, said once")
        #expect(backoff.reopened(at: now + 1) == nil)
        #expect(backoff.state == .open)
        #expect(backoff.closed(at: now + 5_000) == now + 6_000, "closing again starts from 1 s again")
    }

    @Test("the delay never overflows and never spins: at least 1 s, at most 30 s, after any number of attempts")
    func delayBounds() {
        for attempts in [0, 1, 4, 5, 6, 15, 16, 63, 64, 1_000, Int.max] {
            let delay = Backoff.delay(afterAttempts: attempts)
            #expect(delay >= Backoff.firstDelay && delay <= Backoff.longestDelay, "\(attempts): \(delay)")
        }
        var open = Backoff()
        #expect(open.reopenFailed(at: 0) == nil, "an open socket has nothing to retry")
    }

    /// Waits until `condition` holds, at most `seconds`; returns whether it did.
    static func eventually(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() >= end { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    @Test(
        "a real advert socket that closes by itself is reopened on its port after about 1 s, said once each way, and receives again"
    )
    func socketReopensAfterClosing() async throws {
        let lines = NIOLockedValueBox<[String]>([])
        let received = NIOLockedValueBox(0)
        // When the agent said so, not when this test next ran: with every test of the package running at once the
        // test's own wake-ups can be late by seconds.
        let reopenedAt = NIOLockedValueBox<Date?>(nil)
        let socket = try await AdvertSocket.open(
            host: "127.0.0.1",
            port: 0,
            discoveryPort: nil,
            log: { line in
                if line.contains("open again") { reopenedAt.withLockedValue { $0 = Date() } }
                lines.withLockedValue { $0.append("info: " + line) }
            },
            warn: { line in lines.withLockedValue { $0.append("warning: " + line) } }
        ) { _, _ in received.withLockedValue { $0 += 1 } }
        defer { socket.close() }
        let address = try #require(socket.slots.withLockedValue { $0[.unicast]?.address })
        let advert = Data(repeating: 7, count: AdvertKeys.datagramLength)
        socket.send(advert, to: [address])
        #expect(await Self.eventually(5) { received.withLockedValue { $0 } == 1 }, "it hears itself")

        // As NIO does on an error it deems fatal: the channel closes under the agent.
        let channel = try #require(socket.slots.withLockedValue { $0[.unicast]?.open?.channel })
        let closedAt = Date()
        try await channel.close()
        #expect(await Self.eventually(30) { reopenedAt.withLockedValue { $0 } != nil })
        let took = try #require(reopenedAt.withLockedValue { $0 }).timeIntervalSince(closedAt)
        #expect(took >= 0.9 && took < 3, "reopened after the first backoff, 1 s: \(took) s")
        let said = lines.withLockedValue { $0 }
        #expect(
            said.filter { $0.hasPrefix("warning: adverts: the unicast socket closed by itself") }.count == 1,
            "\(said)"
        )
        #expect(said.filter { $0.contains("is open again") }.count == 1, "\(said)")
        #expect(socket.slots.withLockedValue { $0[.unicast]?.address } == address, "on the same port")
        socket.send(advert, to: [address])
        #expect(await Self.eventually(30) { received.withLockedValue { $0 } == 2 }, "and it hears again")
        #expect(lines.withLockedValue { $0 }.count == 2, "nothing else said: \(lines.withLockedValue { $0 })")
    }

    @Test("a send the kernel refuses is said once, closes nothing, and the socket goes on sending")
    func failedSendClosesNothing() async throws {
        let lines = NIOLockedValueBox<[String]>([])
        let received = NIOLockedValueBox(0)
        let socket = try await AdvertSocket.open(
            host: "127.0.0.1",
            port: 0,
            discoveryPort: nil,
            log: { line in lines.withLockedValue { $0.append("info: " + line) } },
            warn: { line in lines.withLockedValue { $0.append("warning: " + line) } }
        ) { _, _ in received.withLockedValue { $0 += 1 } }
        defer { socket.close() }
        let address = try #require(socket.slots.withLockedValue { $0[.unicast]?.address })
        // An IPv6 destination from an IPv4 socket: the kernel refuses it at once (EAFNOSUPPORT or EINVAL), as a
        // firewall's EPERM would be refused; with NIO's own writes this closed the channel.
        let unreachable = try SocketAddress(ipAddress: "::1", port: 9)
        let advert = Data(repeating: 7, count: AdvertKeys.datagramLength)
        for _ in 0..<3 { socket.send(advert, to: [unreachable]) }
        // send fails synchronously; a close it set off would be a task on the socket's loop: after one turn of that
        // loop it has run (an ordering, not a wait of some milliseconds).
        let channel = try #require(socket.slots.withLockedValue { $0[.unicast]?.open?.channel })
        try await channel.eventLoop.submit {}.get()
        #expect(socket.slots.withLockedValue { $0[.unicast]?.open?.channel.isActive } == true, "the socket is open")
        socket.send(advert, to: [address])
        #expect(await Self.eventually(5) { received.withLockedValue { $0 } == 1 })
        let said = lines.withLockedValue { $0 }
        #expect(said.filter { $0.hasPrefix("warning: adverts: cannot send to [::1]:9") }.count == 1, "\(said)")
        #expect(said.filter { $0.hasPrefix("info: adverts: sending again (3 sends failed") }.count == 1, "\(said)")
        #expect(!said.contains { $0.contains("closed") }, "\(said)")
    }
}
