import Baton  // userInfo values to and from property lists (NSNumber, NSData, NSNull) live in the app library
import BatonCore
import Foundation
import Testing

@Suite("PropertyList value (A3)")
struct PropertyListTests {
    @Test("NaN equals NaN and integers compare across signed and unsigned")
    func equalityByValue() {
        #expect(PropertyList.real(.nan) == .real(.nan))
        #expect(PropertyList.real(.nan).hashValue == PropertyList.real(-.nan).hashValue)
        #expect(PropertyList.integer(5) == .unsignedInteger(5))
        #expect(PropertyList.integer(5).hashValue == PropertyList.unsignedInteger(5).hashValue)
        #expect(PropertyList.integer(-1) != .unsignedInteger(UInt64.max))
        #expect(PropertyList.integer(1) != .bool(true))
        #expect(PropertyList.integer(1) != .real(1))
    }

    @Test("A3: every property-list type converts from plain Swift values")
    func convertsSwiftValues() throws {
        let uuid = UUID()
        let url = try #require(URL(string: "https://example.com/list?id=1"))
        let date = Date(timeIntervalSinceReferenceDate: 12.5)
        let value = try PropertyList(any: [
            "string": "text", "int": 7, "uint64": UInt64.max, "int8": Int8(-3), "double": 2.5, "float": Float(0.5),
            "bool": true, "data": Data([1, 2]), "bytes": [UInt8]([3]), "date": date,
            "array": [1, "two"] as [Any], "dict": ["k": false] as [String: Any], "null": NSNull(),
            "set": Set<AnyHashable>(["a", "b"]), "url": url, "uuid": uuid, "nsnumber": NSNumber(value: 9),
            "nsbool": NSNumber(value: false), "optional": String?.none as Any,
        ] as [String: Any])
        #expect(value["string"] == "text")
        #expect(value["int"] == 7)
        #expect(value["uint64"] == .unsignedInteger(UInt64.max))
        #expect(value["int8"] == -3)
        #expect(value["double"] == 2.5)
        #expect(value["float"] == 0.5)
        #expect(value["bool"] == true)
        #expect(value["data"] == .data(Data([1, 2])))
        #expect(value["bytes"] == .data(Data([3])))
        #expect(value["date"] == .date(date))
        #expect(value["array"] == [1, "two"])
        #expect(value["dict"] == ["k": false])
        #expect(value["null"] == .null)
        #expect(value["set"] == .set(["a", "b"]))
        #expect(value["url"] == .url(url))
        #expect(value["uuid"] == .uuid(uuid))
        #expect(value["nsnumber"] == 9)
        #expect(value["nsbool"] == false, "an NSNumber boolean stays a boolean, not the integer 0")
        #expect(value["optional"] == .null)
    }

    @Test("A3: a value that is not a property-list type is an error naming where it is")
    func rejectsOtherTypes() {
        struct Cart {}
        let error = #expect(throws: BatonCoreError.self) {
            try PropertyList(any: ["items": [1, Cart()] as [Any]] as [String: Any])
        }
        #expect(error?.code == .unsupportedType)
        #expect(error?.message.contains("items[1]") == true)
        #expect(error?.message.contains("Cart") == true)

        let keyError = #expect(throws: BatonCoreError.self) {
            try PropertyList.dictionary(from: [1: "one"])
        }
        #expect(keyError?.code == .unsupportedType)
    }

    @Test("anyValue gives back what Foundation's serializer accepts")
    func anyValueRoundTrip() throws {
        let value: PropertyList = ["a": [1, 2.5, "x", true], "d": .data(Data([9])), "big": .unsignedInteger(UInt64.max)]
        let back = try PropertyList(any: value.anyValue)
        #expect(back == value)
        let foundation = try PropertyListSerialization.data(fromPropertyList: value.anyValue, format: .binary, options: 0)
        #expect(!foundation.isEmpty)
    }

    @Test("nodeCount and nestingDepth describe the tree")
    func treeMeasures() {
        #expect(PropertyList.string("x").nodeCount == 1)
        #expect((["a": [1, 2]] as PropertyList).nodeCount == 5)
        #expect(Fixtures.nested(depth: 7).nestingDepth == 7)
    }

    @Test("formattedDescription shows every type, keys sorted")
    func printing() {
        let text = (["b": [1, "two"], "a": .data(Data([0xAB])), "c": .null] as PropertyList).formattedDescription
        #expect(
            text == """
                {
                  "a" => {length = 1, bytes = 0xab}
                  "b" => [
                    0 => 1
                    1 => "two"
                  ]
                  "c" => null
                }

                """
        )
    }
}

@Suite("PropertyList conversion edge cases")
struct PropertyListConversionEdgeTests {
    @Test("an empty array stays an array: empty [Any] must not pass for Data or [UInt8]")
    func emptyArrayIsNotData() throws {
        #expect(try PropertyList(any: [Any]()) == [])
        #expect(try PropertyList(any: ["icons": [Any]()] as [String: Any]) == ["icons": []])
        #expect(try PropertyList(any: Data()) == .data(Data()))
        #expect(try PropertyList(any: [UInt8]()) == .data(Data()))
    }
}
