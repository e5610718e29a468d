#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes the JSON-compatible subset of property lists: strings, finite numbers, booleans, arrays, dictionaries
/// and null. Keys are sorted, indentation is two spaces, output ends with a newline.
///
/// Data, dates, sets, URLs, UUIDs and non-finite reals throw `unrepresentable` with their key path, as
/// `plutil -convert json` refuses them: a silent string conversion could not be converted back.
public enum JSONPropertyListEncoder {
    /// Encodes `value` as a JSON document.
    public static func encode(_ value: PropertyList, limits: PropertyListLimits = .default) throws -> Data {
        var output = ""
        try write(value, into: &output, indent: 0, path: [], maximumDepth: limits.maximumDepth)
        output += "\n"
        return Data(output.utf8)
    }

    private static func write(
        _ value: PropertyList,
        into output: inout String,
        indent: Int,
        path: [String],
        maximumDepth: Int
    ) throws {
        func unrepresentable(_ what: String) -> BatonCoreError {
            BatonCoreError(.unrepresentable, "\(describeKeyPath(path)): \(what) has no JSON form")
        }
        let padding = String(repeating: "  ", count: indent + 1)
        let closing = String(repeating: "  ", count: indent)
        switch value {
        case .string(let text):
            output += quoted(text)
        case .integer(let number):
            output += String(number)
        case .unsignedInteger(let number):
            output += String(number)
        case .real(let number):
            guard number.isFinite else { throw unrepresentable("the real \(number)") }
            output += number.description
        case .bool(let flag):
            output += flag ? "true" : "false"
        case .null:
            output += "null"
        case .array(let elements):
            guard indent < maximumDepth else { throw BatonCoreError(.tooDeep, "containers nest too deeply") }
            guard !elements.isEmpty else {
                output += "[]"
                return
            }
            output += "[\n"
            for (index, element) in elements.enumerated() {
                output += padding
                try write(element, into: &output, indent: indent + 1, path: path + ["[\(index)]"], maximumDepth: maximumDepth)
                output += index == elements.count - 1 ? "\n" : ",\n"
            }
            output += closing + "]"
        case .dictionary(let entries):
            guard indent < maximumDepth else { throw BatonCoreError(.tooDeep, "containers nest too deeply") }
            guard !entries.isEmpty else {
                output += "{}"
                return
            }
            output += "{\n"
            for (index, entry) in entries.sorted(by: { $0.key < $1.key }).enumerated() {
                output += padding + quoted(entry.key) + ": "
                let keyPath = path + [path.isEmpty ? entry.key : ".\(entry.key)"]
                try write(entry.value, into: &output, indent: indent + 1, path: keyPath, maximumDepth: maximumDepth)
                output += index == entries.count - 1 ? "\n" : ",\n"
            }
            output += closing + "}"
        case .data, .date, .set, .url, .uuid:
            throw unrepresentable("a \(value.typeName) value")
        }
    }

    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
