import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads the fields of one message (a property-list dictionary with its type under `t`), turning every missing or
/// mistyped field into a `malformedMessage` error that names it. Shared by the session and IPC messages.
struct MessageFields {
    let type: String
    let fields: [String: PropertyList]

    init(_ message: PropertyList) throws {
        guard let fields = message.dictionaryValue else {
            throw BatonProtocolError(.malformedMessage, "a message must be a dictionary")
        }
        guard let type = fields["t"]?.stringValue else {
            throw BatonProtocolError(.malformedMessage, "a message must name its type under \"t\"")
        }
        self.type = type
        self.fields = fields
    }

    func missing(_ key: String, _ what: String) -> BatonProtocolError {
        BatonProtocolError(.malformedMessage, "\(type) message: \"\(key)\" must be \(what)")
    }

    func string(_ key: String, maximumLength: Int = 4_096) throws -> String {
        guard let value = fields[key]?.stringValue, value.utf8.count <= maximumLength else {
            throw missing(key, "a string of at most \(maximumLength) bytes")
        }
        return value
    }

    func optionalString(_ key: String, maximumLength: Int = 4_096) throws -> String? {
        guard fields[key] != nil else { return nil }
        return try string(key, maximumLength: maximumLength)
    }

    func number(_ key: String) throws -> UInt64 {
        switch fields[key] {
        case .integer(let value) where value >= 0: return UInt64(value)
        case .unsignedInteger(let value): return value
        default: throw missing(key, "a non-negative integer")
        }
    }

    /// A stream window or credit: 1 byte to ``StreamFlow/maximumWindow`` (a peer cannot make the other buffer more).
    func window(_ key: String) throws -> UInt64 {
        let value = try number(key)
        guard (1...UInt64(StreamFlow.maximumWindow)).contains(value) else {
            throw missing(key, "from 1 to \(StreamFlow.maximumWindow) bytes")
        }
        return value
    }

    func optionalNumber(_ key: String) throws -> UInt64? {
        guard fields[key] != nil else { return nil }
        return try number(key)
    }

    func data(_ key: String) throws -> Data {
        guard let value = fields[key]?.dataValue else { throw missing(key, "data") }
        return value
    }

    /// Data of exactly `count` bytes (a nonce, a secret).
    func data(_ key: String, count: Int) throws -> Data {
        let value = try data(key)
        guard value.count == count else { throw missing(key, "\(count) bytes of data") }
        return value
    }

    /// An optional port number: 1 to 65535 when present.
    func port(_ key: String) throws -> Int? {
        guard let port = try optionalNumber(key) else { return nil }
        guard (1...65_535).contains(port) else { throw missing(key, "a port number") }
        return Int(port)
    }

    func bool(_ key: String) throws -> Bool {
        guard let value = fields[key]?.boolValue else { throw missing(key, "a boolean") }
        return value
    }

    /// An optional boolean: nil when absent, `malformedMessage` when of another type.
    func optionalBool(_ key: String) throws -> Bool? {
        guard fields[key] != nil else { return nil }
        return try bool(key)
    }

    func flag(_ key: String) -> Bool {
        fields[key]?.boolValue ?? false
    }

    func date(_ key: String) throws -> Date? {
        guard let value = fields[key] else { return nil }
        guard let date = value.dateValue else { throw missing(key, "a date") }
        return date
    }

    func dictionary(_ key: String) throws -> [String: PropertyList] {
        guard let value = fields[key]?.dictionaryValue else { throw missing(key, "a dictionary") }
        return value
    }

    func array(_ key: String) throws -> [PropertyList] {
        guard let value = fields[key]?.arrayValue else { throw missing(key, "an array") }
        return value
    }

    func unexpected() -> BatonProtocolError {
        BatonProtocolError(.malformedMessage, "unknown message type \(BatonCoreError.quoted(type))")
    }
}

/// `text` cut to at most `limit` UTF-8 bytes on a character boundary: what a sender does with free text (error
/// messages, titles) so that a receiver, which refuses longer strings, never sees one.
func bounded(_ text: String, _ limit: Int) -> String {
    guard text.utf8.count > limit else { return text }
    var result = ""
    var used = 0
    for character in text {
        let size = character.utf8.count
        guard used + size <= limit - 3 else { break }
        result.append(character)
        used += size
    }
    return result + "…"
}

/// Builds a message: its type under `t`, then the fields whose values are not nil.
func makeMessage(_ type: String, _ fields: [String: PropertyList?]) -> PropertyList {
    var all: [String: PropertyList] = ["t": .string(type)]
    for (key, value) in fields {
        if let value { all[key] = value }
    }
    return .dictionary(all)
}

extension PropertyList {
    /// A non-negative count or identifier.
    static func number(_ value: UInt64) -> PropertyList {
        value <= UInt64(Int64.max) ? .integer(Int64(value)) : .unsignedInteger(value)
    }
}
