#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one error type of `BatonClient`: reaching the device's agent over its Unix socket.
///
/// Compare ``code`` (stable) rather than ``message`` (for people).
public struct BatonClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        /// No agent answers at the socket (it is not running, or the path is wrong).
        public static let peerUnreachable = Code("peerUnreachable")
        /// The agent refused this process (its reason is in the message).
        public static let peerRefused = Code("peerRefused")
        /// The agent did not answer in time.
        public static let timedOut = Code("timedOut")
        /// The socket, or the process listening on it, belongs to another user: it is not this user's agent.
        public static let notOwned = Code("notOwned")
        /// The agent sent something the protocol does not allow.
        public static let protocolViolation = Code("protocolViolation")
        /// The app did not say which bundle it is.
        public static let noBundleIdentifier = Code("noBundleIdentifier")
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
