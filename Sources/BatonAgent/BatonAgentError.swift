#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// The one error type of `BatonAgent`: state on disk, sessions, pairing.
///
/// Compare ``code`` (stable) rather than ``message`` (for people); messages name the file or peer concerned.
public struct BatonAgentError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        /// The state folder has no identity yet (`baton init` makes one).
        public static let notInitialized = Code("notInitialized")
        /// The state folder already has an identity.
        public static let alreadyInitialized = Code("alreadyInitialized")
        /// A state file exists but cannot be read as what it should be. Never replaced silently.
        public static let stateCorrupt = Code("stateCorrupt")
        /// A state file readable by others than its owner.
        public static let statePermissions = Code("statePermissions")
        /// A state file or folder cannot be written.
        public static let stateUnwritable = Code("stateUnwritable")
        /// A port or socket path is taken by another program (or another agent on the same state).
        public static let addressInUse = Code("addressInUse")
        /// An address cannot be listened on: not on this machine, or its family (IPv6) is off.
        public static let addressUnavailable = Code("addressUnavailable")
        /// No device in the roster matches the name or id given.
        public static let unknownDevice = Code("unknownDevice")
        /// The peer cannot be reached (refused, unreachable, closed before answering).
        public static let peerUnreachable = Code("peerUnreachable")
        /// The TLS handshake failed: the peer is not a member, or not the device pinned.
        public static let peerRefused = Code("peerRefused")
        /// The peer sent something the protocol does not allow there.
        public static let protocolViolation = Code("protocolViolation")
        /// A step took longer than its deadline.
        public static let timedOut = Code("timedOut")
        /// One side declined the pairing (the codes differed, or the person said no).
        public static let pairingDeclined = Code("pairingDeclined")
        /// The invite token was refused: unknown, used, or expired.
        public static let inviteRejected = Code("inviteRejected")
        /// A program could not be started: no descriptors, memory or processes left, or not executable.
        public static let launchFailed = Code("launchFailed")
        /// A runtime folder or socket belongs to another user, or others may write it (ISSUE 10 item 3).
        public static let notOwned = Code("notOwned")
        /// A synced folder's path that does not exist or is not a folder, or a Syncthing folder not found (C9).
        public static let invalidFolder = Code("invalidFolder")
        /// The session D-Bus cannot be reached, refused us, or went away (desktop notifications, issue 16: never
        /// fatal, the agent runs on without them).
        public static let busUnavailable = Code("busUnavailable")
        /// No interface here carries multicast, or the discovery port cannot be bound: `baton pair --find` cannot
        /// look for devices (pair by address instead).
        public static let multicastUnavailable = Code("multicastUnavailable")
        /// `baton pair --find` heard no device waiting to pair.
        public static let noDeviceFound = Code("noDeviceFound")
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

    /// The error for a failed bind of `what` (`host:port` or a socket path): ``Code/addressInUse`` when the kernel
    /// says so, ``Code/addressUnavailable`` otherwise.
    static func cannotListen(on what: String, _ error: Error) -> BatonAgentError {
        if let io = error as? IOError, io.errnoCode == EADDRINUSE {
            return BatonAgentError(.addressInUse, "cannot listen on \(what): it is in use (is another agent running?)")
        }
        return BatonAgentError(.addressUnavailable, "cannot listen on \(what): \(error)")
    }
}
