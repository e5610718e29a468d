/// Why an association file could not be fetched, verified, read back from the cache or written to it (SEMANTICS E4):
/// BatonAssociations' one error type (issue 26 item 4).
///
/// Its own type, not the agent's, because the codes are what `baton aasa status` shows and the router's reasons name,
/// and because the cache decoder that throws it is fuzzed on its own (`scripts/fuzz.sh association-cache`) without the
/// rest of the module. Compare ``code``, not ``message``.
public struct AssociationFetchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as stored in the cache and printed.
        public let name: String

        init(_ name: String) { self.name = name }

        public var description: String { name }

        /// No TCP connection: the name does not resolve, nothing listens, or the network is down.
        public static let connectFailed = Code("connectFailed")
        /// The TLS handshake failed for another reason than the certificate (protocol, cipher, reset).
        public static let tlsFailed = Code("tlsFailed")
        /// The server's certificate does not chain to a trusted root or is not valid for the domain.
        public static let untrusted = Code("untrusted")
        /// The connection or the whole request took longer than its timeout.
        public static let timedOut = Code("timedOut")
        /// The server answered with a redirect; Apple's rule is that association files are never redirected.
        public static let redirected = Code("redirected")
        /// The file is larger than the cap.
        public static let tooLarge = Code("tooLarge")
        /// The server answered with a status other than 2xx (404: no file at either path).
        public static let httpStatus = Code("httpStatus")
        /// A CMS-signed file whose signature or certificate does not verify.
        public static let badSignature = Code("badSignature")
        /// The answer or the file is not what it should be: not HTTP, not JSON, the wrong shape.
        public static let malformed = Code("malformed")
        /// A cache file that cannot be read back (it is reported, set aside and fetched again).
        public static let cacheCorrupt = Code("cacheCorrupt")
        /// The cache folder, its lock or a record cannot be created or written, or the domain cannot be a file name
        /// (the code the agent's own state errors use).
        public static let stateUnwritable = Code("stateUnwritable")
        /// A name under a TLD reserved by RFC 6761 (`.example`, `.test`, `.invalid`, `.localhost`) that no
        /// `--resolve` rule names: such a name is never looked up (issue 25 item 7).
        public static let reservedName = Code("reservedName")

        /// Every code a record can store, for decoding a stored one (a write that failed stored nothing).
        static let all: [Code] = [.connectFailed, .tlsFailed, .untrusted, .timedOut, .redirected, .tooLarge, .httpStatus, .badSignature, .malformed, .cacheCorrupt, .reservedName]

        /// The code named `name`, or `malformed` for a name this version does not know.
        static func named(_ name: String) -> Code { all.first { $0.name == name } ?? .malformed }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong and what to do, for a person; names the domain and URL.
    public var message: String

    /// An error with `code` and `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
