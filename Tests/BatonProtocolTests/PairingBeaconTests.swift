import BatonProtocol
import Foundation
import Testing

@Suite("Pairing beacons: what a waiting `baton pair` announces on the LAN (issue 24)")
struct PairingBeaconTests {
    static let nonce = Array(0..<16).map(UInt8.init)

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test("PROTOCOL §4 test vector: nonce 00..0f, name desktop, port 47811")
    func vector() throws {
        let beacon = try PairingBeacon(nonce: Self.nonce, displayName: "desktop", port: 47_811)
        let expected = "42544e5001000102030405060708090a0b0c0d0e0fbac3076465736b746f70"
        #expect(Self.hex(beacon.datagram) == expected)
        #expect(try PairingBeacon(datagram: beacon.datagram) == beacon)
        #expect(beacon.datagram.count == PairingBeacon.headerLength + 7)
    }

    @Test("a beacon is never an advert: another first byte, and always shorter than an advert's 88 bytes")
    func distinctFromAdverts() throws {
        #expect(PairingBeacon.maximumDatagramLength < AdvertKeys.datagramLength)
        #expect(PairingBeacon.magic[0] != AdvertKeys.version)
        let longest = try PairingBeacon(nonce: Self.nonce, displayName: String(repeating: "n", count: 500), port: 1)
        #expect(longest.datagram.count == PairingBeacon.maximumDatagramLength)
        // An agent's keys do not open it (its receiver drops it for its length before even trying).
        let keys = AdvertKeys(AccountKey(epoch: 1, key: [UInt8](repeating: 0x42, count: 32), excludes: []))
        #expect(keys.open(Data(longest.datagram)) == nil)
        // And the beacon reader leaves an advert alone, with the code that means "not for me".
        let advert = try keys.seal(
            Advert(device: DeviceID(certificateDER: Data("a".utf8)), sequence: 1, typeHash: [UInt8](repeating: 0, count: 8), flags: [.isCurrent], sessionPort: 47_810, timestamp: 1)
        )
        #expect(throws: BatonProtocolError(.notPairingBeacon, "the datagram is not a pairing beacon")) { try PairingBeacon(datagram: advert) }
    }

    @Test("the name is sanitized when sent: no controls, separators or bidi overrides, trimmed, cut at a character to 63 bytes")
    func sanitizing() throws {
        #expect(PairingBeacon.sanitizedName("  desk\u{202E}pot\u{0007}\n ") == "deskpot")
        #expect(PairingBeacon.sanitizedName("a\u{2028}b\u{2066}c\u{200F}d\u{FEFF}") == "abcd")
        #expect(PairingBeacon.sanitizedName("\u{0000}\u{001B}[31m") == "[31m", "the escape is gone, so a terminal shows plain text")
        #expect(PairingBeacon.sanitizedName("\u{202E}\n") == PairingBeacon.fallbackName)
        #expect(PairingBeacon.sanitizedName("Zoë’s 👩‍💻 laptop") == "Zoë’s 👩‍💻 laptop", "emoji with joiners stay whole")
        let emoji = String(repeating: "👩‍💻", count: 10)  // 11 bytes each
        let cut = PairingBeacon.sanitizedName(emoji)
        #expect(cut == String(repeating: "👩‍💻", count: 5) && cut.utf8.count == 55, "cut at a whole character, never inside one")
        let spaced = PairingBeacon.sanitizedName(String(repeating: "a", count: 62) + " b")
        #expect(spaced == String(repeating: "a", count: 62), "a cut that ends in white space is trimmed")
    }

    @Test("hostile datagrams get typed errors: cut, lengthened, port 0, a name with controls, bidi, bad UTF-8")
    func refused() throws {
        let good = try PairingBeacon(nonce: Self.nonce, displayName: "desktop", port: 47_811).datagram
        func code(_ bytes: [UInt8]) -> BatonProtocolError.Code? {
            do {
                _ = try PairingBeacon(datagram: bytes)
                return nil
            } catch let error as BatonProtocolError {
                return error.code
            } catch {
                Issue.record("untyped \(error)")
                return nil
            }
        }
        #expect(code([]) == .notPairingBeacon)
        #expect(code([0x42, 0x54]) == .notPairingBeacon)
        #expect(code(Array(good.prefix(10))) == .invalidPairingBeacon)
        #expect(code(good.dropLast().map { $0 }) == .invalidPairingBeacon)
        #expect(code(good + [0x41]) == .invalidPairingBeacon)
        var version = good
        version[4] = 2
        #expect(code(version) == .unsupportedVersion)
        var port0 = good
        port0[21] = 0
        port0[22] = 0
        #expect(code(port0) == .invalidPairingBeacon)
        func withName(_ name: [UInt8]) -> [UInt8] { Array(good.prefix(23)) + [UInt8(truncatingIfNeeded: name.count)] + name }
        #expect(code(withName(Array("laptop".utf8))) == nil)
        #expect(code(withName([])) == .invalidPairingBeacon)
        #expect(code(withName(Array("ev\u{202E}il".utf8))) == .invalidPairingBeacon)
        #expect(code(withName(Array("two\nlines".utf8))) == .invalidPairingBeacon)
        #expect(code(withName([0x66, 0xFF, 0xFE])) == .invalidPairingBeacon)
        #expect(code(withName(Array(" padded".utf8))) == .invalidPairingBeacon)
        #expect(code(withName([UInt8](repeating: 0x61, count: 64))) == .invalidPairingBeacon)
        #expect(code(good + [UInt8](repeating: 0, count: 10_000)) == .invalidPairingBeacon, "a huge datagram is refused after reading 88 bytes")
        #expect(throws: BatonProtocolError.self) { try PairingBeacon(nonce: [1, 2, 3], displayName: "x", port: 1) }
        #expect(throws: BatonProtocolError.self) { try PairingBeacon(nonce: Self.nonce, displayName: "x", port: 0) }
    }

    @Test("garbage: random, truncated and mutated datagrams only ever throw a typed error or read as a beacon that writes back to itself", arguments: 0..<4)
    func garbage(seed: UInt64) throws {
        var random = SeededRandom(state: seed)
        let samples = try ["desktop", "Zoë’s 👩‍💻 laptop", String(repeating: "x", count: 63)].map {
            try PairingBeacon(nonce: Self.nonce, displayName: $0, port: 47_811).datagram
        }
        var read = 0
        var refused = 0
        func check(_ bytes: [UInt8]) {
            do {
                let beacon = try PairingBeacon(datagram: bytes)
                #expect(beacon.datagram == bytes, "a beacon reads only from its one encoding")
                #expect(PairingBeacon.sanitizedName(beacon.name) == beacon.name)
                read += 1
            } catch let error as BatonProtocolError {
                #expect([.notPairingBeacon, .invalidPairingBeacon, .unsupportedVersion].contains(error.code), "\(error)")
                refused += 1
            } catch {
                Issue.record("untyped error \(error) for \(bytes)")
            }
        }
        for sample in samples {
            for end in 0...sample.count { check(Array(sample[..<end])) }
        }
        for _ in 0..<2_000 {
            let length = Int(random.next() % 120)
            let noise = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            check(noise)
            check(PairingBeacon.magic + [1] + noise)
            var bytes = samples[Int(random.next() % UInt64(samples.count))]
            for _ in 0...(random.next() % 3) where !bytes.isEmpty {
                let index = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 4 {
                case 0: bytes[index] ^= UInt8(1 << (random.next() % 8))
                case 1: bytes[index] = UInt8(truncatingIfNeeded: random.next())
                case 2: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: index)
                default: bytes.remove(at: index)
                }
            }
            check(bytes)
        }
        #expect(read > 0 && refused > 0, "read \(read), refused \(refused)")
    }

    @Test("sightings: one entry per run however many copies, IPv4 first, adverts ignored, a flood bounded")
    func sightings() throws {
        var heard = PairingBeaconSightings()
        let desktop = try PairingBeacon(nonce: Self.nonce, displayName: "desktop", port: 47_811)
        #expect(heard.receive(desktop.datagram, from: "fe80::77:ff:fe00:1%eth0")?.name == "desktop")
        #expect(heard.receive(desktop.datagram, from: "10.77.0.1") == nil, "the same run again")
        #expect(heard.receive(desktop.datagram, from: "10.77.0.1") == nil)
        #expect(heard.sightings.count == 1)
        #expect(heard.sightings[0].hosts == ["10.77.0.1", "fe80::77:ff:fe00:1%eth0"])
        // A forged copy with the same nonce but another port does not redirect the first.
        let forged = try PairingBeacon(nonce: Self.nonce, displayName: "desktop", port: 9)
        heard.receive(forged.datagram, from: "10.77.0.66")
        #expect(heard.sightings[0].port == 47_811 && heard.dropped == 1)
        let alpha = try PairingBeacon(nonce: [UInt8](repeating: 0xEE, count: 16), displayName: "alpha", port: 47_811)
        heard.receive(alpha.datagram, from: "10.77.0.5")
        #expect(heard.sightings.map(\.name) == ["desktop", "alpha"] && heard.byName.map(\.name) == ["alpha", "desktop"], "listed by name, not arrival")
        heard.receive([0x01] + [UInt8](repeating: 0, count: 87), from: "10.77.0.3")
        heard.receive(PairingBeacon.magic + [1, 2], from: "10.77.0.3")
        #expect(heard.sightings.count == 2 && heard.unreadable == 1, "an advert is not counted; a broken beacon is")
        for index in 0..<100 {
            let other = try PairingBeacon(nonce: [UInt8](repeating: UInt8(index), count: 15) + [0xAA], displayName: "flood \(index)", port: 1)
            heard.receive(other.datagram, from: "10.77.0.9")
        }
        #expect(heard.sightings.count == PairingBeaconSightings.maximumSightings)
        for index in 0..<10 { heard.receive(desktop.datagram, from: "10.77.1.\(index)") }
        #expect(heard.sightings[0].hosts.count == PairingBeaconSightings.maximumHostsPerSighting)
    }
}
