import BatonProtocol
import Foundation
import Testing

@Suite("Direct stream preamble: the first bytes on a direct stream's TCP connection (issue 30, docs/PROTOCOL.md §8)")
struct StreamPreambleTests {
    static let token = Array(0..<16).map(UInt8.init)

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func code(_ bytes: [UInt8]) -> StreamPreambleError.Code? {
        do {
            _ = try StreamPreamble.parse(bytes)
            return nil
        } catch {
            // Typed throws: `error` is a StreamPreambleError.
            return error.code
        }
    }

    @Test("test vector: token 00..0f is 42544e53 01 000102..0f, 21 bytes, and parses back")
    func vector() throws {
        let preamble = try StreamPreamble(token: Self.token)
        #expect(Self.hex(preamble.bytes) == "42544e5301000102030405060708090a0b0c0d0e0f")
        #expect(preamble.bytes.count == StreamPreamble.length)
        #expect(StreamPreamble.length == StreamPreamble.magic.count + 1 + StreamPreamble.tokenLength)
        #expect(try StreamPreamble.parse(preamble.bytes) == preamble)
        #expect(try StreamPreamble.parse(preamble.bytes[...]) == preamble, "any collection of bytes, a slice too")
        #expect(preamble.token == Self.token)
    }

    @Test("told apart from TLS by the first byte: a ClientHello's 0x16 is not a preamble, B is")
    func firstByte() throws {
        #expect(StreamPreamble.startsPreamble(0x42))
        #expect(!StreamPreamble.startsPreamble(0x16))
        #expect((0...255).filter { StreamPreamble.startsPreamble(UInt8($0)) } == [0x42])
        // A TLS 1.3 ClientHello's record header: handshake, legacy version 3.1.
        #expect(Self.code([0x16, 0x03, 0x01, 0x02, 0x00]) == .notAPreamble)
    }

    @Test("one byte at a time: nil while the bytes agree, the preamble at the 21st, tooLong at the 22nd")
    func incremental() throws {
        let preamble = try StreamPreamble(token: [UInt8](repeating: 0xA5, count: 16))
        var seen: [UInt8] = []
        #expect(try StreamPreamble.parse(seen) == nil, "nothing yet is a preamble so far")
        for byte in preamble.bytes.dropLast() {
            seen.append(byte)
            #expect(try StreamPreamble.parse(seen) == nil, "\(seen.count) bytes")
        }
        seen.append(preamble.bytes[StreamPreamble.length - 1])
        #expect(try StreamPreamble.parse(seen) == preamble)
        seen.append(0x16)
        #expect(Self.code(seen) == .tooLong)
    }

    @Test("each error code: a wrong magic byte anywhere, another version, bytes behind it, a token of the wrong size")
    func errors() throws {
        let good = try StreamPreamble(token: Self.token).bytes
        for index in 0..<StreamPreamble.magic.count {
            var bytes = Array(good.prefix(index + 1))
            bytes[index] ^= 0x20  // "btns" in any letter's case is not it
            #expect(Self.code(bytes) == .notAPreamble, "magic byte \(index)")
            var whole = good
            whole[index] ^= 0x20
            #expect(Self.code(whole) == .notAPreamble, "magic byte \(index) in a whole preamble")
        }
        for version: UInt8 in [0, 2, 0x16, 0xFF] {
            #expect(Self.code(StreamPreamble.magic + [version]) == .unsupportedVersion, "version \(version)")
            var whole = good
            whole[4] = version
            #expect(Self.code(whole) == .unsupportedVersion, "version \(version) in a whole preamble")
        }
        #expect(Self.code(good + [0]) == .tooLong)
        #expect(Self.code(good + [UInt8](repeating: 0x16, count: 4096)) == .tooLong)
        // The first byte that cannot be a preamble decides: a wrong magic before a wrong version.
        #expect(Self.code([0x42, 0x54, 0x4e, 0x00, 0x02]) == .notAPreamble)
        for count in [0, 1, 15, 17, 32] {
            let error = #expect(throws: StreamPreambleError.self) { try StreamPreamble(token: [UInt8](repeating: 1, count: count)) }
            #expect(error?.code == .badToken, "a token of \(count) bytes")
            #expect(error?.description.contains("16 bytes") == true)
        }
    }

    @Test("garbage: random strings of 0-64 bytes never trap; a preamble only for exactly 21 bytes that are one")
    func garbage() throws {
        var random = SeededRandom(state: 30)
        var preambles = 0
        for round in 0..<4000 {
            let count = Int.random(in: 0...64, using: &random)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            // Half the strings start as a preamble (up to some point), so the later checks are reached too.
            if round % 2 == 0 {
                let valid = try StreamPreamble(token: (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }).bytes
                let kept = Int.random(in: 0...StreamPreamble.length, using: &random)
                bytes.replaceSubrange(0..<min(kept, bytes.count), with: valid.prefix(min(kept, bytes.count)))
            }
            let isPrefix = bytes.count <= StreamPreamble.length
                && bytes.prefix(4).elementsEqual(StreamPreamble.magic.prefix(bytes.count))
                && (bytes.count < 5 || bytes[4] == StreamPreamble.version)
            do {
                let parsed = try StreamPreamble.parse(bytes)
                #expect(isPrefix, "accepted \(Self.hex(bytes))")
                if let parsed {
                    preambles += 1
                    #expect(bytes.count == StreamPreamble.length)
                    #expect(parsed.bytes == bytes, "a preamble is exactly its bytes")
                } else {
                    #expect(bytes.count < StreamPreamble.length)
                }
            } catch {
                #expect(!isPrefix, "refused a preamble's prefix \(Self.hex(bytes)): \(error)")
            }
        }
        #expect(preambles > 10, "the garbage reached whole preambles too")
    }
}
