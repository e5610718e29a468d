import BatonCore
import BatonDBus
import Foundation
import Testing

/// Hostile values from an app (issue 28, "Show": 1 MB strings, 100k-element arrays, deep variants): each is a typed
/// error, found without reading the rest of the value, so it costs little time and memory.
@Suite struct DBusMappingLimitsTests {
    let mapping = DBusPropertyListMapping()

    func userInfo(_ key: String, _ value: DBusValue) -> DBusValue {
        .dictionary(key: .string, value: .variant, [DBusDictionaryEntry(.string(key), .variant(value))])
    }

    /// The error `body` throws and how long it took.
    func timed(_ body: () throws -> Void) -> (DBusValueError?, Duration) {
        let clock = ContinuousClock()
        var error: DBusValueError?
        let elapsed = clock.measure { error = dbusError(body) }
        return (error, elapsed)
    }

    @Test func defaultsAreThePayloadsLimits() {
        #expect(DBusMappingLimits.default.maximumTotalBytes == ActivityPayload.maximumEncodedSize)
        #expect(DBusMappingLimits.default.maximumStringBytes == ActivityPayload.maximumEncodedSize)
        #expect(DBusMappingLimits.default.maximumDepth == 64)
        #expect(DBusMappingLimits.default.maximumValues == 65_536)
    }

    @Test func megabyteString() {
        let megabyte = String(repeating: "x", count: 1 << 20)
        // At the string limit, but with its key and dictionary over the payload's 1 MiB in all.
        let (error, elapsed) = timed { _ = try mapping.userInfo(from: userInfo("text", .string(megabyte))) }
        #expect(error?.code == .tooLarge)
        #expect(error?.message.hasPrefix("userInfo.text: ") == true)
        #expect(elapsed < .seconds(1))
        let over = dbusError { _ = try mapping.userInfo(from: userInfo("text", .string(megabyte + "x"))) }
        #expect(over?.code == .stringTooLong)
        // The same string written from a property list.
        #expect(dbusError { _ = try mapping.dbusValue(userInfo: ["text": .string(megabyte)]) }?.code == .tooLarge)
        // A megabyte key, printed short.
        let key = dbusError { _ = try mapping.userInfo(from: userInfo(megabyte + "x", .int32(1))) }
        #expect(key?.code == .stringTooLong)
        #expect((key?.message.count ?? .max) < 200)
    }

    @Test func hundredThousandElements() throws {
        let elements = [DBusValue](repeating: .string("s"), count: 100_000)
        let (error, elapsed) = timed { _ = try mapping.userInfo(from: userInfo("list", .array(.string, elements))) }
        #expect(error?.code == .tooManyValues)
        #expect(error?.message.hasPrefix("userInfo.list: 100000 elements") == true)
        #expect(elapsed < .seconds(1))
        let variants = [DBusValue](repeating: .variant(.int32(1)), count: 100_000)
        #expect(dbusError { _ = try mapping.userInfo(from: userInfo("list", .array(.variant, variants))) }?.code == .tooManyValues)
        let plist = PropertyList.array(Array(repeating: 1, count: 100_000))
        #expect(dbusError { _ = try mapping.dbusValue(userInfo: ["list": plist]) }?.code == .tooManyValues)
        // Data is one value however long: 100,000 bytes map.
        #expect(throws: Never.self) { try mapping.userInfo(from: userInfo("photo", .bytes(Data(count: 100_000)))) }
        // Many small containers, none over the limit alone, are counted together.
        let nested = DBusValue.array(.array(.int32), Array(repeating: .array(.int32, Array(repeating: .int32(0), count: 1000)), count: 100))
        #expect(dbusError { _ = try mapping.userInfo(from: userInfo("grid", nested)) }?.code == .tooManyValues)
    }

    @Test func largestUserInfoMapsBothWays() throws {
        // 64,998 integers and the array and dictionary around them: just under the 65,536 values, read and written whole.
        let userInfo: [String: PropertyList] = ["list": .array((0..<64_998).map { .integer(Int64($0)) })]
        let clock = ContinuousClock()
        let start = clock.now
        let dbus = try mapping.dbusValue(userInfo: userInfo)
        #expect(try mapping.userInfo(from: dbus) == userInfo)
        #expect(clock.now - start < .seconds(5))
    }

    @Test func deepVariants() throws {
        var deep = DBusValue.string("bottom")
        for _ in 0..<2000 { deep = .variant(deep) }
        let (error, elapsed) = timed { _ = try mapping.userInfo(from: userInfo("deep", deep)) }
        #expect(error?.code == .tooDeep)
        #expect(error?.message.hasPrefix("userInfo.deep: inside more than 64 D-Bus containers") == true)
        #expect(elapsed < .seconds(1))
        // 59 containers in all (the userInfo's array and dict entry, then 57 variants) map.
        var fits = DBusValue.string("bottom")
        for _ in 0..<56 { fits = .variant(fits) }
        #expect(try mapping.userInfo(from: userInfo("deep", fits)) == ["deep": "bottom"])
    }

    @Test func deepArraysAndStructuresWithoutVariants() {
        // 33 structures nested with no variant between: more than one signature may hold.
        var structures = DBusValue.int32(1)
        for _ in 0..<33 { structures = .structure([structures]) }
        #expect(dbusError { _ = try mapping.userInfo(from: userInfo("s", structures)) }?.code == .tooDeep)
        var arrays = DBusValue.int32(1)
        var type = DBusType.int32
        for _ in 0..<33 {
            arrays = .array(type, [arrays])
            type = .array(type)
        }
        #expect(dbusError { _ = try mapping.userInfo(from: userInfo("a", arrays)) }?.code == .invalidSignature)
    }

    @Test func deepPropertyLists() throws {
        // Each dictionary is three D-Bus containers deep (a, {, v): 21 fit in 64, 22 do not.
        func nested(_ levels: Int) -> [String: PropertyList] {
            var value: [String: PropertyList] = ["leaf": 1]
            for _ in 1..<levels { value = ["d": .dictionary(value)] }
            return value
        }
        let fits = nested(21)
        #expect(try mapping.userInfo(from: mapping.dbusValue(userInfo: fits)) == fits)
        let error = dbusError { _ = try mapping.dbusValue(userInfo: nested(22)) }
        #expect(error?.code == .tooDeep)
        #expect(error?.message.hasPrefix("userInfo" + String(repeating: ".d", count: 21) + ": ") == true)
    }

    @Test func smallerLimits() {
        let strict = DBusPropertyListMapping(limits: DBusMappingLimits(maximumDepth: 6, maximumValues: 3, maximumStringBytes: 4, maximumTotalBytes: 39))
        #expect(dbusError { _ = try strict.dbusValue(userInfo: ["a": 1, "b": 2, "c": 3]) }?.code == .tooManyValues)
        #expect(dbusError { _ = try strict.dbusValue(userInfo: ["a": "hello"]) }?.code == .stringTooLong)
        #expect(dbusError { _ = try strict.dbusValue(userInfo: ["abcd": "abcd", "efgh": "efgh"]) }?.code == .tooLarge)
        #expect(dbusError { _ = try strict.dbusValue(userInfo: ["a": [[1]]]) }?.code == .tooDeep)
    }
}
