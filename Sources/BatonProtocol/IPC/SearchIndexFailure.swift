/// Why the device's search index could not do what an app asked (G3): the `failure` and `message` of a `deleted`
/// message (docs/PROTOCOL.md §7), typed rather than one string (issue 26 item 4: no failure codes as bare strings at
/// the IPC boundary).
///
/// The codes are those of the index's own error (`SearchError.Code` in BatonSearch, which this module does not link).
/// A struct of named codes rather than a closed enum: a code a newer agent adds still arrives, with its message.
public struct SearchIndexFailure: Sendable, Hashable, CustomStringConvertible {
    /// A stable name for the kind of failure, as it crosses the socket (at most ``maximumCodeLength`` bytes).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// The index file is not a search index, or its pages are corrupt.
        public static let damaged = Code(rawValue: "damaged")
        /// The index or its folder cannot be opened for writing or locked, or the disk is full.
        public static let unwritable = Code(rawValue: "unwritable")
        /// The index was written by a newer Baton.
        public static let newerSchema = Code(rawValue: "newerSchema")
        /// SQLite failed otherwise; the message carries its words.
        public static let database = Code(rawValue: "database")
    }

    /// What kind of failure.
    public var code: Code
    /// What was wrong and what to do, for a person; empty when the agent sent none.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`, as the index's own error reads (the code alone without a message).
    public var description: String { message.isEmpty ? code.rawValue : "\(code): \(message)" }

    /// The longest code that crosses the socket.
    public static let maximumCodeLength = 64
    /// The longest message that crosses the socket.
    public static let maximumMessageLength = 4_096

    /// Reads an agent's `failure` and `message` fields. An agent before the typed code sent `code: message` in
    /// `failure` alone; that still reads, split at the first ": " (a text without one is a code with no message).
    init(failure: String, message: String?) {
        if let message {
            self.init(Code(rawValue: failure), message)
        } else if let colon = failure.firstRange(of: ": "), failure.distance(from: failure.startIndex, to: colon.lowerBound) <= Self.maximumCodeLength {
            self.init(Code(rawValue: String(failure[..<colon.lowerBound])), String(failure[colon.upperBound...]))
        } else {
            self.init(Code(rawValue: failure), "")
        }
    }
}
