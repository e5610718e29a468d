#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes ``PropertyList`` values as XML property lists, in the layout Apple's tools use (tab indentation,
/// sorted keys), readable by Foundation, Python's `plistlib` and Xcode.
///
/// Dates are written to the second, as the format allows no more. `null`, `set`, `url` and `uuid` values, strings
/// with characters XML 1.0 forbids, and dates outside years 1...9999 have no XML form and throw `unrepresentable`.
public enum XMLPropertyListEncoder {
    /// Encodes `value` as a complete XML document.
    /// - Throws: ``BatonCoreError`` `unrepresentable` naming the key path of the offending value, or `tooDeep`.
    public static func encode(_ value: PropertyList, limits: PropertyListLimits = .default) throws -> Data {
        var writer = XMLWriter(maximumDepth: limits.maximumDepth)
        writer.append(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        )
        try writer.write(value, indent: 0, path: [])
        writer.append("</plist>\n")
        return Data(writer.output)
    }
}

/// A readable location of a value inside a document, for error messages: `items[2].name`. A path of long or odd
/// keys is quoted and cut short, so a hostile key cannot make a huge message (issue 10).
package func describeKeyPath(_ path: [String]) -> String {
    guard !path.isEmpty else { return "the top-level value" }
    let joined = path.joined()
    let quoted = BatonCoreError.quoted(joined)
    return quoted == "\"\(joined)\"" ? joined : quoted
}

private struct XMLWriter {
    let maximumDepth: Int
    var output: [UInt8] = []

    init(maximumDepth: Int) {
        self.maximumDepth = maximumDepth
        output.reserveCapacity(4096)
    }

    mutating func append(_ text: String) {
        output.append(contentsOf: text.utf8)
    }

    mutating func indent(_ level: Int) {
        output.append(contentsOf: repeatElement(0x09, count: level))
    }

    mutating func element(_ name: String, _ text: String, indent level: Int) {
        indent(level)
        append("<\(name)>")
        append(text)
        append("</\(name)>\n")
    }

    mutating func write(_ value: PropertyList, indent level: Int, path: [String]) throws {
        switch value {
        case .string(let text):
            element("string", try escaped(text, path: path), indent: level)
        case .integer(let number):
            element("integer", String(number), indent: level)
        case .unsignedInteger(let number):
            element("integer", String(number), indent: level)
        case .real(let number):
            element("real", Self.realText(number), indent: level)
        case .bool(let flag):
            indent(level)
            append(flag ? "<true/>\n" : "<false/>\n")
        case .date(let date):
            guard let time = CivilTime(date) else {
                throw unrepresentable("date \(date.timeIntervalSince1970)s since 1970 is outside years 1...9999", path)
            }
            element("date", time.iso8601, indent: level)
        case .data(let bytes):
            indent(level)
            append("<data>\n")
            // 68 columns after the indent, as Apple's writer does for readable diffs.
            let encoded = bytes.base64EncodedString()
            var start = encoded.startIndex
            while start < encoded.endIndex {
                let end = encoded.index(start, offsetBy: 68, limitedBy: encoded.endIndex) ?? encoded.endIndex
                indent(level)
                append(String(encoded[start..<end]))
                output.append(0x0A)
                start = end
            }
            indent(level)
            append("</data>\n")
        case .array(let elements):
            try checkDepth(level, path)
            indent(level)
            guard !elements.isEmpty else { return append("<array/>\n") }
            append("<array>\n")
            for (index, element) in elements.enumerated() {
                try write(element, indent: level + 1, path: path + ["[\(index)]"])
            }
            indent(level)
            append("</array>\n")
        case .dictionary(let entries):
            try checkDepth(level, path)
            indent(level)
            guard !entries.isEmpty else { return append("<dict/>\n") }
            append("<dict>\n")
            for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
                let keyPath = path + [path.isEmpty ? key : ".\(key)"]
                element("key", try escaped(key, path: keyPath), indent: level + 1)
                try write(entry, indent: level + 1, path: keyPath)
            }
            indent(level)
            append("</dict>\n")
        case .null, .set, .url, .uuid:
            throw unrepresentable("a \(value.typeName) value has no XML property-list form (use binary)", path)
        }
    }

    func checkDepth(_ level: Int, _ path: [String]) throws {
        guard level < maximumDepth else {
            throw BatonCoreError(.tooDeep, "containers nest deeper than \(maximumDepth) levels at \(describeKeyPath(path))")
        }
    }

    func unrepresentable(_ message: String, _ path: [String]) -> BatonCoreError {
        BatonCoreError(.unrepresentable, "\(describeKeyPath(path)): \(message)")
    }

    /// Apple's spellings for the non-finite reals; Python's reader accepts them too.
    static func realText(_ number: Double) -> String {
        if number.isNaN { return "nan" }
        if number.isInfinite { return number < 0 ? "-infinity" : "+infinity" }
        // Swift's shortest round-trip spelling ("0.1", "1e-05", "-0.0"): every reader parses it back exactly.
        return number.description
    }

    func escaped(_ text: String, path: [String]) throws -> String {
        guard text.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 < 0x20 }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\r": result += "&#13;"
            case "\n", "\t": result.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20:
                throw unrepresentable(
                    "string holds control character U+\(String(scalar.value, radix: 16, uppercase: true)), "
                        + "which XML 1.0 cannot carry (use binary)",
                    path
                )
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
