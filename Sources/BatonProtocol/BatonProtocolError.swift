/// The one error type of `BatonProtocol`: what crosses the wire and fails to make sense.
///
/// Compare ``code`` (stable) rather than ``message`` (for people).
public struct BatonProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        /// A device id that is not 52 base32 characters.
        public static let invalidDeviceID = Code("invalidDeviceID")
        /// An invite token that cannot be read.
        public static let invalidInvite = Code("invalidInvite")
        /// An invite token past its expiry.
        public static let inviteExpired = Code("inviteExpired")
        /// A roster whose encoding is malformed or whose members' ids do not match their certificates.
        public static let invalidRoster = Code("invalidRoster")
        /// A roster from a newer version of Baton.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// A session or IPC message that lacks a field, has one of the wrong type, or has an unknown type.
        public static let malformedMessage = Code("malformedMessage")
        /// A well-formed message the protocol does not allow at that point (a reply to nothing, a duplicate id).
        public static let unexpectedMessage = Code("unexpectedMessage")
        /// A continuation stream's peer broke its flow control: more data than credited, data after its end, credit
        /// beyond any window (docs/PROTOCOL.md §8).
        public static let flowViolation = Code("flowViolation")
        /// A browser's native message whose 4-byte length announces more than the limit
        /// (``NativeMessageReader/maximumIncomingBytes``) or whose body is empty.
        public static let nativeMessageSize = Code("nativeMessageSize")
        /// The browser's input ended inside a native message (its length or its body cut short).
        public static let nativeMessageTruncated = Code("nativeMessageTruncated")
        /// A native message whose body is not a UTF-8 JSON object.
        public static let nativeMessageNotJSON = Code("nativeMessageNotJSON")
        /// A native message whose `type` this host does not know.
        public static let nativeMessageUnknownType = Code("nativeMessageUnknownType")
        /// A native message missing a field its type needs, with one of the wrong type, or one over its limit.
        public static let nativeMessageField = Code("nativeMessageField")
        /// A synced folder's id that is not 1-64 of `A-Za-z0-9._-`, or its path not absolute (C9).
        public static let invalidFolder = Code("invalidFolder")
        /// A datagram on the discovery port that is not a pairing beacon (an advert, say): ignore it.
        public static let notPairingBeacon = Code("notPairingBeacon")
        /// A pairing beacon (it starts with the magic) that is cut short, too long, or names port 0 or a name a
        /// beacon may not carry (``PairingBeacon``).
        public static let invalidPairingBeacon = Code("invalidPairingBeacon")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, for a person.
    public var message: String

    /// An error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code)]" }
}
