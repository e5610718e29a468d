import BatonCore
import Foundation
import BatonTestSupport
import Testing

/// Issue 26 item 5: the quick looks that let both agents skip decoding a state on a warm continue
/// (`BinaryPropertyList.mayHoldURLs`, `ActivityPayload.mayHoldURL(with:in:)`) must never say "no" when the decoder
/// would find a URL (or a URL with an `@`). Every input here is checked against the full decode.
@Suite("Binary property list quick looks: no URL object, no decode (issue 26 item 5)")
struct BinaryPropertyListQuickLookTests {
    /// Random property-list values, with or without URL objects: strings and data that look like URLs (`file:`,
    /// `FILE:`, UTF-16, credentials, the URL marker's own byte 0x0C) are there either way.
    struct Values {
        var random: SplitMix64

        static let strings = [
            "", "plain", "file:///home/me/notes.txt", "FILE:///HOME/ME/NOTES.TXT", "file:///tmp/café.txt",
            "https://user:pw@shop.example/item", "me@example.com", "\u{0C}", "\u{0C}file:", "baton-folder://docs/a",
            "日本語のテキスト", String(repeating: "x", count: 40),
        ]
        static let blobs: [Data] = [
            Data(), Data("file:///etc/passwd".utf8), Data([0x0C, 0x5F, 0x10, 0x0C]), Data("@".utf8),
            Data([0x0C] + Array("https://a:b@h/".utf8)),
        ]
        static let urls: [URL] = [
            "file:///tmp/a.txt", "FILE:///TMP/B.TXT", "https://user:pw@shop.example/", "http://shop.example/?q=a@b",
            "mailto:me@example.com", "baton-folder://docs/a.txt", "file:///tmp/caf%C3%A9.txt",
        ].compactMap { URL(string: $0) }

        mutating func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }

        mutating func value(depth: Int, urls: Bool) -> PropertyList {
            switch random.next() % (depth >= 3 ? 9 : 12) {
            case 0: return .string(pick(Self.strings))
            case 1: return .integer(Int64(bitPattern: random.next()) >> (random.next() % 64))
            case 2: return .real(Double(random.next() % 1000) / 8)
            case 3: return .bool(random.next() % 2 == 0)
            case 4: return .data(pick(Self.blobs))
            case 5: return .date(Date(timeIntervalSinceReferenceDate: Double(random.next() % 1_000_000)))
            case 6: return random.next() % 2 == 0 ? .null : .unsignedInteger(UInt64.max - random.next() % 9)
            case 7: return .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, UInt8(random.next() % 256))))
            case 8: return urls ? .url(pick(Self.urls)) : .string(pick(Self.strings))
            case 9: return .array((0..<random.next() % 6).map { _ in value(depth: depth + 1, urls: urls) })
            case 10: return .set(Set((0..<random.next() % 4).map { _ in value(depth: depth + 1, urls: urls) }))
            default:
                var entries: [String: PropertyList] = [:]
                for _ in 0..<random.next() % 7 { entries[pick(Self.strings)] = value(depth: depth + 1, urls: urls) }
                return .dictionary(entries)
            }
        }

        /// An activity state: webpage and referrer URLs (with and without `@`), userInfo and content attributes.
        mutating func payload(urls: Bool) throws -> ActivityPayload {
            var payload = try ActivityPayload(activityType: "com.example.quicklook")
            let webpages = [nil, "https://shop.example/a", "https://u:p@shop.example/", "http://shop.example/?q=a@b", "https://shop.example/#@"]
            if let page = pick(webpages) { try payload.setWebpageURL(URL(string: page)) }
            payload.referrerURL = pick(webpages).flatMap { URL(string: $0) }
            if case .dictionary(let entries) = value(depth: 0, urls: urls) { payload.userInfo = entries }
            payload.title = pick(Self.strings)
            if random.next() % 2 == 0 { payload.contentAttributeSet = ["about": value(depth: 2, urls: urls)] }
            return payload
        }
    }

    static func containsURL(_ value: PropertyList, where matches: (URL) -> Bool = { _ in true }) -> Bool {
        switch value {
        case .url(let url): matches(url)
        case .array(let items): items.contains { containsURL($0, where: matches) }
        case .set(let items): items.contains { containsURL($0, where: matches) }
        case .dictionary(let entries): entries.values.contains { containsURL($0, where: matches) }
        default: false
        }
    }

    /// Whether the decoded `data` has a URL with an `@` (what the originating agent's credentials check looks for).
    static func decodedURLWithAt(_ data: Data) -> Bool {
        guard let payload = try? ActivityPayload(decoding: data) else { return false }
        let hasAt: (URL) -> Bool = { $0.absoluteString.contains("@") }
        return [payload.webpageURL, payload.referrerURL].contains { $0.map(hasAt) ?? false }
            || containsURL(.dictionary(payload.userInfo), where: hasAt)
            || containsURL(.dictionary(payload.contentAttributeSet ?? [:]), where: hasAt)
    }

    @Test("issue 26 item 5: for 4,000 random values the quick look says a URL may be there exactly when one is")
    func exactOnEncoderOutput() throws {
        var values = Values(random: SplitMix64(state: 0x0C0C))
        var withURL = 0
        for index in 0..<4_000 {
            let value = values.value(depth: 0, urls: index % 2 == 0)
            let data = try BinaryPropertyListEncoder.encode(value)
            let has = Self.containsURL(try BinaryPropertyListDecoder.decode(data))
            #expect(BinaryPropertyList.mayHoldURLs(data) == has, "\(value)")
            if has { withURL += 1 }
        }
        #expect(withURL > 200 && withURL < 2_000, "both kinds were tried (\(withURL) with a URL)")
    }

    @Test("issue 26 item 5: for 3,000 random states the payload look never misses a URL holding '@'")
    func payloadLookOnStates() throws {
        var values = Values(random: SplitMix64(state: 0x40))
        var skipped = 0
        for index in 0..<3_000 {
            let data = try values.payload(urls: index % 3 == 0).encoded()
            let may = ActivityPayload.mayHoldURL(with: UInt8(ascii: "@"), in: data)
            if !may {
                skipped += 1
                #expect(!Self.decodedURLWithAt(data))
            }
            if Self.decodedURLWithAt(data) { #expect(may) }
        }
        #expect(skipped > 200, "states without URL objects or '@' in their web URLs are skipped (\(skipped))")
    }

    @Test("issue 26 item 5: 20,000 mutated states: a 'no' from either look is always borne out by the decoder")
    func soundOnGarbage() throws {
        var values = Values(random: SplitMix64(state: 0xBAD))
        var corpus: [[UInt8]] = []
        for index in 0..<40 { corpus.append(Array(try values.payload(urls: index % 2 == 0).encoded())) }
        var mutator = Mutator(random: SplitMix64(state: 0x5EED))
        var noURL = 0
        var decodedWithoutURL = 0
        for _ in 0..<20_000 {
            let input = Data(mutator.mutate(corpus[Int(mutator.random.next() % UInt64(corpus.count))], corpus: corpus))
            if !BinaryPropertyList.mayHoldURLs(input) {
                noURL += 1
                if let value = try? BinaryPropertyListDecoder.decode(input) {
                    decodedWithoutURL += 1
                    #expect(!Self.containsURL(value), "\(Array(input))")
                }
            }
            if !ActivityPayload.mayHoldURL(with: UInt8(ascii: "@"), in: input) {
                #expect(!Self.decodedURLWithAt(input), "\(Array(input))")
            }
        }
        #expect(noURL > 1_000 && decodedWithoutURL > 100, "the 'no' branch was exercised (\(noURL), \(decodedWithoutURL) decoded)")
    }

    @Test("issue 26 item 5: what is not a readable binary property list is always 'may', and hostile tables do not trap")
    func unreadableIsMay() throws {
        let state = try BinaryPropertyListEncoder.encode(["a": "b", "n": 1])
        let xml = try XMLPropertyListEncoder.encode(["u": "file:///tmp/x"])
        var inputs: [Data] = [Data(), Data("bplist00".utf8), xml, Data("not a plist @ file:".utf8)]
        // Trailers claiming huge counts, a top object past the table, a table past the end, sizes 0 and 9.
        for (field, bytes) in [(6, [0x00]), (7, [0x09]), (8, Array(repeating: 0xFF, count: 8)), (16, [0x7F, 0, 0, 0, 0, 0, 0, 0]),
                               (24, Array(repeating: 0xFF, count: 8)), (8, [0, 0, 0, 0, 0, 0, 0, 0])] as [(Int, [UInt8])] {
            var hostile = Array(state)
            hostile.replaceSubrange((hostile.count - 32 + field)..<(hostile.count - 32 + field + bytes.count), with: bytes)
            inputs.append(Data(hostile))
        }
        for input in inputs {
            #expect(BinaryPropertyList.mayHoldURLs(input), "\(Array(input))")
            #expect(ActivityPayload.mayHoldURL(with: UInt8(ascii: "@"), in: input))
        }
        #expect(!BinaryPropertyList.mayHoldURLs(state))
        // Every prefix of a state with a URL: a 'no' only where the decoder finds none.
        let withURL = try BinaryPropertyListEncoder.encode(["u": .url(URL(fileURLWithPath: "/tmp/x")), "s": "file:"])
        for length in 0...withURL.count {
            let prefix = Data(withURL.prefix(length))
            if !BinaryPropertyList.mayHoldURLs(prefix), let value = try? BinaryPropertyListDecoder.decode(prefix) {
                #expect(!Self.containsURL(value))
            }
        }
        #expect(BinaryPropertyList.mayHoldURLs(withURL))
    }

    @Test("issue 26 item 5: the payload look reads the webpage and referrer strings from the top dictionary; an '@' or UTF-16 there is 'may'")
    func webpageKeyForms() throws {
        let plain = try BinaryPropertyListEncoder.encode(["v": 1, "type": "t", "webpageURL": "https://a.example/"])
        #expect(!ActivityPayload.mayHoldURL(with: UInt8(ascii: "@"), in: plain))
        let at = try BinaryPropertyListEncoder.encode(["v": 1, "type": "t", "referrerURL": "https://u@a.example/"])
        #expect(ActivityPayload.mayHoldURL(with: UInt8(ascii: "@"), in: at))
        // A UTF-16 value is not read: 'may'.
        let wide = try BinaryPropertyListEncoder.encode(["v": 1, "type": "t", "webpageURL": "https://é.example/"])
        #expect(ActivityPayload.mayHoldURL(with: UInt8(ascii: "@"), in: wide))
        // An '@' elsewhere does not count.
        let elsewhere = try BinaryPropertyListEncoder.encode(["v": 1, "type": "t", "who": "me@example.com", "webpageURL": "https://a.example/"])
        #expect(!ActivityPayload.mayHoldURL(with: UInt8(ascii: "@"), in: elsewhere))
    }
}
