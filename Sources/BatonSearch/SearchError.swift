/// The one error type of `BatonSearch`: everything the index throws (SEMANTICS G1-G3).
///
/// Compare ``code`` (stable) rather than ``message`` (written for people, may be reworded). A damaged or unwritable
/// index is reported, never a crash: the message says what to do.
public struct SearchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as it appears in `description` and in `--json` output.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        /// The file is not a search index, or its pages are corrupt. Remove it (``SearchIndex/discard(at:)``) and a
        /// new, empty index is made; the account is not affected.
        public static let damaged = Code("damaged")
        /// The index or its folder cannot be created, opened for writing, locked, or the disk is full.
        public static let unwritable = Code("unwritable")
        /// One entry is larger than a ``SearchLimits`` field allows (a thumbnail, the payload, the text, or the whole
        /// entry above the index's byte cap).
        public static let tooLarge = Code("tooLarge")
        /// An entry's fields are not acceptable (an empty activity type or bundle identifier).
        public static let invalidEntry = Code("invalidEntry")
        /// The index was written by a newer Baton, with a schema this one does not know.
        public static let newerSchema = Code("newerSchema")
        /// SQLite failed in a way none of the codes above describe; the message carries SQLite's own words.
        public static let database = Code("database")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong and what to do, for a person.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
