import BatonCore
import BatonDBus
import Foundation
import Testing

/// The property-list <-> D-Bus table of docs/PROTOCOL.md §10, row by row, both ways (issue 28 item 1).
@Suite struct DBusPropertyListMappingTests {
    let mapping = DBusPropertyListMapping()
    static let when = Date(timeIntervalSinceReferenceDate: 786_000_000.123_456_7)
    static let id = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    static let page = URL(string: "https://example.com/recipes/42?step=3#top")!

    /// Each property-list case, the D-Bus value it is written as, in the table's order.
    static let written: [(PropertyList, DBusValue)] = [
        (.string("Crème brûlée"), .string("Crème brûlée")),
        (.integer(-5), .int64(-5)),
        (.unsignedInteger(.max), .uint64(.max)),
        (.real(1.5), .double(1.5)),
        (.bool(true), .boolean(true)),
        (.data(Data([0, 1, 255])), .bytes(Data([0, 1, 255]))),
        (.array(["a", 2]), .array(.variant, [.variant(.string("a")), .variant(.int64(2))])),
        (.dictionary(["b": 1, "a": "x"]), .dictionary(key: .string, value: .variant, [
            DBusDictionaryEntry(.string("a"), .variant(.string("x"))), DBusDictionaryEntry(.string("b"), .variant(.int64(1))),
        ])),
        (.date(when), .structure([.string("date"), .variant(.double(786_000_000.123_456_7))])),
        (.url(page), .structure([.string("url"), .variant(.string("https://example.com/recipes/42?step=3#top"))])),
        (.uuid(id), .structure([.string("uuid"), .variant(.string("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"))])),
        (.set(["only"]), .structure([.string("set"), .variant(.array(.variant, [.variant(.string("only"))]))])),
        (.null, .structure([.string("null"), .variant(.string(""))])),
    ]

    @Test("every property-list type is written as the table says, and read back as itself", arguments: written.indices)
    func propertyListRow(_ row: Int) throws {
        let (value, dbus) = Self.written[row]
        #expect(try mapping.dbusValue(value) == dbus)
        #expect(try mapping.propertyList(from: dbus) == value)
    }

    /// Each D-Bus type arriving, and the property-list value it becomes.
    static let read: [(DBusValue, PropertyList)] = [
        (.byte(200), .integer(200)),
        (.boolean(false), .bool(false)),
        (.int16(-300), .integer(-300)),
        (.uint16(65_535), .integer(65_535)),
        (.int32(.min), .integer(Int64(Int32.min))),
        (.uint32(.max), .integer(Int64(UInt32.max))),
        (.int64(.min), .integer(.min)),
        (.uint64(7), .integer(7)),
        (.uint64(.max), .unsignedInteger(.max)),
        (.double(-0.25), .real(-0.25)),
        (.double(.nan), .real(.nan)),
        (.string(""), .string("")),
        (.objectPath("/org/baton/Recipe_1"), .string("/org/baton/Recipe_1")),
        (.signature("a{sv}"), .string("a{sv}")),
        (.bytes(Data("hi".utf8)), .data(Data("hi".utf8))),
        (.array(.byte, [.byte(104), .byte(105)]), .data(Data("hi".utf8))),
        (.array(.string, [.string("a"), .string("b")]), .array(["a", "b"])),
        (.array(.int32, []), .array([])),
        (.array(.array(.uint16), [.array(.uint16, [.uint16(1)])]), .array([[1]])),
        (.dictionary(key: .string, value: .string, [DBusDictionaryEntry(.string("k"), .string("v"))]), .dictionary(["k": "v"])),
        (.dictionary(key: .objectPath, value: .int32, [DBusDictionaryEntry(.objectPath("/a"), .int32(1))]), .dictionary(["/a": 1])),
        (.structure([.int32(1), .string("two")]), .array([1, "two"])),
        (.structure([.string("only")]), .array(["only"])),
        (.variant(.variant(.variant(.string("deep")))), .string("deep")),
        (.structure([.string("set"), .variant(.array(.int32, [.int32(1), .int32(1), .int32(2)]))]), .set([1, 2])),
        (.structure([.string("null"), .variant(.boolean(false))]), .null),
        (.structure([.string("uuid"), .variant(.string("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))]), .uuid(id)),
    ]

    @Test("every D-Bus type arriving becomes the table's property-list value", arguments: read.indices)
    func dbusRow(_ row: Int) throws {
        let (dbus, value) = Self.read[row]
        #expect(try mapping.propertyList(from: dbus) == value)
        // What was read is written back as the table's own form, and reads as the same value again.
        #expect(try mapping.propertyList(from: mapping.dbusValue(value)) == value)
    }

    @Test func userInfoRoundTrip() throws {
        let userInfo: [String: PropertyList] = [
            "recipe": "Tarte Tatin", "step": 3, "scroll": 0.42, "favourite": true, "photo": .data(Data(repeating: 7, count: 1000)),
            "opened": .date(Self.when), "source": .url(Self.page), "id": .uuid(Self.id), "tags": .set(["apple", "pastry"]),
            "note": .null, "huge": .unsignedInteger(.max),
            "steps": [["text": "Peel", "minutes": 10], ["text": "Bake", "minutes": 40, "at": .date(Self.when)]],
            "a.b c": "a key that is no identifier", "": "the empty key",
        ]
        let dbus = try mapping.dbusValue(userInfo: userInfo)
        #expect(dbus.type == .dictionary(key: .string, value: .variant))
        #expect(try mapping.userInfo(from: dbus) == userInfo)
    }

    /// docs/PROTOCOL.md §10's example, as GLib prints it:
    /// `{'opened': <('date', <785872800.0>)>, 'recipe': <'Tarte Tatin'>, 'scroll': <0.5>, 'step': <int64 3>, 'tags': <('set', <[<'apple'>]>)>}`
    @Test func protocolExample() throws {
        let opened = try Date("2025-11-26T18:00:00Z", strategy: .iso8601)
        let userInfo: [String: PropertyList] = ["recipe": "Tarte Tatin", "step": 3, "scroll": 0.5, "opened": .date(opened), "tags": .set(["apple"])]
        func entry(_ key: String, _ value: DBusValue) -> DBusDictionaryEntry { DBusDictionaryEntry(.string(key), .variant(value)) }
        let expected = DBusValue.dictionary(key: .string, value: .variant, [
            entry("opened", .structure([.string("date"), .variant(.double(785_872_800))])),
            entry("recipe", .string("Tarte Tatin")),
            entry("scroll", .double(0.5)),
            entry("step", .int64(3)),
            entry("tags", .structure([.string("set"), .variant(.array(.variant, [.variant(.string("apple"))]))])),
        ])
        #expect(try mapping.dbusValue(userInfo: userInfo) == expected)
        #expect(try mapping.userInfo(from: expected) == userInfo)
    }

    @Test func keysAreWrittenSorted() throws {
        guard case .dictionary(_, _, let entries) = try mapping.dbusValue(userInfo: ["b": 1, "c": 2, "a": 3]) else {
            Issue.record("not a dictionary")
            return
        }
        #expect(entries.map(\.key) == [.string("a"), .string("b"), .string("c")])
    }

    @Test func keyPathOfAFileDescriptor() {
        let photo = DBusValue.dictionary(key: .string, value: .variant, [DBusDictionaryEntry(.string("when"), .variant(.unixFD(0)))])
        let photos = DBusValue.array(.variant, (0..<4).map { $0 == 3 ? .variant(photo) : .variant(.int32(0)) })
        let userInfo = DBusValue.dictionary(key: .string, value: .variant, [DBusDictionaryEntry(.string("photos"), .variant(photos))])
        let error = dbusError { _ = try mapping.userInfo(from: userInfo) }
        #expect(error?.code == .unmappable)
        #expect(error?.message == "userInfo.photos[3].when: a D-Bus 'h' (file descriptor) has no property-list type")
        #expect(error?.keyPath == DBusKeyPath(root: "userInfo", [.key("photos"), .index(3), .key("when")]))
    }

    @Test("what does not map is a typed error naming its key path", arguments: [
        (DBusValue.variant(.structure([.string("date"), .variant(.string("yesterday"))])), DBusValueError.Code.invalidTaggedValue, "userInfo.k: a 'date' holds"),
        (.variant(.structure([.string("colour"), .variant(.string("red"))])), .invalidTaggedValue, "userInfo.k: unknown tag \"colour\""),
        (.variant(.structure([.string("url"), .variant(.string(""))])), .invalidTaggedValue, "userInfo.k: \"\" is not a URL"),
        (.variant(.structure([.string("uuid"), .variant(.string("nope"))])), .invalidTaggedValue, "userInfo.k: \"nope\" is not a UUID"),
        (.variant(.structure([.string("date"), .variant(.double(.infinity))])), .invalidTaggedValue, "userInfo.k: a 'date' holds"),
        (.variant(.dictionary(key: .int32, value: .string, [])), .unmappable, "userInfo.k: a dictionary keyed by 'i'"),
        (.variant(.array(.string, [.string("a"), .int32(1)])), .typeMismatch, "userInfo.k[1]: a 'i' where its container declares 's'"),
        (.variant(.array(.variant, [.variant(.string("a\u{0}b"))])), .invalidString, "userInfo.k[0]: a string holding a NUL"),
        (.variant(.objectPath("/a//b")), .invalidString, "userInfo.k: \"/a//b\" is not a D-Bus object path"),
        (.variant(.signature("a{vs}")), .invalidSignature, "userInfo.k: signature"),
        (.variant(.structure([])), .typeMismatch, "userInfo.k: an empty structure"),
        (.variant(.array(.dictionary(key: .variant, value: .string), [])), .invalidSignature, "userInfo.k: signature \"aa{vs}\""),
        (.string("not in a variant"), .typeMismatch, "userInfo.k: a 's' where its container declares 'v'"),
    ])
    func unmappable(_ value: DBusValue, _ code: DBusValueError.Code, _ start: String) {
        let userInfo = DBusValue.dictionary(key: .string, value: .variant, [DBusDictionaryEntry(.string("k"), value)])
        let error = dbusError { _ = try mapping.userInfo(from: userInfo) }
        #expect(error?.code == code)
        #expect(error?.message.hasPrefix(start) == true, "\(String(describing: error))")
    }

    @Test func duplicateKeysAndOddKeys() {
        let twice = DBusValue.dictionary(key: .string, value: .variant, [
            DBusDictionaryEntry(.string("a.b"), .variant(.int32(1))), DBusDictionaryEntry(.string("a.b"), .variant(.int32(2))),
        ])
        let error = dbusError { _ = try mapping.userInfo(from: twice) }
        #expect(error?.code == .duplicateKey)
        #expect(error?.message == "userInfo[\"a.b\"]: the key is there twice")
        let notADictionary = dbusError { _ = try mapping.userInfo(from: .array(.string, [])) }
        #expect(notADictionary?.code == .unmappable)
        #expect(notADictionary?.message == "userInfo: a userInfo is an 'a{sv}', not a 'as'")
    }

    @Test func writingRefusesWhatDBusCannotCarry() {
        let nul = dbusError { _ = try mapping.dbusValue(userInfo: ["photos": [["caption": "a\u{0}b"]]]) }
        #expect(nul?.code == .invalidString)
        #expect(nul?.message.hasPrefix("userInfo.photos[0].caption: a string holding a NUL") == true)
        let key = dbusError { _ = try mapping.dbusValue(userInfo: ["bad\u{0}key": 1]) }
        #expect(key?.code == .invalidString)
        let date = dbusError { _ = try mapping.dbusValue(userInfo: ["when": .date(Date(timeIntervalSinceReferenceDate: .nan))]) }
        #expect(date?.code == .invalidTaggedValue)
        #expect(date?.message.hasPrefix("userInfo.when: ") == true)
    }
}
