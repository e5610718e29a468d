/// A D-Bus value in GVariant text format, as `gdbus call` and PyGObject's `Variant.print_()` show values, so a
/// log line or a test failure reads as the app's developer sees the value. `GLib.Variant.parse` reads it back
/// (DBusGVariantTextTests checks that with GLib itself).
///
/// Bounded for a hostile value: at most ``maximumDescriptionLength`` bytes and 64 levels, then `…` (3 bytes), so describing a
/// value a million variants deep costs as little as a short one.
extension DBusValue: CustomStringConvertible {
    /// The longest description, in bytes of UTF-8, before it is cut with `…`.
    public static let maximumDescriptionLength = 4096

    public var description: String {
        var text = ""
        let whole = appendText(to: &text, depth: 0)
        if whole && text.utf8.count <= Self.maximumDescriptionLength { return text }
        // The walk stops soon after the limit (a type's signature or a number may pass it): cut exactly, at a scalar.
        var cut = ""
        var bytes = 0
        for scalar in text.unicodeScalars {
            bytes += UTF8.width(scalar)
            guard bytes <= Self.maximumDescriptionLength else { break }
            cut.unicodeScalars.append(scalar)
        }
        return cut + "…"
    }

    /// Appends the GVariant text of this value; false once the text is cut. Every array and dictionary is annotated
    /// with its type (`@as []`, `@a{sv} {…}`), so the text parses to the same type with or without elements.
    private func appendText(to text: inout String, depth: Int) -> Bool {
        guard depth <= 64, text.utf8.count < Self.maximumDescriptionLength else { return false }
        switch self {
        case .byte(let value): text += "byte 0x" + (value < 16 ? "0" : "") + String(value, radix: 16)
        case .boolean(let value): text += value ? "true" : "false"
        case .int16(let value): text += "int16 \(value)"
        case .uint16(let value): text += "uint16 \(value)"
        case .int32(let value): text += "\(value)"
        case .uint32(let value): text += "uint32 \(value)"
        case .int64(let value): text += "int64 \(value)"
        case .uint64(let value): text += "uint64 \(value)"
        case .double(let value):
            // Swift's shortest form that reads back exactly; GLib reads a number with a '.' or an exponent as a double.
            let number = "\(value)"
            text += number.contains(where: { $0 == "." || $0 == "e" || $0 == "n" || $0 == "i" }) ? number : number + ".0"
        case .string(let value): Self.appendQuoted(value, to: &text)
        case .objectPath(let value):
            text += "objectpath "
            Self.appendQuoted(value, to: &text)
        case .signature(let value):
            text += "signature "
            Self.appendQuoted(value, to: &text)
        case .unixFD(let value): text += "handle \(value)"
        case .bytes(let bytes):
            text += "@ay ["
            for (index, byte) in bytes.enumerated() {
                guard text.utf8.count < Self.maximumDescriptionLength else { return false }
                text += (index == 0 ? "" : ", ") + DBusValue.byte(byte).description
            }
            text += "]"
        case .array(let element, let elements):
            text += "@a\(element) ["
            guard Self.appendList(elements, to: &text, depth: depth) else { return false }
            text += "]"
        case .dictionary(let key, let value, let entries):
            text += "@a{\(key)\(value)} {"
            for (index, entry) in entries.enumerated() {
                if index > 0 { text += ", " }
                guard entry.key.appendText(to: &text, depth: depth + 1) else { return false }
                text += ": "
                guard entry.value.appendText(to: &text, depth: depth + 1) else { return false }
            }
            text += "}"
        case .structure(let fields):
            text += "("
            guard Self.appendList(fields, to: &text, depth: depth) else { return false }
            text += fields.count == 1 ? ",)" : ")"
        case .variant(let inner):
            text += "<"
            guard inner.appendText(to: &text, depth: depth + 1) else { return false }
            text += ">"
        }
        return true
    }

    private static func appendList(_ values: [DBusValue], to text: inout String, depth: Int) -> Bool {
        for (index, value) in values.enumerated() {
            if index > 0 { text += ", " }
            guard value.appendText(to: &text, depth: depth + 1) else { return false }
        }
        return true
    }

    /// `value` in single quotes, with GVariant's escapes: `\'`, `\\`, and `\uXXXX` (or `\UXXXXXXXX`) for control and
    /// format characters, so no line break or bidi override reaches a log. Cut, like the rest, at the length limit.
    private static func appendQuoted(_ value: String, to text: inout String) {
        text += "'"
        for scalar in value.unicodeScalars {
            guard text.utf8.count < maximumDescriptionLength else { break }
            switch scalar {
            case "'": text += "\\'"
            case "\\": text += "\\\\"
            default:
                switch scalar.properties.generalCategory {
                case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned, .privateUse:
                    let hex = String(scalar.value, radix: 16)
                    text += scalar.value > 0xFFFF
                        ? "\\U" + String(repeating: "0", count: 8 - hex.count) + hex
                        : "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "'"
    }
}
