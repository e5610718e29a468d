/// Expands Xcode build variables (`$(NAME)`, `${NAME}`, `$(NAME:modifier)`) in strings from an app's Info.plist and
/// entitlements, the way Xcode does when it builds the app.
///
/// Source trees keep these variables (`$(PRODUCT_BUNDLE_IDENTIFIER)`); a registry meets them when it loads such a
/// file unchanged. Known variables are replaced, unknown ones are left in place and reported, so the caller can say
/// which value could not be resolved instead of inventing one.
public struct BuildVariables: Sendable, Hashable {
    /// The values by variable name.
    public var values: [String: String]

    /// Variables with these values.
    public init(_ values: [String: String] = [:]) {
        self.values = values
    }

    /// The result of expanding one string.
    public struct Expansion: Sendable, Hashable {
        /// The string with every known variable replaced; unknown ones stay as written.
        public var text: String
        /// The names of the variables that had no value, in order of appearance.
        public var unresolved: [String]
        /// Whether every variable was replaced.
        public var isResolved: Bool { unresolved.isEmpty }
    }

    /// Expands the variables in `text`. Nested references (`$(A_$(B))`) are not supported and stay unresolved.
    public func expand(_ text: String) -> Expansion {
        guard text.contains("$") else { return Expansion(text: text, unresolved: []) }
        var output = ""
        var unresolved: [String] = []
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            guard character == "$", next < text.endIndex, text[next] == "(" || text[next] == "{" else {
                output.append(character)
                index = next
                continue
            }
            let closer: Character = text[next] == "(" ? ")" : "}"
            guard let end = text[next...].firstIndex(of: closer) else {
                output += text[index...]
                break
            }
            let reference = text[text.index(after: next)..<end]
            let parts = reference.split(separator: ":", maxSplits: 1)
            let name = String(parts.first ?? "")
            if let value = values[name], !name.isEmpty {
                output += parts.count > 1 ? Self.apply(modifier: String(parts[1]), to: value) : value
            } else {
                unresolved.append(name)
                output += text[index...end]
            }
            index = text.index(after: end)
        }
        return Expansion(text: output, unresolved: unresolved)
    }

    /// Xcode's modifiers for variable values; an unknown modifier leaves the value as it is.
    static func apply(modifier: String, to value: String) -> String {
        switch modifier {
        case "rfc1034identifier":
            String(value.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") ? $0 : "-" })
        case "c99extidentifier", "identifier":
            String(value.map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
        case "lower":
            value.lowercased()
        case "upper":
            value.uppercased()
        default:
            value
        }
    }
}
