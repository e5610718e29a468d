#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PropertyList {
    /// A readable, indented rendering in the style of `plutil -p`: every type visible, keys sorted.
    ///
    /// ```
    /// {
    ///   "CFBundleIdentifier" => "com.example.ShopSnap"
    ///   "NSUserActivityTypes" => [
    ///     0 => "com.example.shopsnap.view"
    ///   ]
    /// }
    /// ```
    public var formattedDescription: String {
        var output = ""
        render(into: &output, indent: 0)
        return output + "\n"
    }

    private func render(into output: inout String, indent: Int) {
        let padding = String(repeating: "  ", count: indent + 1)
        let closing = String(repeating: "  ", count: indent)
        switch self {
        case .string(let text): output += JSONPropertyListEncoder.quoted(text)
        case .integer(let number): output += String(number)
        case .unsignedInteger(let number): output += String(number)
        case .real(let number): output += number.description
        case .bool(let flag): output += flag ? "true" : "false"
        case .null: output += "null"
        case .date(let date):
            output += CivilTime(date)?.iso8601 ?? "date(\(date.timeIntervalSinceReferenceDate)s since 2001)"
        case .data(let bytes):
            let preview = bytes.prefix(32).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
            output += "{length = \(bytes.count), bytes = 0x\(preview)\(bytes.count > 32 ? "..." : "")}"
        case .url(let url): output += "url(\(url.absoluteString))"
        case .uuid(let uuid): output += "uuid(\(uuid.uuidString))"
        case .array(let elements):
            output += "[\n"
            for (index, element) in elements.enumerated() {
                output += "\(padding)\(index) => "
                element.render(into: &output, indent: indent + 1)
                output += "\n"
            }
            output += closing + "]"
        case .set(let members):
            output += "set {\n"
            for member in members {
                output += padding
                member.render(into: &output, indent: indent + 1)
                output += "\n"
            }
            output += closing + "}"
        case .dictionary(let entries):
            output += "{\n"
            for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
                output += "\(padding)\(JSONPropertyListEncoder.quoted(key)) => "
                value.render(into: &output, indent: indent + 1)
                output += "\n"
            }
            output += closing + "}"
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
