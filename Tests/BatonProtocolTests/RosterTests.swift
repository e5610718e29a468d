import BatonProtocol
import Foundation
import Testing

struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func device(_ name: String, at seconds: TimeInterval = 0, by: DeviceID? = nil) -> Roster.Member {
    Roster.Member(certificate: Data("certificate of \(name)".utf8), name: name, addedBy: by, addedAt: Date(timeIntervalSince1970: seconds))
}

func key(_ seed: UInt8) -> [UInt8] { [UInt8](repeating: seed, count: 32) }

@Suite("Device ids")
struct DeviceIDTests {
    @Test("an id is the SHA-256 of the certificate, written in base32 groups, parsed back in any case")
    func writtenForm() throws {
        let id = DeviceID(certificateDER: Data("cert".utf8))
        let text = id.description
        #expect(text.count == 52 + 12)
        #expect(text.split(separator: "-").count == 13)
        #expect(try DeviceID(parsing: text) == id)
        #expect(try DeviceID(parsing: text.lowercased().replacingOccurrences(of: "-", with: "")) == id)
        #expect(id.matches(prefix: id.short.lowercased()))
        #expect(!id.matches(prefix: ""))
        for bad in ["", "hello", String(repeating: "A", count: 51), String(repeating: "1", count: 52)] {
            #expect(throws: BatonProtocolError.self) { try DeviceID(parsing: bad) }
        }
    }
}

@Suite("Roster (grow-only members, revocation wins)")
struct RosterTests {
    @Test("adding and revoking; a revoked device is not reinstated by adding it again")
    func revocationWins() {
        let a = device("laptop")
        var roster = Roster(founder: a, key: key(1))
        let c = device("old-phone", at: 10, by: a.id)
        roster.add(c)
        #expect(roster.isActive(c.id))
        let revoked = roster.revoke(c.id, by: a.id, at: Date(timeIntervalSince1970: 20), newKey: key(2))
        #expect(revoked)
        #expect(!roster.isActive(c.id))
        #expect(roster.accountKey.epoch == 2 && roster.accountKey.key == key(2))
        #expect(roster.accountKey.excludes == [c.id])
        roster.add(c)
        #expect(!roster.isActive(c.id))
        let again = roster.revoke(c.id, by: a.id, at: Date(), newKey: key(3))
        #expect(!again, "revoking twice changes nothing")
        #expect(roster.activeMembers.map(\.name) == ["laptop"])
    }

    @Test("a merge that learns of a revocation the key predates rotates the key")
    func mergeRotates() {
        let a = device("a")
        let b = device("b", at: 1, by: a.id)
        let c = device("c", at: 2, by: a.id)
        var onA = Roster(founder: a, key: key(1))
        onA.add(b)
        onA.add(c)
        var onB = onA
        // C was given the epoch-1 key. A removes C; B has not heard.
        onA.revoke(c.id, by: a.id, at: Date(timeIntervalSince1970: 3), newKey: key(9))
        let result = onB.merge(onA, newKey: key(7))
        #expect(result.changed && !result.rotatedKey, "A's key already excludes C")
        #expect(onB == onA)
        // B revoked C on its own, rotating concurrently: both land on one key that excludes C.
        var onB2 = Roster(founder: a, key: key(1))
        onB2.add(b)
        onB2.add(c)
        onB2.revoke(c.id, by: b.id, at: Date(timeIntervalSince1970: 4), newKey: key(5))
        var left = onA
        var right = onB2
        left.merge(onB2, newKey: key(11))
        right.merge(onA, newKey: key(12))
        #expect(left == right)
        #expect(left.accountKey.excludes.contains(c.id))
        #expect(left.revocations[c.id]?.revokedBy == a.id, "the earlier revocation is kept")
    }

    @Test("three replicas with random operations converge, whatever order they meet in", arguments: 0..<25)
    func convergence(seed: UInt64) {
        var random = SeededRandom(state: seed)
        let founder = device("founder")
        var replicas = [Roster](repeating: Roster(founder: founder, key: key(0)), count: 3)
        var devices = [founder]
        for step in 0..<30 {
            let replica = Int(random.next() % 3)
            switch random.next() % 3 {
            case 0, 1:
                let member = device("d\(step)", at: Double(step), by: devices[Int(random.next() % UInt64(devices.count))].id)
                devices.append(member)
                replicas[replica].add(member)
            default:
                let target = devices[Int(random.next() % UInt64(devices.count))]
                replicas[replica].revoke(target.id, by: founder.id, at: Date(timeIntervalSince1970: Double(step)), newKey: key(UInt8(step)))
            }
            if random.next() % 4 == 0 {
                let other = Int(random.next() % 3)
                replicas[replica].merge(replicas[other], newKey: key(UInt8(100 + step)))
            }
        }
        // Gossip until stable: every pair meets, in a seed-dependent order, twice over.
        var pairs = [(0, 1), (1, 2), (2, 0), (1, 0), (2, 1), (0, 2)]
        pairs.shuffle(using: &random)
        for _ in 0..<2 {
            for (x, y) in pairs {
                replicas[x].merge(replicas[y], newKey: key(200))
                replicas[y].merge(replicas[x], newKey: key(201))
            }
        }
        #expect(replicas[0] == replicas[1] && replicas[1] == replicas[2])
        #expect(Set(replicas[0].revocations.keys).isSubset(of: replicas[0].accountKey.excludes))
    }

    @Test("encoding round-trips; ids come from certificates; garbage is invalidRoster")
    func encoding() throws {
        let a = device("laptop")
        var roster = Roster(founder: a, key: key(1))
        roster.add(device("desktop", at: 5, by: a.id))
        roster.revoke(device("gone").id, by: a.id, at: Date(timeIntervalSince1970: 9), newKey: key(2))
        let decoded = try Roster(decoding: try roster.encoded())
        #expect(decoded == roster)
        #expect(try roster.encoded() == decoded.encoded(), "deterministic bytes")
        for garbage in [Data(), Data("bplist00".utf8), Data("<plist><dict/></plist>".utf8)] {
            let error = #expect(throws: BatonProtocolError.self) { try Roster(decoding: garbage) }
            #expect(error?.code == .invalidRoster)
        }
    }

    @Test("a device is named by its name or an unambiguous id prefix")
    func naming() {
        let a = device("laptop")
        var roster = Roster(founder: a, key: key(1))
        roster.add(device("desktop", by: a.id))
        #expect(roster.member(named: "desktop")?.name == "desktop")
        #expect(roster.member(named: a.id.short)?.name == "laptop")
        #expect(roster.member(named: "nothing") == nil)
    }
}

@Suite("Pairing codes and invite tokens")
struct PairingTests {
    @Test("both ends compute the same six digits; a relay's certificate changes them")
    func codes() {
        let alice = Data("alice certificate".utf8)
        let bob = Data("bob certificate".utf8)
        let mallory = Data("mallory certificate".utf8)
        let (n1, n2) = ([UInt8](repeating: 1, count: 16), [UInt8](repeating: 2, count: 16))
        let onAlice = PairingCode.compute(localCertificate: alice, localNonce: n1, peerCertificate: bob, peerNonce: n2)
        let onBob = PairingCode.compute(localCertificate: bob, localNonce: n2, peerCertificate: alice, peerNonce: n1)
        #expect(onAlice == onBob)
        #expect(onAlice.count == 6 && onAlice.allSatisfy(\.isNumber))
        // Mallory relays: Alice sees Mallory's certificate, Bob sees Mallory's too; nonces relayed unchanged.
        let aliceSide = PairingCode.compute(localCertificate: alice, localNonce: n1, peerCertificate: mallory, peerNonce: n2)
        let bobSide = PairingCode.compute(localCertificate: bob, localNonce: n2, peerCertificate: mallory, peerNonce: n1)
        #expect(aliceSide != bobSide)
    }

    @Test("invite tokens round-trip and refuse damage")
    func invites() throws {
        let token = InviteToken(
            host: "192.0.2.10", port: 47_810, inviter: DeviceID(certificateDER: Data("inviter".utf8)),
            secret: [UInt8](repeating: 7, count: 16), expires: Date(timeIntervalSince1970: 1_900_000_000)
        )
        let text = token.description
        #expect(text.hasPrefix("baton1-"))
        #expect(try InviteToken(parsing: text) == token)
        #expect(try InviteToken(parsing: "  " + text.uppercased().replacingOccurrences(of: "BATON1-", with: "baton1-") + "\n") == token)
        for bad in ["", "baton1-", "hello", String(text.dropLast(3)), text + "aa", text.replacingOccurrences(of: "baton1-", with: "baton2-")] {
            let error = #expect(throws: BatonProtocolError.self, "\(bad)") { try InviteToken(parsing: bad) }
            #expect(error?.code == .invalidInvite)
        }
    }
}

@Suite("Account test vectors (docs/PROTOCOL.md)")
struct AccountVectorTests {
    @Test("the pairing code and invite token match the documented vectors, computed independently in Python")
    func vectors() throws {
        let code = PairingCode.compute(
            localCertificate: Data("alice certificate".utf8), localNonce: [UInt8](repeating: 1, count: 16),
            peerCertificate: Data("bob certificate".utf8), peerNonce: [UInt8](repeating: 2, count: 16)
        )
        #expect(code == "590948")
        #expect(DeviceID(certificateDER: Data("alice certificate".utf8)).description.replacingOccurrences(of: "-", with: "")
            == "QRTHARDT6XJNKSSCOEGR5PK5EWMB3L7T44A3XUSU77FIVALKKGSA")
        let token = InviteToken(
            host: "192.0.2.10", port: 47_810, inviter: DeviceID(certificateDER: Data("inviter".utf8)),
            secret: [UInt8](repeating: 7, count: 16), expires: Date(timeIntervalSince1970: 1_900_000_000)
        )
        #expect(
            token.description
                == "baton1-aebex3je6bnth2m47g4kyi52sbai47jmagxw4t7kg2ozbo3knscf2byha4dqobyha4dqobyha4dqobyaaaaaa4j7wmalvqqkge4telrqfyzc4mjq"
        )
    }
}
