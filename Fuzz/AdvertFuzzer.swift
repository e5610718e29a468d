// libFuzzer entry point for the advert path (SEMANTICS C2, C3): the datagrams anyone on the LAN can send to the advert
// port, opened and checked by AdvertReceiver (the open under the account key, the decode of the sealed plaintext, own,
// the replay window, the nonce cache, membership, the per-device rate) and applied to the NearbyTable, as the agent's
// `receiveAdvert` does.
//
// A stranger cannot forge the seal, so random bytes alone would only ever test the first `open`. The fuzzer holds the
// account key too: each input is a run of events, each either a raw datagram (must be `notForUs`), a plaintext the
// fuzzer seals itself under the account key or another one with a nonce of the input's choosing (so replays and
// arbitrary plaintext reach the decoder and the checks behind it), or time passing (the table expires entries).
//
// Built by scripts/fuzz.sh adverts with SwiftPM (the seal needs swift-crypto), as the package's `advert-fuzzer` target,
// which exists only while BATON_FUZZ_ADVERTS is set (Package.swift). A trap, a sanitizer report, an outcome its
// datagram does not justify, an advert that does not read back as sealed, a replay accepted, or a table that keeps
// what it should not stops the fuzzer with the input saved.
import BatonProtocol
import Crypto
import Foundation

/// The account the receiving device belongs to, and one it does not.
let fuzzAccount = AccountKey(epoch: 3, key: [UInt8](repeating: 0x42, count: 32), excludes: [])
let fuzzStranger = AccountKey(epoch: 3, key: [UInt8](repeating: 0x43, count: 32), excludes: [])
let fuzzKeys = AdvertKeys(fuzzAccount)
/// The receiving device, and the member devices the fuzzer's plaintexts pick from (the last is not a member).
let fuzzMe = DeviceID(certificateDER: Data("desktop".utf8))
let fuzzDevices = [fuzzMe] + ["laptop", "phone", "revoked"].map { DeviceID(certificateDER: Data($0.utf8)) }
let fuzzStart: UInt64 = 1_800_000_000_000

/// The sealing key as AdvertKeys derives it (its own is internal): checked against AdvertKeys once, at the first input.
func fuzzSealingKey(_ account: AccountKey) -> SymmetricKey {
    HKDF<SHA256>.deriveKey(
        inputKeyMaterial: SymmetricKey(data: account.key), info: Data("baton advert seal v1".utf8), outputByteCount: 32
    )
}
let fuzzSealing = [fuzzSealingKey(fuzzAccount), fuzzSealingKey(fuzzStranger)]

/// Seals `plaintext` as an advert datagram with a chosen nonce: version, nonce, ciphertext, tag.
func fuzzSeal(_ plaintext: [UInt8], nonce: [UInt8], key: SymmetricKey, version: UInt8 = AdvertKeys.version) -> Data {
    let header = Data([version])
    guard let nonce = try? AES.GCM.Nonce(data: nonce),
        let box = try? AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: header),
        let combined = box.combined
    else { preconditionFailure("cannot seal") }
    return header + combined
}

let fuzzDerivationChecked: Bool = {
    let advert = Advert(
        device: fuzzDevices[1], sequence: 7, typeHash: [1, 2, 3, 4, 5, 6, 7, 8], flags: [.isCurrent], sessionPort: 47_810,
        timestamp: fuzzStart
    )
    guard let datagram = try? fuzzKeys.seal(advert),
        let box = try? AES.GCM.SealedBox(combined: datagram.dropFirst()),
        (try? AES.GCM.open(box, using: fuzzSealing[0], authenticating: datagram.prefix(1))) != nil
    else { preconditionFailure("the fuzzer's sealing key is not AdvertKeys' (its derivation changed)") }
    return true
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func advertFuzzerTestOneInput(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    precondition(fuzzDerivationChecked)
    var run = AdvertRun(Array(UnsafeBufferPointer(start: start, count: count))[...])
    run.run()
    return 0
}

struct AdvertRun {
    var input: ArraySlice<UInt8>
    var receiver = AdvertReceiver(me: fuzzMe, keys: fuzzKeys)
    var table = NearbyTable()
    var now = fuzzStart
    /// Nonces of adverts that passed the replay window, with when they stop counting: one of them again is a replay.
    var seen: [[UInt8]: UInt64] = [:]

    init(_ input: ArraySlice<UInt8>) {
        self.input = input
    }

    mutating func take(_ count: Int) -> [UInt8] {
        let bytes = Array(input.prefix(count))
        input = input.dropFirst(count)
        return bytes + [UInt8](repeating: 0, count: count - bytes.count)
    }

    mutating func number(_ count: Int) -> UInt64 {
        take(count).reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func isMember(_ device: DeviceID) -> Bool { device != fuzzDevices[3] }

    mutating func run() {
        while let op = input.popFirst() {
            switch op % 4 {
            case 0:
                // Anything: a stranger's datagram, of any length, never opens.
                let datagram = Data(take(Int(number(1))))
                let outcome = receiver.receive(datagram, now: now, isMember: Self.isMember)
                precondition(outcome == .notForUs, "a datagram nobody sealed gave \(outcome)")
            case 1, 2:
                sealed(op)
            default:
                now += number(2) * 10
                for entry in table.expire(now: now) {
                    precondition(now > entry.lastSeen + table.timeToLiveMilliseconds, "an entry expired early")
                }
                for entry in table.entries.values {
                    precondition(now <= entry.lastSeen + table.timeToLiveMilliseconds, "an entry outlived its time")
                }
            }
        }
    }

    /// A plaintext sealed by the fuzzer: `op`'s bits choose a device from the pool or the raw bytes, a timestamp near
    /// now or the raw one, the account's key or a stranger's, and a wrong version byte.
    mutating func sealed(_ op: UInt8) {
        let nonce = take(12)
        var plaintext = take(59)
        if op & 0x10 == 0 { plaintext.replaceSubrange(0..<32, with: fuzzDevices[Int(plaintext[0] % 4)].bytes) }
        if op & 0x20 == 0 {
            // Within about ±41 s of now: both sides of the 30 s window.
            let offset = Int64(Int16(bitPattern: UInt16(plaintext[51]) << 8 | UInt16(plaintext[52]))) * 5 / 4
            let timestamp = offset < 0 ? now - UInt64(-offset) : now + UInt64(offset)
            plaintext.replaceSubrange(51..<59, with: (0..<8).reversed().map { UInt8(truncatingIfNeeded: timestamp >> ($0 * 8)) })
        }
        let foreign = op & 0x40 != 0
        let badVersion = op & 0x80 != 0 && op & 0x08 != 0
        let datagram = fuzzSeal(plaintext, nonce: nonce, key: fuzzSealing[foreign ? 1 : 0], version: badVersion ? 2 : AdvertKeys.version)
        let outcome = receiver.receive(datagram, now: now, isMember: Self.isMember)
        if foreign || badVersion {
            precondition(outcome == .notForUs, "a datagram not sealed under the account key gave \(outcome)")
            return
        }
        // What the plaintext says, read here independently of Advert.
        func field(_ range: Range<Int>) -> UInt64 { plaintext[range].reduce(0) { $0 << 8 | UInt64($1) } }
        let device = DeviceID(bytes: Array(plaintext[0..<32]))
        let timestamp = field(51..<59)
        let skew = timestamp > now ? timestamp - now : now - timestamp
        switch outcome {
        case .notForUs:
            preconditionFailure("an advert sealed under the account key did not open")
        case .own:
            precondition(device == fuzzMe, "another device's advert taken for our own")
        case .stale:
            precondition(device != fuzzMe && skew > 30_000, "an advert \(skew) ms off called stale")
        case .replayed:
            // Seen before; the cache may keep a nonce a little past its window (it forgets in arrival order), which
            // refuses only what no honest sender sends: a nonce again.
            precondition(skew <= 30_000 && seen[nonce] != nil, "a fresh nonce called a replay")
        case .notMember(let sender):
            precondition(sender == device && !Self.isMember(sender), "a member refused as not one")
            remember(nonce, timestamp)
        case .rateLimited:
            precondition(device.map(Self.isMember) ?? false, "a non-member rate-limited")
            remember(nonce, timestamp)
        case .accepted(let advert):
            precondition(device == advert.device && device != fuzzMe && Self.isMember(advert.device), "accepted from \(advert.device)")
            precondition(skew <= 30_000, "accepted an advert \(skew) ms off")
            precondition(seen[nonce].map { $0 < now } ?? true, "accepted a replay")
            precondition(
                advert.sequence == field(32..<40) && advert.typeHash == Array(plaintext[40..<48])
                    && advert.flags.rawValue == plaintext[48] && UInt64(advert.sessionPort) == field(49..<51)
                    && advert.timestamp == timestamp,
                "the advert does not say what was sealed: \(advert)"
            )
            // What the receiver read seals and opens back as itself.
            guard let again = try? fuzzKeys.seal(advert) else { preconditionFailure("an accepted advert does not seal") }
            precondition(fuzzKeys.open(again)?.advert == advert, "an accepted advert does not read back")
            remember(nonce, timestamp)
            apply(advert)
        }
    }

    mutating func remember(_ nonce: [UInt8], _ timestamp: UInt64) {
        seen[nonce] = timestamp + 30_000
    }

    mutating func apply(_ advert: Advert) {
        let before = table.entries[advert.device]
        let change = table.apply(advert, from: "192.0.2.2", now: now)
        let after = table.entries[advert.device]
        switch change {
        case .ignored:
            precondition(after == before, "an ignored advert changed the table")
        case .removed:
            precondition(after == nil && !advert.flags.contains(.isCurrent), "a removal that kept the entry")
        case .added, .refreshed, .revised, .replaced:
            precondition(after?.advert == advert && advert.flags.contains(.isCurrent), "\(change) without the advert in the table")
        }
        if let before, let after {
            precondition(after.advert.sequence >= before.advert.sequence, "the table went back to an older activity")
        }
        precondition(table.entries.keys.allSatisfy(Self.isMember), "a non-member in the nearby table")
    }
}
