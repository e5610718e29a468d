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

/// A value printed as a property list reads (`print(value)`, `"\(value)"`, in arrays and dictionaries, in test
/// failures): `1`, `"text"`, `[1, "a"]`, `{key = 1; "two words" = true}`, not `BatonCore.PropertyList.integer(1)`
/// (issue 24 part 7). On one line, and bounded: at most ``printedLimit`` characters whatever the value's size, with
/// what was left out counted.
extension PropertyList: CustomStringConvertible, CustomDebugStringConvertible {
    /// The most characters ``description`` has, however large the value (a 1 MiB `userInfo` in a log line is no use).
    public static let printedLimit = 1_000

    public var description: String {
        // Room is left past the budget for the item being printed when it runs out (a string is at most about 230
        // characters) and for the count of what was left out.
        var printer = Printer(budget: Self.printedLimit - 300)
        printer.print(self)
        // Each container stops once the budget is spent, but a deep nest still closes its brackets: cut that too.
        guard printer.output.count > Self.printedLimit else { return printer.output }
        return String(printer.output.prefix(Self.printedLimit - 1)) + "…"
    }

    public var debugDescription: String { description }

    /// Writes values into `output` until the budget is spent, then counts what it leaves out.
    private struct Printer {
        var output = ""
        var budget: Int
        /// The longest string or key printed whole; longer ones end in "…" and their length.
        static let longestText = 200
        /// Bytes of data shown.
        static let shownBytes = 16

        var spent: Bool { output.utf8.count >= budget }

        mutating func print(_ value: PropertyList) {
            if spent {
                output += "…"
                return
            }
            switch value {
            case .string(let text): output += Self.text(text)
            case .integer(let number): output += String(number)
            case .unsignedInteger(let number): output += String(number)
            case .real(let number): output += number.description
            case .bool(let flag): output += flag ? "true" : "false"
            case .null: output += "null"
            case .date(let date): output += CivilTime(date)?.iso8601 ?? "date(\(date.timeIntervalSinceReferenceDate))"
            case .data(let bytes):
                let shown = bytes.prefix(Self.shownBytes).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
                output += bytes.count > Self.shownBytes ? "<\(shown)… \(bytes.count) bytes>" : "<\(shown)>"
            case .url(let url): output += "url(\(Self.clipped(url.absoluteString)))"
            case .uuid(let uuid): output += "uuid(\(uuid.uuidString))"
            case .array(let elements): list(elements, open: "[", close: "]") { $0.print($1) }
            case .set(let members): list(members.map(\.description).sorted(), open: "set[", close: "]") { $0.output += $1 }
            case .dictionary(let entries):
                list(entries.sorted { $0.key < $1.key }, open: "{", close: "}", separator: "; ") { printer, entry in
                    printer.output += Self.key(entry.key) + " = "
                    printer.print(entry.value)
                }
            }
        }

        /// Prints `items` between `open` and `close` until the budget is spent, then "… N more".
        mutating func list<Item>(_ items: [Item], open: String, close: String, separator: String = ", ", _ each: (inout Printer, Item) -> Void) {
            output += open
            for (index, item) in items.enumerated() {
                if index > 0 { output += separator }
                if spent {
                    output += "… \(items.count - index) more"
                    break
                }
                each(&self, item)
            }
            output += close
        }

        /// A string value, quoted and escaped as JSON does, clipped when long.
        static func text(_ text: String) -> String {
            JSONPropertyListEncoder.quoted(clipped(text))
        }

        /// A dictionary key: bare when it is a plain word (letters, digits, `.`, `_`, `-`), else quoted.
        static func key(_ key: String) -> String {
            let plain = !key.isEmpty && key.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || ".-_".unicodeScalars.contains(scalar))
            }
            return plain ? key : text(key)
        }

        static func clipped(_ text: String) -> String {
            text.count > longestText ? "\(text.prefix(longestText))… (\(text.count) characters)" : text
        }
    }
}
