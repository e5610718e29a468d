import BatonCore
import BatonProtocol
import Foundation

/// Why a continuation failed, as `didFailToContinueUserActivity` receives it (SEMANTICS C6, C8): a stable code that
/// says which, and a message for the person. The library's one error type: a continuation stream (F1-F3) and deleting
/// what was saved for search (G3) throw it too.
public struct ContinuationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let name: String

        init(_ name: String) { self.name = name }

        public var description: String { name }

        /// The person started another continuation while this one was fetched (C6): Apple's user-cancelled error.
        public static let userCancelled = Code("cancelled")
        /// The originating device is gone: unreachable, or the session broke (C8).
        public static let peerGone = Code("peerGone")
        /// The originating device did not answer in time (C8).
        public static let timedOut = Code("timedOut")
        /// The app on the originating device did not give its state within the deadline (C8).
        public static let appNotAnswering = Code("appNotAnswering")
        /// The app on the originating device answered that it cannot give its state (its `userActivityWillSave`
        /// or state callback failed, or the activity is gone there): at once, unlike ``appNotAnswering``.
        public static let saveFailed = Code("saveFailed")
        /// The app on the originating device quit before giving its state.
        public static let appGone = Code("appGone")
        /// The activity is no longer offered (resigned, invalidated, replaced, expired).
        public static let notCurrent = Code("notCurrent")
        /// The activity may not be handed off.
        public static let notEligible = Code("notEligible")
        /// The state is above the hard size limit (A11).
        public static let tooLarge = Code("tooLarge")
        /// The originating device no longer accepts this one (removed from the account).
        public static let refused = Code("refused")
        /// The state came from a newer Baton, or could not be read (H1).
        public static let unreadable = Code("unreadable")
        /// This device's agent went away during the continuation.
        public static let agentGone = Code("agentGone")
        /// The app could not be launched, or did not connect in time.
        public static let launchFailed = Code("launchFailed")
        /// Something unreadable, or of the wrong kind, came back from the originating device (C8).
        public static let protocolViolation = Code("protocolViolation")
        /// The originating device runs an older Baton that cannot give the state this way.
        public static let unsupported = Code("unsupported")
        /// No app on this device continues the activity (D1, D3).
        public static let noApp = Code("noApp")
        /// The app's process changed after it connected: it may not receive the state.
        public static let notPermitted = Code("notPermitted")
        /// A document the activity names, in a synced folder, is not on this device: the folder is not set up here
        /// (`baton folders add`), or the file did not sync in time (C9). The message names the file and the folder.
        public static let documentNotSynced = Code("documentNotSynced")
        /// The originating activity does not support continuation streams, or its app declined the stream (F1).
        public static let noStreams = Code("noStreams")
        /// Streams were asked for an activity this device did not continue (F1).
        public static let notContinued = Code("notContinued")
        /// Too many continuation streams are open already (docs/PROTOCOL.md §8).
        public static let tooManyStreams = Code("tooManyStreams")
        /// This side of a continuation stream already finished writing, or closed the stream (F3): a write, a second
        /// `finish()` or a read after `close()`.
        public static let streamClosed = Code("streamClosed")
        /// The app is not connected to its device's agent (``BatonApplication/connect(bundleIdentifier:socketPath:)``),
        /// so there is nothing to ask (G3).
        public static let notConnected = Code("notConnected")
        /// The device's search index could not do what was asked; the message has its reason (G3).
        public static let searchFailed = Code("searchFailed")
        /// A persistent identifier is longer than `IPCMessage.maximumPersistentIdentifierLength` bytes:
        /// no entry can have it (G3).
        public static let identifierTooLong = Code("identifierTooLong")
        /// Anything else; the message says what.
        public static let other = Code("other")

        /// The code for the reason the agent reported: one for each, so the app sees exactly what failed (C8).
        public init(_ failure: ContinuationFailure) {
            switch failure {
            case .fetch(.cancelled): self = .userCancelled
            case .fetch(.peerGone): self = .peerGone
            case .fetch(.timedOut): self = .timedOut
            case .fetch(.appNotAnswering): self = .appNotAnswering
            case .fetch(.appGone): self = .appGone
            case .fetch(.saveFailed): self = .saveFailed
            case .fetch(.notCurrent): self = .notCurrent
            case .fetch(.notEligible): self = .notEligible
            case .fetch(.tooLarge): self = .tooLarge
            case .fetch(.refused): self = .refused
            case .fetch(.protocolViolation): self = .protocolViolation
            case .fetch(.unsupported): self = .unsupported
            case .fetch(.noStreams): self = .noStreams
            case .fetch(.notContinued): self = .notContinued
            case .fetch(.tooManyStreams): self = .tooManyStreams
            case .noApp: self = .noApp
            case .launchFailed: self = .launchFailed
            case .notPermitted: self = .notPermitted
            case .documentNotSynced: self = .documentNotSynced
            }
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What happened, for a person.
    public var message: String

    /// An error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether this is the user-cancelled error of C6 (Apple: `NSUserCancelledError` in the Cocoa domain).
    public var isUserCancelled: Bool { code == .userCancelled }

    public var description: String { "\(message) [\(code)]" }
}

/// Continuation errors as `NSError`s, the way Apple's code checks them (issue 12): all in the Cocoa domain, a
/// cancellation as `NSUserCancelledError`, the failures Apple names as its own `NSUserActivity…Error` codes, and the
/// rest as `NSUserActivityHandoffFailedError`; `userInfo[ContinuationError.codeKey]` has Baton's exact code.
extension ContinuationError: CustomNSError, LocalizedError {
    /// The `NSError` `userInfo` key holding Baton's code name (`"peerGone"`, …), for code that wants the detail.
    public static let codeKey = "BatonContinuationErrorCode"

    public static var errorDomain: String { NSCocoaErrorDomain }

    public var errorCode: Int {
        switch code {
        case .userCancelled: NSUserCancelledError
        case .peerGone, .agentGone, .notConnected: CocoaError.Code.userActivityConnectionUnavailable.rawValue
        case .timedOut, .appNotAnswering: CocoaError.Code.userActivityRemoteApplicationTimedOut.rawValue
        case .tooLarge: CocoaError.Code.userActivityHandoffUserInfoTooLarge.rawValue
        // The app answered, without its state: Apple's "the data could not be retrieved" (4608), not the timeout
        // (4610) an app that never answered gets (issue 25 item 4).
        case .saveFailed: CocoaError.Code.userActivityHandoffFailed.rawValue
        default: CocoaError.Code.userActivityHandoffFailed.rawValue
        }
    }

    public var errorUserInfo: [String: Any] {
        [NSLocalizedDescriptionKey: message, Self.codeKey: code.name]
    }

    public var errorDescription: String? { message }
}
