import BatonDBus
import Foundation

/// Reads bytes as a D-Bus value tree, for the garbage test and the `dbus-plist` fuzzer (Fuzz/DBusPlistFuzzer.swift
/// compiles this file too): each byte picks what comes next, so every input is a tree and libFuzzer's mutations move
/// through trees rather than through parse errors.
///
/// Half the containers are built to match their declared types (so the mapping's paths that succeed are reached),
/// half at random (elements of other types, invalid types, NULs, unknown tags). Bounded whatever the input: at most
/// ``maximumNodes`` nodes built one by one and ``maximumDepth`` levels (below the Swift stack's reach), plus one array
/// that repeats an element up to 100,000 times, which costs one node to build but the mapping's whole limit to read.
struct DBusValueBuilder {
    static let maximumNodes = 2000
    static let maximumDepth = 80

    private let bytes: [UInt8]
    private var offset = 0
    private var nodes = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Strings that mean something to the mapping: tags, paths, signatures, a UUID, a URL, a NUL.
    static let strings = [
        "", "a", "date", "url", "uuid", "set", "null", "/", "/org/baton", "//x", "a{sv}", "a{vs}", "(", "x\u{0}y",
        "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "https://example.com/a?b#c", "é", "photos",
    ]

    static let basicTypes: [DBusType] = [
        .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .string, .objectPath, .signature, .unixFD,
    ]

    private mutating func next() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func count() -> Int { Int(next() % 5) }

    private mutating func string() -> String {
        let choice = next()
        if choice < 200 { return Self.strings[Int(choice) % Self.strings.count] }
        // Raw bytes, repaired as UTF-8 (a Swift string always is).
        let length = Int(next() % 32)
        return String(decoding: (0..<length).map { _ in next() }, as: UTF8.self)
    }

    /// A type: usually valid, sometimes one the specification refuses (a variant key, an empty structure).
    mutating func type(depth: Int = 0) -> DBusType {
        let choice = next()
        guard depth < 6, choice >= 100 else { return Self.basicTypes[Int(choice) % Self.basicTypes.count] }
        switch choice % 6 {
        case 0: return .variant
        case 1: return .array(type(depth: depth + 1))
        case 2: return .dictionary(key: choice & 0x40 == 0 ? .string : type(depth: depth + 1), value: type(depth: depth + 1))
        case 3: return .structure((0..<count()).map { _ in type(depth: depth + 1) })
        case 4: return .dictionary(key: .string, value: .variant)
        default: return .array(.variant)
        }
    }

    /// Any value, its containers' elements of any type.
    mutating func value(depth: Int = 0) -> DBusValue {
        nodes += 1
        let choice = next()
        if depth >= Self.maximumDepth || nodes >= Self.maximumNodes || offset >= bytes.count { return leaf(choice) }
        switch choice % 12 {
        case 0: return .variant(value(depth: depth + 1))
        case 1: return .array(type(), (0..<count()).map { _ in value(depth: depth + 1) })
        case 2:
            return .dictionary(key: type(), value: type(), (0..<count()).map { _ in
                DBusDictionaryEntry(value(depth: depth + 1), value(depth: depth + 1))
            })
        case 3: return .structure((0..<count()).map { _ in value(depth: depth + 1) })
        case 4: return .structure([.string(string()), .variant(value(depth: depth + 1))])
        case 5, 6: return value(of: type(), depth: depth)
        case 7 where choice == 7:
            // Rare (one byte value in 256), as it is the costliest node to map.
            let element = value(depth: depth + 1)
            let copies = Int(next()) << 9 | Int(next()) << 1
            return .array(.variant, Array(repeating: .variant(element), count: min(copies, 100_000)))
        default: return leaf(choice)
        }
    }

    /// A value of `type`, as a message would carry it (unless the type is itself invalid).
    mutating func value(of type: DBusType, depth: Int) -> DBusValue {
        nodes += 1
        let limited = depth >= Self.maximumDepth || nodes >= Self.maximumNodes
        switch type {
        case .variant: return .variant(limited ? .string(string()) : value(depth: depth + 1))
        case .array(let element):
            if element == .byte, next() & 1 == 0 { return .bytes(Data((0..<count()).map { _ in next() })) }
            return .array(element, limited ? [] : (0..<count()).map { _ in value(of: element, depth: depth + 1) })
        case .dictionary(let key, let value):
            return .dictionary(key: key, value: value, limited ? [] : (0..<count()).map { _ in
                DBusDictionaryEntry(self.value(of: key, depth: depth + 1), self.value(of: value, depth: depth + 1))
            })
        case .structure(let fields):
            if limited { return .structure(fields.map { _ in .string(string()) }) }
            return .structure(fields.map { value(of: $0, depth: depth + 1) })
        default: return basic(type)
        }
    }

    private mutating func leaf(_ choice: UInt8) -> DBusValue {
        basic(Self.basicTypes[Int(choice) % Self.basicTypes.count])
    }

    private mutating func basic(_ type: DBusType) -> DBusValue {
        let raw = (0..<8).reduce(UInt64(0)) { word, _ in word << 8 | UInt64(next()) }
        switch type {
        case .byte: return .byte(UInt8(truncatingIfNeeded: raw))
        case .boolean: return .boolean(raw & 1 == 1)
        case .int16: return .int16(Int16(truncatingIfNeeded: raw))
        case .uint16: return .uint16(UInt16(truncatingIfNeeded: raw))
        case .int32: return .int32(Int32(truncatingIfNeeded: raw))
        case .uint32: return .uint32(UInt32(truncatingIfNeeded: raw))
        case .int64: return .int64(Int64(bitPattern: raw))
        case .uint64: return .uint64(raw)
        case .double: return .double(Double(bitPattern: raw))
        case .objectPath: return .objectPath(string())
        case .signature: return .signature(string())
        case .unixFD: return .unixFD(UInt32(truncatingIfNeeded: raw))
        default: return .string(string())
        }
    }
}
