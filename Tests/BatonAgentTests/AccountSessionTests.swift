import BatonAgent
import BatonCore
import Foundation
import NIOConcurrencyHelpers
import Testing

/// A device for tests: a state folder with an identity.
struct TestDevice {
    let store: AccountStore
    let identity: DeviceIdentity

    init(_ name: String) throws {
        store = AccountStore(folder: FileManager.default.temporaryDirectory.appendingPathComponent("baton-\(name)-\(UUID().uuidString)"))
        (identity, _) = try store.initialize(name: name)
    }

    func remove() { try? FileManager.default.removeItem(at: store.folder) }

    var roster: Roster { get throws { try store.roster() } }

    /// Active members' ids, read at each handshake.
    var members: PeerPolicy { .activeMembers(of: store) }
}

@Suite("Account sessions over TLS 1.3 on loopback", .serialized)
struct AccountSessionTests {
    /// Pairs `initiator` with `responder` through a real listener; returns both codes.
    static func pair(_ initiator: TestDevice, _ responder: TestDevice, answer: Bool = true) async throws -> (String, String) {
        let listener = try await AccountTransport.listen(host: "127.0.0.1", port: 0, identity: responder.identity, policy: .anyDevice)
        let codes = NIOLockedValueBox<[String]>([])
        async let served: Void = listener.serveUntilDone(timeout: 10) { session in
            _ = try await AccountFlows.pair(initiator: false, over: session, identity: responder.identity, store: responder.store) { code in
                codes.withLockedValue { $0.append(code) }
                return answer
            }
            return true
        }
        let result = try await AccountTransport.withSession(host: "127.0.0.1", port: listener.port, identity: initiator.identity, policy: .anyDevice) { session in
            try await AccountFlows.pair(initiator: true, over: session, identity: initiator.identity, store: initiator.store) { code in
                codes.withLockedValue { $0.append(code) }
                return true
            }
        }
        try await served
        let seen = codes.withLockedValue { $0 }
        return (result.code, seen.first { _ in true } ?? "")
    }

    @Test("numeric comparison: both sides show the same code, and both rosters then hold both devices")
    func pairing() async throws {
        let a = try TestDevice("a")
        let b = try TestDevice("b")
        defer { a.remove(); b.remove() }
        let (code, _) = try await Self.pair(b, a)
        #expect(code.count == 6)
        #expect(try a.roster == b.roster)
        #expect(try Set(a.roster.activeMembers.map(\.name)) == ["a", "b"])
    }

    @Test("a side that says no stops the pairing on both, and nothing is added")
    func declined() async throws {
        let a = try TestDevice("a")
        let b = try TestDevice("b")
        defer { a.remove(); b.remove() }
        await #expect(throws: BatonAgentError.self) { _ = try await Self.pair(b, a, answer: false) }
        #expect(try a.roster.activeMembers.count == 1)
        #expect(try b.roster.activeMembers.count == 1)
    }

    @Test("a relay in the middle makes the two codes differ, so the people comparing them decline")
    func manInTheMiddle() async throws {
        let a = try TestDevice("a")
        let b = try TestDevice("b")
        let mallory = try TestDevice("mallory")
        defer { a.remove(); b.remove(); mallory.remove() }
        // A listens; Mallory listens for B and relays every message to A over her own session, with her certificate.
        let listenerA = try await AccountTransport.listen(host: "127.0.0.1", port: 0, identity: a.identity, policy: .anyDevice)
        let relay = try await AccountTransport.listen(host: "127.0.0.1", port: 0, identity: mallory.identity, policy: .anyDevice)
        let shown = NIOLockedValueBox<[String: String]>([:])
        // Each person says yes only if their code matches the other screen, which is what comparing codes is.
        func matches(_ side: String, _ code: String) async -> Bool {
            shown.withLockedValue { $0[side] = code }
            for _ in 0..<100 {
                if let other = shown.withLockedValue({ $0[side == "a" ? "b" : "a"] }) { return other == code }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return false
        }
        // Generous waits: on a loaded two-core CI machine a 2 s relay wait ran out before A showed its code.
        async let aSide: Void = listenerA.serveUntilDone(timeout: 20) { session in
            _ = try? await AccountFlows.pair(initiator: false, over: session, identity: a.identity, store: a.store) { await matches("a", $0) }
            return true
        }
        async let relaySide: Void = relay.serveUntilDone(timeout: 20) { fromB in
            try await AccountTransport.withSession(host: "127.0.0.1", port: listenerA.port, identity: mallory.identity, policy: .anyDevice) { toA in
                // hello and confirm; a roster follows only if both people said yes.
                for _ in 0..<3 {
                    guard let fromBMessage = try? await fromB.receive(timeout: 10) else { break }
                    try await toA.send(fromBMessage)
                    guard let fromAMessage = try? await toA.receive(timeout: 10) else { break }
                    try await fromB.send(fromAMessage)
                }
            }
            return true
        }
        let outcome = await Result {
            try await AccountTransport.withSession(host: "127.0.0.1", port: relay.port, identity: b.identity, policy: .anyDevice) { session in
                try await AccountFlows.pair(initiator: true, over: session, identity: b.identity, store: b.store) { await matches("b", $0) }
            }
        }
        try? await aSide
        try? await relaySide
        let codes = shown.withLockedValue { $0 }
        #expect(codes["a"] != nil && codes["b"] != nil && codes["a"] != codes["b"])
        #expect(throws: BatonAgentError.self) { try outcome.get() }
        #expect(try a.roster.activeMembers.count == 1, "A added nobody")
        #expect(try b.roster.activeMembers.count == 1, "B added nobody")
    }

    @Test("an invite admits one device, pinned to the inviter, and works once")
    func invite() async throws {
        let b = try TestDevice("b")
        let c = try TestDevice("c")
        let d = try TestDevice("d")
        defer { b.remove(); c.remove(); d.remove() }
        let listener = try await AccountTransport.listen(host: "127.0.0.1", port: 0, identity: b.identity, policy: .anyDevice)
        let secret = try b.store.createInvite(expires: Date().addingTimeInterval(600))
        let token = InviteToken(host: "127.0.0.1", port: listener.port, inviter: b.identity.id, secret: secret, expires: Date().addingTimeInterval(600))
        let admitted = NIOLockedValueBox(0)
        let serving = Task {
            try await listener.serve { session in
                if (try? await AccountFlows.admit(over: session, identity: b.identity, store: b.store)) != nil {
                    admitted.withLockedValue { $0 += 1 }
                }
            }
        }
        let roster = try await AccountTransport.withSession(host: token.host, port: token.port, identity: c.identity, policy: .only(token.inviter)) { session in
            try await AccountFlows.join(over: session, token: token, identity: c.identity, store: c.store)
        }
        #expect(Set(roster.activeMembers.map(\.name)) == ["b", "c"])
        #expect(try b.roster == c.roster)
        // The same token again, from another device: refused.
        await #expect(throws: BatonAgentError.self) {
            try await AccountTransport.withSession(host: token.host, port: token.port, identity: d.identity, policy: .only(token.inviter)) { session in
                _ = try await AccountFlows.join(over: session, token: token, identity: d.identity, store: d.store)
            }
        }
        // A token naming another inviter: the TLS layer refuses B's certificate before the secret is sent.
        let forged = InviteToken(host: token.host, port: token.port, inviter: d.identity.id, secret: secret, expires: token.expires)
        let pinned = await Result {
            try await AccountTransport.withSession(host: forged.host, port: forged.port, identity: d.identity, policy: .only(forged.inviter)) { session in
                _ = try await AccountFlows.join(over: session, token: forged, identity: d.identity, store: d.store)
            }
        }
        #expect(throws: BatonAgentError.self) { try pinned.get() }
        #expect(admitted.withLockedValue { $0 } == 1)
        #expect(try d.roster.activeMembers.count == 1)
        await listener.close()
        _ = await serving.result
    }

    @Test("members sync; a removed device can no longer open a session")
    func syncAndRemoval() async throws {
        let a = try TestDevice("a")
        let b = try TestDevice("b")
        defer { a.remove(); b.remove() }
        _ = try await Self.pair(b, a)
        let listener = try await AccountTransport.listen(host: "127.0.0.1", port: 0, identity: a.identity, policy: a.members)
        let serving = Task {
            try await listener.serve { session in
                _ = try? await AccountFlows.sync(over: session, initiator: false, identity: a.identity, store: a.store)
            }
        }
        func syncFromB() async throws -> Roster {
            try await AccountTransport.withSession(host: "127.0.0.1", port: listener.port, identity: b.identity, policy: b.members) { session in
                try await AccountFlows.sync(over: session, initiator: true, identity: b.identity, store: b.store)
            }
        }
        #expect(try await syncFromB().activeMembers.count == 2)
        _ = try a.store.updateRoster { $0.revoke(b.identity.id, by: a.identity.id, at: Date(), newKey: AccountStore.randomKey()) }
        let refused = await Result { try await syncFromB() }
        let error = try #require(refused.failure as? BatonAgentError)
        #expect(error.code == .peerRefused, "\(error.message)")
        #expect(try b.roster.accountKey != a.roster.accountKey, "B never receives the rotated key")
        await listener.close()
        _ = await serving.result
    }
}

extension Result {
    init(catching body: () async throws -> Success) async where Failure == any Error {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }

    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
