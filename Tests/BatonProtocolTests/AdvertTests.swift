import BatonProtocol
import Foundation
import Testing

@Suite("Adverts: sealed datagrams, replay window, rate limits, the nearby table")
struct AdvertTests {
    static let account = AccountKey(epoch: 3, key: [UInt8](repeating: 0x42, count: 32), excludes: [])
    static let keys = AdvertKeys(account)
    static let laptop = DeviceID(certificateDER: Data("laptop".utf8))
    static let desktop = DeviceID(certificateDER: Data("desktop".utf8))
    static let third = DeviceID(certificateDER: Data("third".utf8))
    static let now: UInt64 = 1_800_000_000_000

    static func advert(sequence: UInt64 = 7, flags: Advert.Flags = [.isCurrent, .hasWebpageURL], at time: UInt64 = now) -> Advert {
        Advert(
            device: laptop, sequence: sequence, typeHash: keys.typeHash(team: "RAZE", activityType: "com.razeware.shopsnap.view"),
            flags: flags, sessionPort: 47_810, timestamp: time
        )
    }

    @Test("C2: an advert seals and opens under the account key, and nothing else opens it")
    func sealing() throws {
        let datagram = try Self.keys.seal(Self.advert())
        #expect(datagram.count == AdvertKeys.datagramLength)
        #expect(Self.keys.open(datagram)?.advert == Self.advert())
        let otherAccount = AdvertKeys(AccountKey(epoch: 3, key: [UInt8](repeating: 0x43, count: 32), excludes: []))
        #expect(otherAccount.open(datagram) == nil)
        let rotated = AdvertKeys(AccountKey(epoch: 4, key: [UInt8](repeating: 0x44, count: 32), excludes: []))
        #expect(rotated.open(datagram) == nil, "a removed device's old key opens nothing sealed after rotation")
        for index in [0, 5, 40, datagram.count - 1] {
            var tampered = datagram
            tampered[index] ^= 0x01
            #expect(Self.keys.open(tampered) == nil, "byte \(index)")
        }
        #expect(Self.keys.open(datagram.dropLast()) == nil)
        #expect(Self.keys.open(Data()) == nil)
    }

    @Test("no cleartext links one advert to the next: only the version byte repeats")
    func unlinkable() throws {
        let first = try Self.keys.seal(Self.advert())
        let second = try Self.keys.seal(Self.advert())
        #expect(first[0] == second[0] && first[0] == AdvertKeys.version)
        let sameBytes = zip(first.dropFirst(), second.dropFirst()).filter { $0 == $1 }.count
        #expect(sameBytes < 10, "about 1 in 256 bytes agree by chance; \(sameBytes) did")
        // Neither the device id, the sequence, nor the port appears in clear.
        for secret in [Array(Self.laptop.bytes.prefix(6)), [0, 0, 0, 0, 0, 0, 0, 7], [0xBA, 0xC2]] {
            #expect(first.firstRange(of: secret) == nil)
        }
    }

    @Test("the type hash depends on the key: an outsider cannot precompute it")
    func typeHash() {
        let other = AdvertKeys(AccountKey(epoch: 1, key: [UInt8](repeating: 1, count: 32), excludes: []))
        #expect(Self.keys.typeHash(team: "T", activityType: "a") != other.typeHash(team: "T", activityType: "a"))
        #expect(Self.keys.typeHash(team: "T", activityType: "a") != Self.keys.typeHash(team: "T", activityType: "b"))
        #expect(Self.keys.typeHash(webHost: "Example.com") == Self.keys.typeHash(webHost: "example.com"))
        #expect(Self.keys.typeHash(team: "T", activityType: "a").count == AdvertKeys.typeHashLength)
    }

    @Test("receiver: accepts fresh adverts; refuses replays, stale ones, its own, non-members and strangers")
    func receiver() throws {
        var receiver = AdvertReceiver(me: Self.desktop, keys: Self.keys)
        let members: (DeviceID) -> Bool = { $0 == Self.laptop }
        let datagram = try Self.keys.seal(Self.advert())
        #expect(receiver.receive(datagram, now: Self.now + 5, isMember: members) == .accepted(Self.advert()))
        #expect(receiver.receive(datagram, now: Self.now + 6, isMember: members) == .replayed)
        #expect(receiver.receive(datagram, now: Self.now + 40_000, isMember: members) == .stale(Self.advert(), offBy: -40_000))
        let old = try Self.keys.seal(Self.advert(at: Self.now - 31_000))
        #expect(receiver.receive(old, now: Self.now, isMember: members) == .stale(Self.advert(at: Self.now - 31_000), offBy: -31_000))
        var mine = Self.advert()
        mine.device = Self.desktop
        #expect(receiver.receive(try Self.keys.seal(mine), now: Self.now, isMember: members) == .own)
        #expect(receiver.receive(try Self.keys.seal(Self.advert()), now: Self.now, isMember: { _ in false }) == .notMember(Self.laptop))
        let stranger = AdvertKeys(AccountKey(epoch: 1, key: [UInt8](repeating: 9, count: 32), excludes: []))
        #expect(receiver.receive(try stranger.seal(Self.advert()), now: Self.now, isMember: members) == .notForUs)
    }

    @Test("issue 25 item 9: a member whose clock is 10 minutes off is heard once its session told its clock; its replays are still refused")
    func clockSkew() throws {
        let members: (DeviceID) -> Bool = { $0 == Self.laptop }
        for skew in [Int64(600_000), -600_000] {
            var receiver = AdvertReceiver(me: Self.desktop, keys: Self.keys)
            let theirNow = UInt64(Int64(Self.now) + skew)
            let fresh = try Self.keys.seal(Self.advert(at: theirNow))
            #expect(receiver.receive(fresh, now: Self.now, isMember: members) == .stale(Self.advert(at: theirNow), offBy: skew), "before: refused, saying by how much")
            receiver.learnClock(of: Self.laptop, theirs: theirNow + 40, now: Self.now + 40)
            #expect(receiver.clockOffsets[Self.laptop] == skew)
            #expect(receiver.receive(fresh, now: Self.now + 50, isMember: members) == .accepted(Self.advert(at: theirNow)))
            #expect(receiver.receive(fresh, now: Self.now + 60, isMember: members) == .replayed)
            // A copy replayed later than the window is stale by the sender's own clock.
            #expect(receiver.receive(fresh, now: Self.now + 31_000, isMember: members) == .stale(Self.advert(at: theirNow), offBy: skew - 31_000))
            // Its nonce is remembered for the whole window by this device's clock, then forgotten.
            let later = try Self.keys.seal(Self.advert(at: theirNow + 20_000))
            #expect(receiver.receive(later, now: Self.now + 20_000, isMember: members) == .accepted(Self.advert(at: theirNow + 20_000)))
            #expect(receiver.receive(later, now: Self.now + 49_000, isMember: members) == .replayed)
            // Another member's clock is its own: the laptop's offset does not widen anyone else's window.
            receiver.forgetClock(of: Self.laptop)
            #expect(receiver.receive(try Self.keys.seal(Self.advert(at: theirNow + 21_000)), now: Self.now + 21_000, isMember: members) == .stale(Self.advert(at: theirNow + 21_000), offBy: skew))
        }
    }

    @Test("receiver: garbage from a member's own address never suppresses its real adverts (issue 10 item 5)")
    func floodFromMemberAddress() throws {
        var receiver = AdvertReceiver(me: Self.desktop, keys: Self.keys)
        var generator = SystemRandomNumberGenerator()
        var accepted = 0
        // 10 s of 200 random 88-byte datagrams a second from the laptop's address, its real advert once a second.
        for second in 0..<10 {
            for index in 0..<200 {
                let noise = Data((0..<AdvertKeys.datagramLength).map { _ in UInt8.random(in: 0...255, using: &generator) })
                let now = Self.now + UInt64(second * 1_000 + index * 5)
                #expect(receiver.receive(noise, now: now, isMember: { _ in true }) == .notForUs)
            }
            let now = Self.now + UInt64(second * 1_000 + 999)
            let real = try Self.keys.seal(Self.advert(at: now))
            if receiver.receive(real, now: now, isMember: { _ in true }) == .accepted(Self.advert(at: now)) { accepted += 1 }
        }
        #expect(accepted == 10, "every real advert accepted despite 2,000 forged datagrams from its address")
    }

    @Test("receiver: a member sending valid adverts beyond its allowance is limited; others are unaffected")
    func rateLimit() throws {
        var receiver = AdvertReceiver(me: Self.desktop, keys: Self.keys)
        var limited = 0
        for index in 0..<1_000 {
            let advert = Self.advert(at: Self.now + UInt64(index))
            if receiver.receive(try Self.keys.seal(advert), now: Self.now + UInt64(index), isMember: { _ in true }) == .rateLimited {
                limited += 1
            }
        }
        #expect(limited > 800, "\(limited) of 1,000 in one second dropped")
        var other = Self.advert(at: Self.now + 1_000)
        other.device = Self.third
        #expect(receiver.receive(try Self.keys.seal(other), now: Self.now + 1_000, isMember: { _ in true }) == .accepted(other))
        // The member recovers at the sustained rate.
        let later = Self.advert(at: Self.now + 3_000)
        #expect(receiver.receive(try Self.keys.seal(later), now: Self.now + 3_000, isMember: { _ in true }) == .accepted(later))
    }

    @Test("receiver: after a key rotation only the new key's adverts are accepted")
    func rotation() throws {
        var receiver = AdvertReceiver(me: Self.desktop, keys: Self.keys)
        let rotated = AdvertKeys(AccountKey(epoch: 4, key: [UInt8](repeating: 0x99, count: 32), excludes: []))
        receiver.update(keys: rotated)
        #expect(receiver.receive(try Self.keys.seal(Self.advert()), now: Self.now, isMember: { _ in true }) == .notForUs)
        #expect(receiver.receive(try rotated.seal(Self.advert()), now: Self.now, isMember: { _ in true }) == .accepted(Self.advert()))
    }

    @Test("C3, A9: one activity per device, refreshed by re-adverts, replaced by a newer one, gone on goodbye or expiry")
    func nearby() {
        var table = NearbyTable(timeToLiveMilliseconds: 3_000)
        #expect(table.apply(Self.advert(sequence: 1), from: "10.0.0.2", now: 0) == .added)
        #expect(table.apply(Self.advert(sequence: 1), from: "10.0.0.2", now: 1_000) == .refreshed)
        #expect(table.apply(Self.advert(sequence: 2), from: "10.0.0.2", now: 1_500) == .replaced)
        #expect(table.apply(Self.advert(sequence: 1), from: "10.0.0.2", now: 1_600) == .ignored, "an older activity never returns")
        #expect(table.entries.count == 1 && table.entries[Self.laptop]?.advert.sequence == 2)
        #expect(table.apply(Self.advert(sequence: 2, flags: []), from: "10.0.0.2", now: 1_700) == .removed)
        #expect(table.entries.isEmpty)
        #expect(table.apply(Self.advert(sequence: 3), from: "10.0.0.2", now: 2_000) == .added)
        #expect(table.expire(now: 4_000).isEmpty)
        #expect(table.expire(now: 5_001).count == 1)
        #expect(table.entries.isEmpty)
    }

    @Test("C3: a new revision of the same activity (a new title) is revised, not replaced; the revision seals and opens in the flags' top bits")
    func revision() throws {
        var table = NearbyTable(timeToLiveMilliseconds: 3_000)
        let flags: Advert.Flags = [.isCurrent, .hasWebpageURL]
        #expect(table.apply(Self.advert(sequence: 1, flags: flags), from: "10.0.0.2", now: 0) == .added)
        #expect(table.apply(Self.advert(sequence: 1, flags: flags.with(revision: 1)), from: "10.0.0.2", now: 500) == .revised)
        #expect(table.apply(Self.advert(sequence: 1, flags: flags.with(revision: 1)), from: "10.0.0.2", now: 1_000) == .refreshed)
        #expect(table.entries[Self.laptop]?.firstSeen == 0, "the same activity: its age goes on")
        #expect(flags.with(revision: 17).revision == 1 && flags.with(revision: 15).contains([.isCurrent, .hasWebpageURL]))
        let sealed = try Self.keys.seal(Self.advert(flags: flags.with(revision: 9)))
        var receiver = AdvertReceiver(me: Self.desktop, keys: Self.keys)
        guard case .accepted(let opened) = receiver.receive(sealed, now: Self.now, isMember: { _ in true }) else {
            Issue.record("not accepted")
            return
        }
        #expect(opened.flags.revision == 9 && opened.flags.contains(.isCurrent))
    }
}
