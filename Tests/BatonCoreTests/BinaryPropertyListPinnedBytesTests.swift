import BatonCore
import Foundation
import Testing

/// The encoder's output pinned byte for byte (issue 29 item 5): the figures were taken from the encoder as it was
/// before the codec was made faster, so a faster encoder that writes other bytes fails here, not on another device.
@Suite("Binary property lists: pinned bytes")
struct BinaryPropertyListPinnedBytesTests {
    /// FNV-1a (64 bits) of the bytes: a short pin for outputs too long to spell out.
    static func digest(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

    /// A shopping list of `count` items, as `baton bench plist` builds its userInfo (BenchmarkData in BatonBench).
    ///
    /// A copy on purpose: the pins hold the bytes the figures were measured on, even if the bench's data changes.
    static func shoppingList(_ count: Int) -> PropertyList {
        let names = [
            "Milk", "Sourdough bread", "Free-range eggs", "Bananas", "Coffee beans", "Olive oil", "Tomatoes", "Basil",
            "Parmesan", "Spaghetti", "Greek yoghurt", "Blueberries", "Dark chocolate", "Sparkling water", "Lemons",
            "Garlic", "Crème fraîche", "Jalapeños", "Rice", "Oat milk",
        ]
        func item(_ index: Int) -> PropertyList {
            let name = names[index % names.count]
            return [
                "id": .string("item-\(index)"),
                "name": .string(index < names.count ? name : "\(name) \(index / names.count)"),
                "quantity": .integer(Int64(1 + index % 4)),
                "price": .real(Double(100 + index * 37 % 900) / 100),
                "done": .bool(index % 3 == 0),
                "added": .date(Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(index) * 61)),
                "note": index % 5 == 0 ? "organic if they have it" : "",
            ]
        }
        return [
            "version": 2,
            "listID": "5D1E0C52-8F5B-4D7A-9C1E-3B2A1F0E9D8C",
            "title": "Groceries for the weekend",
            "updated": .date(Date(timeIntervalSinceReferenceDate: 700_000_000)),
            "items": .array((0..<count).map(item)),
            "editing": ["itemID": "item-3", "field": "quantity", "selection": [0, 1]],
        ]
    }

    /// The shopping list whose encoding is closest above `encodedSize` bytes, found as the bench finds it.
    static func userInfo(encodedSize: Int) -> PropertyList {
        func size(_ count: Int) -> Int { (try? BinaryPropertyListEncoder.encode(shoppingList(count)).count) ?? 0 }
        var low = 1
        var high = 1
        while size(high) < encodedSize { high *= 2 }
        while low < high {
            let middle = (low + high) / 2
            if size(middle) < encodedSize { low = middle + 1 } else { high = middle }
        }
        return shoppingList(low)
    }

    /// Every scalar width and marker the encoder writes, counts from 15 on, non-ASCII and composed/decomposed strings.
    static func everyKind() throws -> PropertyList {
        let url = try #require(URL(string: "https://example.com/a?b=c#d"))
        let uuid = try #require(UUID(uuidString: "5D1E0C52-8F5B-4D7A-9C1E-3B2A1F0E9D8C"))
        return [
            "integers": [0, 1, 255, 256, 65_535, 65_536, 4_294_967_295, 4_294_967_296, -1, .integer(Int64.min)],
            "unsigned": .unsignedInteger(UInt64.max),
            "reals": [0.5, -1e300, .real(Double.infinity)],
            "bools": [true, false],
            "null": .null,
            "date": .date(Date(timeIntervalSinceReferenceDate: -1.25)),
            "data": .data(Data((0..<40).map { UInt8($0) })),
            "strings": ["", "ascii", "Crème", "Cre\u{300}me", "K", "\u{212A}", "😀 emoji", .string(String(repeating: "long ", count: 20))],
            "url": .url(url),
            "uuid": .uuid(uuid),
            "many": .array((0..<300).map { .integer(Int64($0 % 7)) }),
            "nested": ["z": ["y": ["x": "Crème"]], "a": .array([])],
        ]
    }

    @Test("the bench's 3 KB userInfo encodes to the same bytes as before (issue 29 item 5)")
    func benchUserInfo() throws {
        let data = try BinaryPropertyListEncoder.encode(Self.userInfo(encodedSize: 3 * 1024))
        #expect(data.count == 3204)
        #expect(Self.digest(data) == "a34cbddefb107fd")
        #expect(try BinaryPropertyListDecoder.decode(data) == Self.userInfo(encodedSize: 3 * 1024))
    }

    @Test("a 256 KB shopping list encodes to the same bytes as before (issue 29 item 5)")
    func largeUserInfo() throws {
        let data = try BinaryPropertyListEncoder.encode(Self.userInfo(encodedSize: 256 * 1024))
        #expect(data.count == 262_239)
        #expect(Self.digest(data) == "cbcfaaa9141cb5cf")
    }

    @Test("every kind of value encodes to the same bytes as before (issue 29 item 5)")
    func everyKindOfValue() throws {
        let data = try BinaryPropertyListEncoder.encode(try Self.everyKind())
        #expect(data.count == 2487)
        #expect(Self.digest(data) == "2afba5e3011d3b")
    }
}
