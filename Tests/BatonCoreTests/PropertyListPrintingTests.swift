import BatonCore
import Foundation
import Testing

/// `print(value)` and `"\(value)"` read as a property list (issue 24 part 7), not `BatonCore.PropertyList.integer(1)`.
@Suite("PropertyList prints as a property-list value, bounded (issue 24)")
struct PropertyListPrintingTests {
    @Test("scalars, arrays, dictionaries (keys sorted, odd keys quoted), sets, data, dates, URLs, UUIDs")
    func readable() throws {
        #expect("\(PropertyList.integer(1))" == "1")
        #expect(String(describing: PropertyList.string("text")) == "\"text\"")
        #expect(PropertyList.string("say \"hi\"\n").description == #""say \"hi\"\n""#)
        #expect(PropertyList.real(1.5).description == "1.5")
        #expect(PropertyList.bool(true).description == "true")
        #expect(PropertyList.null.description == "null")
        #expect(PropertyList.unsignedInteger(.max).description == "18446744073709551615")
        let list: PropertyList = ["items": ["Milk", "Eggs"], "version": 2, "two words": false]
        #expect(list.description == #"{items = ["Milk", "Eggs"]; "two words" = false; version = 2}"#)
        #expect(PropertyList.set([1, 2]).description == "set[1, 2]")
        #expect(PropertyList.data(Data([0x0a, 0xff])).description == "<0aff>")
        #expect(PropertyList.date(Date(timeIntervalSince1970: 0)).description.hasPrefix("1970-01-01T00:00:00"))
        #expect(PropertyList.url(try #require(URL(string: "https://example.com/a"))).description == "url(https://example.com/a)")
        let uuid = UUID()
        #expect(PropertyList.uuid(uuid).description == "uuid(\(uuid.uuidString))")
        // In Swift's own collections too (they print their elements' debugDescription).
        #expect("\([PropertyList.integer(1), "a"])" == #"[1, "a"]"#)
        #expect(!"\(list)".contains("PropertyList"))
    }

    @Test("huge values print in at most 1,000 characters, saying how much was left out")
    func bounded() {
        let many = PropertyList.array((0..<100_000).map { .integer(Int64($0)) })
        #expect(many.description.count <= PropertyList.printedLimit)
        #expect(many.description.contains("more]"), "\(many.description.suffix(40))")
        let long = PropertyList.string(String(repeating: "x", count: 1_000_000))
        #expect(long.description.count <= PropertyList.printedLimit)
        #expect(long.description.contains("(1000000 characters)"))
        let bytes = PropertyList.data(Data(count: 1 << 20))
        #expect(bytes.description.hasSuffix("1048576 bytes>"))
        var deep = PropertyList.integer(1)
        for _ in 0..<2_000 { deep = .array([deep]) }
        #expect(deep.description.count <= PropertyList.printedLimit)
    }
}
