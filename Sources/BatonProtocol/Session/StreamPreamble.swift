/// The first bytes on a direct continuation stream's TCP connection (issue 30; SEMANTICS F1-F3, docs/PROTOCOL.md §8
/// "Direct streams"): the continuing device's agent connects to the originating agent's session port and names the
/// stream by the one-time token the originating agent gave it, before either app speaks TLS on the connection.
///
/// The session port otherwise only ever gets a TLS ClientHello, whose first byte (a handshake record) is 0x16; a
/// preamble starts with `B` (0x42), so the agent tells the two apart by the first byte (``startsPreamble(_:)``) and
/// hands a preamble's connection, untouched past the preamble, to the app that owns the stream.
///
/// ```
/// magic    4 bytes   "BTNS" (42 54 4e 53)
/// version  1 byte    1
/// token   16 bytes   the stream's one-time token
/// ```
public struct StreamPreamble: Sendable, Hashable {
    /// "BTNS": never 0x16 first, so a preamble is told apart from a TLS ClientHello by its first byte; beside the
    /// pairing beacon's "BTNP" (§4), so a stray beacon is never read as a preamble.
    public static let magic: [UInt8] = Array("BTNS".utf8)
    /// The one version this side writes and reads; another is refused (``StreamPreambleError/Code/unsupportedVersion``)
    /// rather than guessed at, since what follows the preamble is the apps' TLS and cannot be re-read.
    public static let version: UInt8 = 1
    /// A stream's token: 16 random bytes, as the agent hands them to the originating app (§8, step 3). Enough that a
    /// stranger who can reach the port cannot guess a live one.
    public static let tokenLength = 16
    /// The whole preamble: magic 4 + version 1 + token 16. Fixed, so a reader knows at once when it has all of it.
    public static let length = 21

    /// The stream's one-time token, exactly ``tokenLength`` bytes.
    public let token: [UInt8]

    /// A preamble naming the stream `token`; throws ``StreamPreambleError/Code/badToken`` unless it is exactly
    /// ``tokenLength`` bytes.
    public init(token: [UInt8]) throws(StreamPreambleError) {
        guard token.count == Self.tokenLength else {
            throw StreamPreambleError(
                .badToken, "a stream token is \(Self.tokenLength) bytes, not \(token.count): use the token the agent gave for the stream"
            )
        }
        self.token = token
    }

    /// The encoding: ``length`` bytes.
    public var bytes: [UInt8] { Self.magic + [Self.version] + token }

    /// Incremental parse of the first bytes seen on a connection, given all of them each time (at most ``length`` are
    /// looked at, so a caller may pass whatever it buffered).
    ///
    /// Nil while fewer than ``length`` bytes have come and they agree with a preamble so far; the preamble once exactly
    /// ``length`` bytes are there. Bytes past it are ``StreamPreambleError/Code/tooLong``: the sender waits for the other
    /// side to speak first (its TLS ClientHello comes from the originating app), so anything behind the preamble is a
    /// sender that does not follow the protocol. Throws at the first byte that cannot be a preamble: a wrong magic byte
    /// is ``StreamPreambleError/Code/notAPreamble``, a wrong version ``StreamPreambleError/Code/unsupportedVersion``.
    public static func parse(_ bytes: some Collection<UInt8>) throws(StreamPreambleError) -> StreamPreamble? {
        var token: [UInt8] = []
        token.reserveCapacity(tokenLength)
        for (offset, byte) in bytes.enumerated() {
            switch offset {
            case 0..<magic.count:
                guard byte == magic[offset] else {
                    throw StreamPreambleError(
                        .notAPreamble,
                        "byte \(offset) of the connection is 0x\(hex(byte)), not the stream preamble's \"BTNS\": the connection is neither TLS nor a direct stream"
                    )
                }
            case magic.count:
                guard byte == version else {
                    throw StreamPreambleError(
                        .unsupportedVersion, "the stream preamble is version \(byte); this agent reads version \(version) only: update Baton on both devices"
                    )
                }
            case (magic.count + 1)..<length:
                token.append(byte)
            default:
                throw StreamPreambleError(
                    .tooLong, "bytes follow the \(length)-byte stream preamble before the other side spoke: the sender does not follow the protocol"
                )
            }
        }
        guard token.count == tokenLength else { return nil }
        return StreamPreamble(checkedToken: token)
    }

    /// Whether a connection's first byte starts a preamble rather than TLS (a ClientHello starts 0x16). Only the
    /// first byte: the rest is checked by ``parse(_:)``.
    public static func startsPreamble(_ first: UInt8) -> Bool {
        first == magic[0]
    }

    /// A preamble from a token ``parse(_:)`` has already counted.
    private init(checkedToken: [UInt8]) {
        precondition(checkedToken.count == Self.tokenLength, "a preamble's token counted wrong")
        self.token = checkedToken
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16)
        return byte < 0x10 ? "0" + digits : digits
    }
}

/// Why bytes on a connection are not a stream preamble, or a token cannot make one.
///
/// Compare ``code`` (stable) rather than ``message`` (for people).
public struct StreamPreambleError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public enum Code: String, Sendable {
        /// A byte of the magic is wrong: neither a preamble nor (if the caller checked the first byte) TLS.
        case notAPreamble
        /// The magic is right and the version is not one this side reads.
        case unsupportedVersion
        /// Bytes came after a whole preamble, before the other side spoke.
        case tooLong
        /// A token that is not ``StreamPreamble/tokenLength`` bytes.
        case badToken
    }

    /// What kind of failure this is.
    public let code: Code
    /// What was wrong and what to do, for a person.
    public let message: String

    /// An error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code.rawValue)]" }
}
