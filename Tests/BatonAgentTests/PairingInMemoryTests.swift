@testable import BatonAgent
import BatonCore
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Issue 26 item 3: pairing in memory (``MemoryAccountSession``), as ``LocalDevices`` pairs devices in memory before
/// their agents start (InMemoryDevices): the same ``AccountFlows`` as over TLS, with no socket.
@Suite("Issue 26 item 3: pairing over an account session in memory", .timeLimit(.minutes(1)))
struct PairingInMemoryTests {
    /// Pairs `initiator` with `responder` over a session in memory, each answering `answer`; both codes, and each
    /// side's outcome.
    static func pair(_ initiator: TestDevice, _ responder: TestDevice, answer: Bool = true) async -> (
        codes: [String], initiator: Result<AccountFlows.PairingResult, Error>, responder: Result<AccountFlows.PairingResult, Error>
    ) {
        let codes = NIOLockedValueBox<[String]>([])
        // A clock nobody advances: what is tested is the exchange, and a loaded machine's parallel suite can stall this
        // process longer than the 10 s a receive waits on the system's clock (CI saw "sent nothing for 10 s").
        let time = VirtualClock()
        let line = MemoryAccountSession.line(
            from: (initiator.identity, "192.0.2.1"), to: (responder.identity, "192.0.2.2"), clock: time.clock
        )
        let near = line.dialler()
        async let served = Result {
            try await AccountFlows.pair(initiator: false, over: line.listener(), identity: responder.identity, store: responder.store) { code in
                codes.withLockedValue { $0.append(code) }
                return answer
            }
        }
        let asked = await Result {
            try await AccountFlows.pair(initiator: true, over: near, identity: initiator.identity, store: initiator.store) { code in
                codes.withLockedValue { $0.append(code) }
                return true
            }
        }
        await near.close()
        let answered = await served
        return (codes.withLockedValue { $0 }, asked, answered)
    }

    @Test("B1 in memory: both sides show the same code from the certificates each presented, and each roster lists the other")
    func pairs() async throws {
        let laptop = try TestDevice("laptop")
        let desktop = try TestDevice("desktop")
        defer {
            laptop.remove()
            desktop.remove()
        }
        let (codes, asked, answered) = await Self.pair(laptop, desktop)
        #expect(codes.count == 2 && codes[0] == codes[1], "\(codes)")
        let result = try asked.get()
        #expect(result.code == codes[0])
        #expect(result.peer.id == desktop.identity.id)
        #expect(try answered.get().peer.id == laptop.identity.id)
        #expect(Set(try laptop.roster.activeMembers.map(\.id)) == [laptop.identity.id, desktop.identity.id])
        #expect(Set(try desktop.roster.activeMembers.map(\.id)) == [laptop.identity.id, desktop.identity.id])
    }

    @Test("B1 in memory: a side that declines ends the pairing on both, and neither roster changes")
    func declined() async throws {
        let laptop = try TestDevice("laptop")
        let desktop = try TestDevice("desktop")
        defer {
            laptop.remove()
            desktop.remove()
        }
        let (_, asked, answered) = await Self.pair(laptop, desktop, answer: false)
        #expect((asked.failure as? BatonAgentError)?.code == .pairingDeclined)
        #expect((answered.failure as? BatonAgentError)?.code == .pairingDeclined)
        #expect(try laptop.roster.activeMembers.map(\.id) == [laptop.identity.id])
        #expect(try desktop.roster.activeMembers.map(\.id) == [desktop.identity.id])
    }
}
