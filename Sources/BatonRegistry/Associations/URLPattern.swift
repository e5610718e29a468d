/// The wildcard patterns of association files: `*` matches any run of characters (also none), `?` exactly one.
/// The whole text must match.
enum URLPattern {
    /// Whether `pattern` matches all of `text`. Runs in O(pattern × text) at worst (backtracking to the last `*`
    /// only), so a hostile pattern cannot make it exponential.
    static func matches(_ pattern: String, _ text: String, caseSensitive: Bool = true) -> Bool {
        let pattern = Array((caseSensitive ? pattern : pattern.lowercased()).unicodeScalars)
        let text = Array((caseSensitive ? text : text.lowercased()).unicodeScalars)
        var p = 0
        var t = 0
        var star: Int?
        var resume = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "?" || pattern[p] == text[t] {
                p += 1
                t += 1
            } else if p < pattern.count, pattern[p] == "*" {
                star = p
                resume = t
                p += 1
            } else if let starIndex = star {
                p = starIndex + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// Percent-encoded text in one canonical form: escapes with uppercase hex, and any non-ASCII character
    /// encoded as UTF-8 escapes, so `%e1%ba%93`, `%E1%BA%93` and `ẓ` compare equal.
    static func canonicalPercentEncoding(_ text: String) -> String {
        var result = ""
        let bytes = Array(text.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, isHex(bytes[index + 1]), isHex(bytes[index + 2]) {
                result += "%" + String(UnicodeScalar(bytes[index + 1])).uppercased() + String(UnicodeScalar(bytes[index + 2])).uppercased()
                index += 3
            } else if byte >= 0x80 {
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
                index += 1
            } else {
                result.unicodeScalars.append(UnicodeScalar(byte))
                index += 1
            }
        }
        return result
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}
