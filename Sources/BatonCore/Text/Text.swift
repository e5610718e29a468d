// Small text helpers that FoundationEssentials lacks (Foundation's `trimmingCharacters(in:)` and
// `removingPercentEncoding` live in the full Foundation, which the agent does not link: docs/ARCHITECTURE.md,
// "A lean agent").

extension StringProtocol {
    /// The text without leading and trailing white space and line breaks (Unicode's, as `Character.isWhitespace`).
    package func trimmingWhitespace() -> String {
        trimming { $0.isWhitespace }
    }

    /// The text without leading and trailing characters that `drop` accepts.
    package func trimming(while drop: (Character) -> Bool) -> String {
        guard let first = firstIndex(where: { !drop($0) }), let last = lastIndex(where: { !drop($0) }) else { return "" }
        return String(self[first...last])
    }

    /// The text with each `%XX` replaced by the byte it names, read as UTF-8; nil when a `%` is not followed by two
    /// hex digits or the bytes are not UTF-8 (what Foundation's `removingPercentEncoding` answers).
    package var percentDecoded: String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// XML's entity references, for the readers of XML that FoundationEssentials lacks (property lists, Syncthing's
/// config.xml).
package enum XMLEntity {
    /// The UTF-8 of the character `&name;` stands for: the five predefined entities and character references
    /// (`#233`, `#xE9`); nil for anything else, NUL and numbers that are not Unicode scalars.
    package static func utf8(named name: String) -> [UInt8]? {
        switch name {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default:
            var value: UInt32?
            if name.hasPrefix("#x") || name.hasPrefix("#X") {
                value = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#") {
                value = UInt32(name.dropFirst(), radix: 10)
            }
            guard let value, value != 0, let scalar = Unicode.Scalar(value) else { return nil }
            return Array(String(Character(scalar)).utf8)
        }
    }
}
