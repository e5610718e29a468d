/// Why a D-Bus value or signature was refused, or a value did not map to or from a property list: BatonDBus's one error
/// type (issue 28 item 1).
///
/// Apps in any language send these values, so every failure is this error, never a trap (Fuzz/DBusPlistFuzzer.swift
/// runs the mapping). A mapping error names the key path of what did not map, `userInfo.photos[3].when`, in
/// ``keyPath`` and at the start of ``message``. Compare ``code``, not ``message``.
public struct DBusValueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as printed.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        // Signatures and values the D-Bus specification refuses.
        /// A signature over 255 bytes.
        public static let signatureTooLong = Code("dbusSignatureTooLong")
        /// A signature the specification refuses: an unknown code, a dict entry outside an array or with a key that is
        /// not basic, an empty or unclosed structure, more than 32 arrays or 32 structures nested.
        public static let invalidSignature = Code("dbusInvalidSignature")
        /// A value that is not of the type its container declares (an `i` in an `as`), or a dictionary whose key type
        /// is not basic: a value no D-Bus message can carry.
        public static let typeMismatch = Code("dbusTypeMismatch")
        /// A string, object path or key that D-Bus cannot carry: a NUL in a string, an object path that breaks the
        /// specification's syntax.
        public static let invalidString = Code("dbusInvalidString")

        // The mapping to and from property lists.
        /// A D-Bus value with no property-list type (`h`, a file descriptor), a dictionary not keyed by strings, a
        /// userInfo that is not a dictionary.
        public static let unmappable = Code("dbusUnmappable")
        /// A tagged structure `(sv)` whose tag Baton does not know, or whose value is not the tag's type (a `date` that
        /// is not a `d`, a `url` that is not a URL).
        public static let invalidTaggedValue = Code("dbusInvalidTaggedValue")
        /// The same key twice in one dictionary: a property-list dictionary has each key once.
        public static let duplicateKey = Code("dbusDuplicateKey")

        // Limits (``DBusMappingLimits``).
        /// Containers nested deeper than ``DBusMappingLimits/maximumDepth``.
        public static let tooDeep = Code("dbusTooDeep")
        /// More values than ``DBusMappingLimits/maximumValues``.
        public static let tooManyValues = Code("dbusTooManyValues")
        /// One string, key or data over ``DBusMappingLimits/maximumStringBytes``.
        public static let stringTooLong = Code("dbusStringTooLong")
        /// The whole value over ``DBusMappingLimits/maximumTotalBytes``.
        public static let tooLarge = Code("dbusTooLarge")

        // Messages (BatonDBusMessages, the bridge to sd-bus).
        /// A message's arguments are not of the signature the method takes.
        public static let wrongSignature = Code("dbusWrongSignature")
        /// sd-bus refused to read or build a message (its error, such as "No such device or address", in the message):
        /// a message cut short, or one too large for sd-bus.
        public static let messageFailed = Code("dbusMessageFailed")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, for a person; starts with the key path when there is one.
    public var message: String
    /// Where in the value the failure is, for a mapping error: `userInfo.photos[3].when`.
    public var keyPath: DBusKeyPath?

    /// An error with a code and a message, at `keyPath` if given (the message is then prefixed with it).
    public init(_ code: Code, _ message: String, at keyPath: DBusKeyPath? = nil) {
        self.code = code
        self.message = keyPath.map { "\($0): \(message)" } ?? message
        self.keyPath = keyPath
    }

    public var description: String { "\(message) [\(code)]" }
}
