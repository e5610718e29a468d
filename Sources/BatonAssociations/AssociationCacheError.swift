/// Why the association cache could not be written: a domain that cannot be a file name, or its folder, lock or
/// record file (SEMANTICS E4). Read and fetch failures are ``AssociationFetchError``s; this is only the writing.
///
/// Printed as the agent's own state errors are, `message [stateUnwritable]`, so `baton aasa fetch` reads as it did
/// when the cache lived in the agent. Compare ``code``, not ``message``.
public struct AssociationCacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as printed.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        /// The cache folder, its lock or a record cannot be created or written, or the domain is no file name.
        public static let stateUnwritable = Code("stateUnwritable")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, naming the path or domain and the system's words.
    public var message: String

    /// An error with `code` and `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code)]" }
}
