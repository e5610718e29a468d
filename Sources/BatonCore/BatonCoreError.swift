/// The one error type of `BatonCore`: every decoder, encoder and validator throws it.
///
/// Compare ``code`` (stable across releases) rather than ``message`` (written for people, may be reworded).
/// Errors from parsers carry where in the input they happened: ``offset`` always, ``line`` for text formats.
public struct BatonCoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as it appears in `description` and in `--json` output.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        // Reading property lists.
        /// The input is not a property list in any format this codec reads.
        public static let unknownFormat = Code("unknownFormat")
        /// The input ended in the middle of a value.
        public static let truncated = Code("truncated")
        /// A binary property list's trailer or offset table is inconsistent with the file.
        public static let invalidTrailer = Code("invalidTrailer")
        /// An object reference or offset points outside the file, or at a place no object can be.
        public static let invalidReference = Code("invalidReference")
        /// A byte that starts no known object, or an object whose fields contradict each other.
        public static let invalidObject = Code("invalidObject")
        /// A string whose bytes are not valid in its declared encoding.
        public static let invalidString = Code("invalidString")
        /// A dictionary key that is not a string.
        public static let nonStringKey = Code("nonStringKey")
        /// A container that contains itself.
        public static let cycle = Code("cycle")
        /// Containers nested deeper than the limit.
        public static let tooDeep = Code("tooDeep")
        /// More values than the limit (after expanding shared references).
        public static let tooManyObjects = Code("tooManyObjects")
        /// The input is larger than the limit.
        public static let inputTooLarge = Code("inputTooLarge")
        /// `NSKeyedArchiver` output (UID objects): an object graph, not a property list.
        public static let keyedArchiverNotSupported = Code("keyedArchiverNotSupported")
        /// Malformed XML: a bad tag, an unclosed element, text where none may be.
        public static let invalidXML = Code("invalidXML")
        /// Well-formed XML with an element a property list cannot have there.
        public static let unexpectedElement = Code("unexpectedElement")
        /// An `<integer>` or `<real>` whose text is not a number in range.
        public static let invalidNumber = Code("invalidNumber")
        /// A `<date>` whose text is not an ISO 8601 date in range.
        public static let invalidDate = Code("invalidDate")
        /// A `<data>` whose text is not base64.
        public static let invalidData = Code("invalidData")
        /// An XML entity reference that is not one of the five predefined ones or a character reference.
        public static let unknownEntity = Code("unknownEntity")

        // Writing property lists and converting values.
        /// A value that the chosen output format cannot represent (a UUID in XML, a date in JSON, ...).
        public static let unrepresentable = Code("unrepresentable")
        /// A Swift value that is not a property-list type (SEMANTICS A3).
        public static let unsupportedType = Code("unsupportedType")

        // Activities.
        /// An activity type that is empty, too long or has control characters (SEMANTICS A1).
        public static let invalidActivityType = Code("invalidActivityType")
        /// A webpage URL whose scheme is not http or https (SEMANTICS A5).
        public static let unsupportedURLScheme = Code("unsupportedURLScheme")
        /// An encoded payload above the hard limit (SEMANTICS A11).
        public static let payloadTooLarge = Code("payloadTooLarge")
        /// A key in `requiredUserInfoKeys` that `userInfo` does not have (SEMANTICS A10).
        public static let missingRequiredUserInfoKey = Code("missingRequiredUserInfoKey")
        /// A payload from a newer version of Baton than this one understands (SEMANTICS H1).
        public static let unsupportedPayloadVersion = Code("unsupportedPayloadVersion")
        /// A payload whose fields are missing or of the wrong type.
        public static let invalidPayload = Code("invalidPayload")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, for a person.
    public var message: String
    /// The byte offset in the input where the problem was found, when reading.
    public var offset: Int?
    /// The 1-based line in a text input where the problem was found.
    public var line: Int?

    /// An error with a code and a message, and where in the input it happened if known.
    public init(_ code: Code, _ message: String, offset: Int? = nil, line: Int? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
        self.line = line
    }

    public var description: String {
        var location = ""
        if let line { location += "line \(line), " }
        if let offset { location += "byte \(offset): " }
        return "\(location)\(message) [\(code)]"
    }
}

extension BatonCoreError {
    /// The most characters of input an error message quotes: enough to recognise a value, while a hostile 2 MB
    /// tag name or key still makes a short message (issue 10).
    public static let maximumQuotedLength = 48

    /// `text` in double quotes, for putting input into an error message or warning.
    ///
    /// Quotes, backslashes, control and format characters (line breaks, bidi overrides) are escaped, so the text
    /// cannot break the message's line or reorder it. Text longer than `limit` characters is cut with an ellipsis
    /// and followed by its full length: `"com.example.aaaa…" (2097152 bytes)`. The cut counts Unicode scalars,
    /// not `Character`s, because one grapheme cluster can be megabytes long.
    public static func quoted(_ text: some StringProtocol, limit: Int = maximumQuotedLength) -> String {
        var output = "\""
        var length = 0
        for scalar in text.unicodeScalars {
            let piece = escaped(scalar)
            guard length + piece.unicodeScalars.count <= limit else {
                return output + "…\" (\(text.utf8.count) bytes)"
            }
            output += piece
            length += piece.unicodeScalars.count
        }
        return output + "\""
    }

    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\"": return "\\\""
        case "\\": return "\\\\"
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        default:
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator:
                return "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default:
                return String(scalar)
            }
        }
    }
}
