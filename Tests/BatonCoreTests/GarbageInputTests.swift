import Baton  // userInfo values to and from property lists (NSNumber, NSData, NSNull) live in the app library
import BatonCore
import BatonTestSupport
import Foundation
import Testing

/// Mutates valid inputs the way fuzzers do: bit flips, interesting bytes, insertions, deletions, truncation,
/// splices, and format-aware changes (binary trailers, XML tokens).
struct Mutator {
    var random: SplitMix64

    static let interestingBytes: [UInt8] = [0x00, 0x01, 0x0F, 0x10, 0x7F, 0x80, 0xFF, 0xD0, 0xAF, 0x5F, 0x6F, 0x80]
    static let xmlTokens = [
        "<", ">", "&", "&#", "&#x110000;", "]]>", "<![CDATA[", "<!--", "<dict>", "</dict>", "<array>", "</array>",
        "<key>", "<string>", "<integer>99999999999999999999</integer>", "<date>", "<data>", "<real>", "<true/>", "<?",
        "<!DOCTYPE x [", "\u{FEFF}", "\0", "\"", "'",
    ]

    mutating func mutate(_ input: [UInt8], corpus: [[UInt8]]) -> [UInt8] {
        var bytes = input
        let rounds = 1 + Int(random.next() % 4)
        for _ in 0..<rounds {
            guard !bytes.isEmpty else { return Array(Self.xmlTokens[Int(random.next() % UInt64(Self.xmlTokens.count))].utf8) }
            let position = Int(random.next() % UInt64(bytes.count))
            switch random.next() % 10 {
            case 0:
                bytes[position] ^= 1 << (random.next() % 8)
            case 1:
                bytes[position] = Self.interestingBytes[Int(random.next() % UInt64(Self.interestingBytes.count))]
            case 2:
                bytes[position] = UInt8(truncatingIfNeeded: random.next())
            case 3:
                let count = Int(random.next() % 8) + 1
                bytes.insert(contentsOf: (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: position)
            case 4:
                let end = min(bytes.count, position + Int(random.next() % 16) + 1)
                bytes.removeSubrange(position..<end)
            case 5:
                bytes.removeSubrange(position..<bytes.count)
            case 6:
                // Splice in a chunk of another input.
                let other = corpus[Int(random.next() % UInt64(corpus.count))]
                guard !other.isEmpty else { break }
                let start = Int(random.next() % UInt64(other.count))
                let end = min(other.count, start + Int(random.next() % 64) + 1)
                bytes.insert(contentsOf: other[start..<end], at: position)
            case 7:
                // Binary trailers steer everything: hit the last 32 bytes more often.
                let index = max(0, bytes.count - 1 - Int(random.next() % 32))
                bytes[index] = Self.interestingBytes[Int(random.next() % UInt64(Self.interestingBytes.count))]
            case 8:
                let token = Self.xmlTokens[Int(random.next() % UInt64(Self.xmlTokens.count))]
                bytes.insert(contentsOf: Array(token.utf8), at: position)
            default:
                // Duplicate a run in place: repeated elements, doubled references.
                let end = min(bytes.count, position + Int(random.next() % 32) + 1)
                bytes.insert(contentsOf: bytes[position..<end], at: end)
            }
        }
        return bytes
    }
}

@Suite("Garbage in: every decoder, thousands of mutated inputs")
struct GarbageInputTests {
    static func corpus() throws -> [[UInt8]] {
        var payload = try ActivityPayload(activityType: "com.razeware.shopsnap.edit")
        payload.title = "Editing"
        payload.userInfo = ["item": "Cheese", "id": .uuid(UUID()), "url": .url(URL(fileURLWithPath: "/tmp/x")), "n": .null]
        payload.keywords = ["k"]
        var values: [PropertyList] = [Fixtures.scalars, Fixtures.mixed, Fixtures.nested(depth: 12), ["a": 1], [], "x"]
        values.append(.array((0..<40).map { .integer(Int64($0) * 1_000_003) }))
        values.append(["set": .set([1, "two"]), "big": .unsignedInteger(UInt64.max), "f": 0.1, "d": .date(Date(timeIntervalSinceReferenceDate: -1e9))])
        var inputs: [[UInt8]] = [Array(try payload.encoded())]
        for value in values {
            inputs.append(Array(try BinaryPropertyListEncoder.encode(value)))
            if let xml = try? XMLPropertyListEncoder.encode(value) { inputs.append(Array(xml)) }
        }
        for file in Fixtures.realWorldFiles("entitlements") {
            inputs.append(Array(try Data(contentsOf: file)))
        }
        return inputs
    }

    /// Feeds one input to every decoder: each must return or throw a `BatonCoreError` whose offset lies in the
    /// input; anything decoded must survive a binary round trip unchanged.
    static func exercise(_ input: [UInt8]) throws {
        let data = Data(input)
        let decoders: [(String, (Data) throws -> PropertyList)] = [
            ("auto", { try PropertyList.decode($0).value }),
            ("binary", { try BinaryPropertyListDecoder.decode($0) }),
            ("xml", { try XMLPropertyListDecoder.decode($0) }),
        ]
        for (name, decode) in decoders {
            do {
                let value = try decode(data)
                let again = try BinaryPropertyListDecoder.decode(try BinaryPropertyListEncoder.encode(value))
                #expect(again == value, "\(name) decoded a value that does not round-trip: \(hex(input.prefix(64)))")
            } catch let error as BatonCoreError {
                #expect(!error.message.isEmpty)
                if let offset = error.offset {
                    #expect(offset >= 0 && offset <= input.count, "\(name): offset \(offset) outside the input: \(error)")
                }
            }
        }
        do {
            let payload = try ActivityPayload(decoding: data)
            #expect(try ActivityPayload(decoding: try payload.encoded()) == payload)
        } catch is BatonCoreError {
            // Refused with a typed error: what hostile input should get.
        }
    }

    @Test("mutated binary, XML and payload inputs never trap, hang or escape as untyped errors", arguments: 0..<4)
    func mutatedInputs(shard: UInt64) throws {
        let corpus = try Self.corpus()
        var mutator = Mutator(random: SplitMix64(state: 0xBA70_0000 + shard))
        var iterations = 0
        let perShard = 5_000
        while iterations < perShard {
            let seed = corpus[Int(mutator.random.next() % UInt64(corpus.count))]
            try Self.exercise(mutator.mutate(seed, corpus: corpus))
            iterations += 1
        }
        #expect(iterations == perShard)
    }

    @Test("every prefix of a valid file is handled: truncation at each byte")
    func everyTruncation() throws {
        for seed in try Self.corpus().prefix(10) {
            for length in 0..<seed.count {
                try Self.exercise(Array(seed[0..<length]))
            }
        }
    }
}

@Suite("Errors quote input briefly (issue 10 item 10)")
struct ErrorQuotingTests {
    static let huge = String(repeating: "A", count: 2 << 20)

    static func xml(_ body: String) -> Data {
        Data("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\(body)</plist>".utf8)
    }

    @Test("issue 10 item 10: a 2 MB tag name, key, date or integer gives a short error with the right code")
    func hugeInputShortErrors() throws {
        let cases: [(String, Data, BatonCoreError.Code)] = [
            ("2 MB tag name", Self.xml("<\(Self.huge)></\(Self.huge)>"), .unexpectedElement),
            ("2 MB tag name, never closed", Data("<plist><\(Self.huge)".utf8), .truncated),
            ("2 MB closing tag", Self.xml("<array></\(Self.huge)>"), .invalidXML),
            ("2 MB tag name where a key should be", Self.xml("<dict><\(Self.huge)/></dict>"), .unexpectedElement),
            ("2 MB key without a value", Self.xml("<dict><key>\(Self.huge)</key></dict>"), .unexpectedElement),
            ("2 MB date", Self.xml("<date>\(Self.huge)</date>"), .invalidDate),
            ("2 MB integer", Self.xml("<integer>\(Self.huge)</integer>"), .invalidNumber),
            ("2 MB real", Self.xml("<real>\(Self.huge)</real>"), .invalidNumber),
            // One grapheme cluster of 2 MB: a cut by Character would keep all of it.
            ("2 MB single character", Self.xml("<integer>1\(String(repeating: "\u{301}", count: 1 << 20))</integer>"), .invalidNumber),
        ]
        for (name, data, code) in cases {
            let error = #expect(throws: BatonCoreError.self, "\(name)") { try PropertyList.decode(data) }
            #expect(error?.code == code, "\(name): \(String(describing: error).prefix(300))")
            #expect((error?.description.unicodeScalars.count ?? .max) < 300, "\(name): \(String(describing: error).prefix(400))")
        }
    }

    @Test("issue 10 item 10: a 2 MB key path, URL scheme or required key gives a short error with the right code")
    func hugeValuesShortErrors() throws {
        struct Cart {}
        let keyPath = #expect(throws: BatonCoreError.self) { try PropertyList(any: [Self.huge: ["x": Cart()]] as [String: Any]) }
        #expect(keyPath?.code == .unsupportedType)
        #expect((keyPath?.description.unicodeScalars.count ?? .max) < 300)
        #expect(keyPath?.message.contains("2097154 bytes") == true, "the note gives the full length: \(String(describing: keyPath))")

        let url = try #require(URL(string: Self.huge + ":rest"))
        let scheme = #expect(throws: BatonCoreError.self) { try ActivityPayload.validateWebpageURL(url) }
        #expect(scheme?.code == .unsupportedURLScheme)
        #expect((scheme?.description.unicodeScalars.count ?? .max) < 300)

        let control = #expect(throws: BatonCoreError.self) {
            try ActivityPayload(activityType: String(repeating: "\u{1}", count: ActivityPayload.maximumActivityTypeLength))
        }
        #expect(control?.code == .invalidActivityType)
        #expect((control?.description.unicodeScalars.count ?? .max) < 300)

        var payload = try ActivityPayload(activityType: "com.example.view")
        payload.requiredUserInfoKeys = [Self.huge]
        let required = #expect(throws: BatonCoreError.self) { try payload.encoded() }
        #expect(required?.code == .missingRequiredUserInfoKey)
        #expect((required?.description.unicodeScalars.count ?? .max) < 300)
    }

    @Test("issue 10 item 10: quoted keeps short text, escapes what would break a line, and cuts long text")
    func quoting() {
        #expect(BatonCoreError.quoted("com.example.view") == "\"com.example.view\"")
        #expect(BatonCoreError.quoted("a\"b\\c\nd\u{202E}") == "\"a\\\"b\\\\c\\nd\\u{202E}\"")
        let long = BatonCoreError.quoted(Self.huge)
        #expect(long == "\"" + String(repeating: "A", count: BatonCoreError.maximumQuotedLength) + "…\" (2097152 bytes)")
        let escapes = BatonCoreError.quoted(String(repeating: "\u{1}", count: 1000))
        #expect(escapes.count < 80 && escapes.hasSuffix("…\" (1000 bytes)"))
        #expect(BatonCoreError.quoted("abcdef", limit: 3) == "\"abc…\" (6 bytes)")
    }
}
