import BatonCore
import Foundation

/// Values shared by the codec and interop tests. `Fixtures/plist_interop.py` builds the same values in Python;
/// keep the two in step.
enum Fixtures {
    /// 2001-01-01T00:00:00Z plus `seconds`.
    static func date(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0, _ second: Int = 0) -> Date {
        var components = DateComponents()
        components.year = year
        components.month = month
        components.day = day
        components.hour = hour
        components.minute = minute
        components.second = second
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar.date(from: components) ?? Date.distantPast
    }

    /// Every classic scalar type at its edges: what every reader and writer must agree on.
    static let scalars: PropertyList = [
        "string": "hello",
        "empty": "",
        "unicode": "héllo wörld 😀 𝄞 中文 \u{10FFFF}",
        "markup": "a < b && c > d \"quoted\" 'single'",
        "int_zero": 0,
        "int_small": 42,
        "int_neg": -1,
        "int_255": 255,
        "int_256": 256,
        "int_u32": .integer(1 << 32),
        "int64_min": .integer(Int64.min),
        "int64_max": .integer(Int64.max),
        "uint64_max": .unsignedInteger(UInt64.max),
        "real": 3.5,
        "real_small": 1e-300,
        "real_negative_zero": -0.0,
        "nan": .real(.nan),
        "inf": .real(.infinity),
        "ninf": .real(-.infinity),
        "true": true,
        "false": false,
        "data": .data(Data(0...255)),
        "empty_data": .data(Data()),
        "date_1900": .date(date(1900, 1, 1)),
        "date_1969": .date(date(1969, 7, 20, 20, 17, 40)),
        "date_2001": .date(date(2001, 1, 1)),
        "date_2040": .date(date(2040, 2, 29, 12)),
        "date_2262": .date(date(2262, 4, 11, 23, 47, 16)),
        "date_9999": .date(date(9999, 12, 31, 23, 59, 59)),
        "empty_array": [],
        "empty_dict": [:],
    ]

    /// An array of 10,000 integers and strings.
    static let bigArray: PropertyList = .array((0..<10_000).map { $0 % 2 == 0 ? .integer(Int64($0)) : .string("s\($0)") })

    /// Arrays nested `depth` levels deep, the innermost holding one string.
    static func nested(depth: Int) -> PropertyList {
        var value: PropertyList = "deep"
        for _ in 0..<depth { value = [value] }
        return value
    }

    /// Dictionaries and arrays mixed, as a real userInfo looks.
    static let mixed: PropertyList = [
        "version": 2,
        "items": [
            ["name": "Milk", "quantity": 2, "done": false],
            ["name": "Crème fraîche", "quantity": 1, "done": true, "tags": ["dairy", "🥛"]],
        ],
        "selection": ["start": 3, "length": 0],
    ]

    /// The package root, found from this file's path.
    static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url
    }()

    /// `../shared/realworld` next to the package, as CI lays it out.
    static let realWorld = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/realworld")

    static func realWorldFiles(_ folder: String) -> [URL] {
        let directory = realWorld.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().map { directory.appendingPathComponent($0) }
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("baton-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// The hex spelling of bytes, for readable test vectors.
func hex(_ data: some Sequence<UInt8>) -> String {
    data.map { byte in
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }.joined()
}

func bytes(hex: String) -> Data {
    var data = Data()
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        data.append(UInt8(hex[index..<next], radix: 16) ?? 0)
        index = next
    }
    return data
}
