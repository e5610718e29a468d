import BatonCore
import Foundation
import Testing

@Suite("Binary property lists")
struct BinaryPropertyListTests {
    static let header = Array("bplist00".utf8)

    @Test("encodes a small dictionary to the documented test vector (docs/PROTOCOL.md)")
    func testVector() throws {
        let data = try BinaryPropertyListEncoder.encode(["a": 1])
        // The same bytes Python's plistlib writes for {"a": 1}.
        #expect(
            hex(data) == "62706c6973743030" + "d10102" + "5161" + "1001" + "080b0d"
                + "000000000000" + "01" + "01" + "0000000000000003" + "0000000000000000" + "000000000000000f"
        )
        #expect(try BinaryPropertyListDecoder.decode(data) == ["a": 1])
    }

    @Test("every type round-trips, including Baton's null, set, URL and UUID")
    func roundTripAllTypes() throws {
        let url = try #require(URL(string: "https://example.com/a?b=c#d"))
        var value = Fixtures.scalars
        guard case .dictionary(var entries) = value else { return }
        entries["null"] = .null
        entries["set"] = .set(["x", 1, [2]])
        entries["url"] = .url(url)
        entries["uuid"] = .uuid(UUID(uuidString: "5D1E0C52-8F5B-4D7A-9C1E-3B2A1F0E9D8C") ?? UUID())
        entries["mixed"] = Fixtures.mixed
        value = .dictionary(entries)
        let data = try BinaryPropertyListEncoder.encode(value)
        #expect(try BinaryPropertyListDecoder.decode(data) == value)
    }

    @Test("output is deterministic: sorted keys, strings stored once")
    func deterministic() throws {
        let value: PropertyList = ["b": "same", "a": "same", "c": ["same": "same"]]
        let first = try BinaryPropertyListEncoder.encode(value)
        let second = try BinaryPropertyListEncoder.encode(value)
        #expect(first == second)
        // "same" appears once in the file even though it is used four times.
        let occurrences = first.windows(ofCount: 4).filter { Array($0) == Array("same".utf8) }.count
        #expect(occurrences == 1)
    }

    @Test("equal strings are stored once also when their scalars differ, whichever comes first (issue 26 item 5)")
    func equalStringsStoredOnce() throws {
        // "K" and the Kelvin sign, "è" composed and decomposed: equal strings (`==`), other bytes.
        for texts in [["K", "\u{212A}", "e\u{300}", "è", "x"], ["\u{212A}", "K", "è", "e\u{300}", "x"]] {
            let data = try BinaryPropertyListEncoder.encode(.array(texts.map(PropertyList.string)))
            // The trailer's object count: the array and three strings.
            let count = data.suffix(24).prefix(8).reduce(0) { $0 << 8 | Int($1) }
            #expect(count == 4, "\(texts)")
            let decoded = try #require(BinaryPropertyListDecoder.decode(data).arrayValue)
            // Each as the first of its equals was written.
            let scalars = decoded.map { $0.stringValue.map { Array($0.unicodeScalars) } ?? [] }
            #expect(scalars == [0, 0, 2, 2, 4].map { Array(texts[$0].unicodeScalars) })
        }
        // Past the first string with a scalar from U+0300 on, and with 15 or more characters (an extended count).
        let long = String(repeating: "e\u{300}", count: 20)
        let data = try BinaryPropertyListEncoder.encode(["a": "Crème fraîche", "b": "\u{3042}", "c": .string(long), "d": .string(long.precomposedStringWithCanonicalMapping), "e": "K", "f": "\u{212A}"])
        let count = data.suffix(24).prefix(8).reduce(0) { $0 << 8 | Int($1) }
        #expect(count == 1 + 6 + 4)
    }

    @Test("integers use the narrowest width; above Int64.max the 16-byte form")
    func integerWidths() throws {
        func objectBytes(_ value: PropertyList) throws -> String {
            // A one-object file: the object sits between the header and the 1-byte offset table.
            let data = try BinaryPropertyListEncoder.encode(value)
            return hex(data[8..<(data.count - 32 - 1)])
        }
        #expect(try objectBytes(0) == "1000")
        #expect(try objectBytes(255) == "10ff")
        #expect(try objectBytes(256) == "110100")
        #expect(try objectBytes(.integer(1 << 32)) == "130000000100000000")
        #expect(try objectBytes(-1) == "13ffffffffffffffff")
        #expect(try objectBytes(.unsignedInteger(UInt64.max)) == "14" + "0000000000000000" + "ffffffffffffffff")
        #expect(try objectBytes(.real(1.5)) == "233ff8000000000000")
        #expect(try objectBytes("é") == "6100e9")
        #expect(try objectBytes("😀") == "62d83dde00")
    }

    @Test("containers with 15 or more elements carry an extended count")
    func extendedCounts() throws {
        let value = PropertyList.array((0..<300).map { .integer(Int64($0)) })
        let data = try BinaryPropertyListEncoder.encode(value)
        #expect(data[8] == 0xAF && data[9] == 0x11)
        #expect(try BinaryPropertyListDecoder.decode(data) == value)
    }

    // MARK: Hostile input

    static func file(objects: [[UInt8]], top: UInt64 = 0, referenceSize: UInt8 = 1) -> Data {
        var data = Data(header)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(data.count)
            data.append(contentsOf: object)
        }
        let table = data.count
        data.append(contentsOf: offsets.map { UInt8($0) })
        data.append(contentsOf: [0, 0, 0, 0, 0, 0, 1, referenceSize])
        data.append(contentsOf: bigEndian(UInt64(objects.count)))
        data.append(contentsOf: bigEndian(top))
        data.append(contentsOf: bigEndian(UInt64(table)))
        return data
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
    }

    static func expectError(_ code: BatonCoreError.Code, _ data: Data, limits: PropertyListLimits = .default) {
        let error = #expect(throws: BatonCoreError.self) { try BinaryPropertyListDecoder.decode(data, limits: limits) }
        #expect(error?.code == code, "\(String(describing: error))")
    }

    @Test("the hand-built file helper makes valid files")
    func helperIsValid() throws {
        let data = Self.file(objects: [[0xA2, 1, 2], [0x10, 7], [0x51, 0x61]])
        #expect(try BinaryPropertyListDecoder.decode(data) == [7, "a"])
    }

    @Test("malformed files give typed errors, never a trap")
    func malformed() {
        Self.expectError(.unknownFormat, Data("bplist01".utf8) + Data(count: 40))
        Self.expectError(.unknownFormat, Data("hello".utf8))
        Self.expectError(.truncated, Data(Self.header) + Data(count: 10))
        // A reference past the object count.
        Self.expectError(.invalidReference, Self.file(objects: [[0xA1, 9]]))
        // An ASCII string that runs past the object area.
        Self.expectError(.truncated, Self.file(objects: [[0x5F, 0x10, 0xFF, 0x61]]))
        // An unknown marker.
        Self.expectError(.invalidObject, Self.file(objects: [[0x90]]))
        // A 32-byte integer does not exist.
        Self.expectError(.invalidObject, Self.file(objects: [[0x15, 0, 0]]))
        // Non-ASCII byte in an ASCII string; a lone surrogate in UTF-16.
        Self.expectError(.invalidString, Self.file(objects: [[0x51, 0xC3]]))
        Self.expectError(.invalidString, Self.file(objects: [[0x61, 0xD8, 0x3D]]))
        // A dictionary key that is an integer.
        Self.expectError(.nonStringKey, Self.file(objects: [[0xD1, 1, 1], [0x10, 1]]))
        // A top object past the count.
        Self.expectError(.invalidTrailer, Self.file(objects: [[0x08]], top: 5))
    }

    @Test("a date that is NaN or infinite is refused both ways (found by the fuzzer)")
    func nonFiniteDates() {
        // The fuzzer's input: an array whose date object holds the bits of a NaN.
        let found = bytes(
            hex: "62706c6973743030a80102030405060708100010ff110100120001000033ffffffffffffffff1280"
                + "00000000000000137fffffffffffffff140000000000000000ffffffffffffffff08111315181d26"
                + "2f380000000000000101000000000000000900000000000000000000000000000049"
        )
        Self.expectError(.invalidDate, found)
        Self.expectError(.invalidDate, Self.file(objects: [[0x33, 0x7F, 0xF0, 0, 0, 0, 0, 0, 0]]))
        let error = #expect(throws: BatonCoreError.self) {
            try BinaryPropertyListEncoder.encode(.date(Date(timeIntervalSinceReferenceDate: .nan)))
        }
        #expect(error?.code == .unrepresentable)
    }

    @Test("UID objects (NSKeyedArchiver output) are rejected with their own error")
    func rejectsKeyedArchives() {
        Self.expectError(.keyedArchiverNotSupported, Self.file(objects: [[0xA1, 1], [0x80, 0x01]]))
    }

    @Test("a container that contains itself is a cycle, not a stack overflow")
    func cycles() {
        Self.expectError(.cycle, Self.file(objects: [[0xA1, 0]]))
        Self.expectError(.cycle, Self.file(objects: [[0xA1, 1], [0xD1, 2, 0], [0x51, 0x6B]]))
    }

    @Test("shared references cannot expand a small file into a huge tree")
    func billionLaughs() {
        // 30 arrays, each holding the next one twice: 2^30 values from a 200-byte file.
        var objects: [[UInt8]] = (0..<29).map { [0xA2, UInt8($0 + 1), UInt8($0 + 1)] }
        objects.append([0x08])
        Self.expectError(.tooManyObjects, Self.file(objects: objects))
    }

    @Test("nesting up to the limit decodes; one level past it is tooDeep")
    func depthLimit() throws {
        let limits = PropertyListLimits.default
        let atLimit = try BinaryPropertyListEncoder.encode(Fixtures.nested(depth: limits.maximumDepth))
        #expect(try BinaryPropertyListDecoder.decode(atLimit).nestingDepth == limits.maximumDepth)
        let deeper = try BinaryPropertyListEncoder.encode(
            Fixtures.nested(depth: limits.maximumDepth + 1),
            limits: PropertyListLimits(maximumDepth: limits.maximumDepth + 1)
        )
        Self.expectError(.tooDeep, deeper)
        // The encoder refuses what the decoder would refuse.
        let error = #expect(throws: BatonCoreError.self) {
            try BinaryPropertyListEncoder.encode(Fixtures.nested(depth: limits.maximumDepth + 1))
        }
        #expect(error?.code == .tooDeep)
    }

    @Test("input above the size limit is refused before it is parsed")
    func inputSizeLimit() throws {
        let data = try BinaryPropertyListEncoder.encode(.data(Data(count: 2000)))
        Self.expectError(.inputTooLarge, data, limits: PropertyListLimits(maximumInputBytes: 1000))
    }

    @Test("1-byte references address at most 256 objects: wider ones are used beyond")
    func referenceWidths() throws {
        let value = PropertyList.array((0..<70_000).map { .string("s\($0)") })
        let data = try BinaryPropertyListEncoder.encode(value)
        #expect(data[data.count - 32 + 7] == 4, "70,001 objects need 4-byte references")
        #expect(try BinaryPropertyListDecoder.decode(data) == value)
    }
}

extension Data {
    fileprivate func windows(ofCount count: Int) -> [Data] {
        guard self.count >= count else { return [] }
        return (0...(self.count - count)).map { self[(startIndex + $0)..<(startIndex + $0 + count)] }
    }
}
