/// Why the agent refused a client of its Unix socket: the `code` of a `refused` message (docs/PROTOCOL.md §7).
///
/// A struct of named codes rather than a closed enum: a newer agent may refuse for a reason this version does not
/// know, and that code still arrives, with its text, instead of failing to decode. In code, only the named ones are
/// written (issue 26 item 4: no failure codes as bare strings at the IPC boundary).
public struct IPCRefusal: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    /// The hello's IPC version is not this agent's.
    public static let unsupportedVersion = IPCRefusal(rawValue: "unsupportedVersion")
    /// Another user's process; a process that is not (or no longer) the app it names, or shares its socket; a stream
    /// token for another app.
    public static let notPermitted = IPCRefusal(rawValue: "notPermitted")
    /// No registered app has that bundle identifier, or its identity is not resolved.
    public static let unknownApp = IPCRefusal(rawValue: "unknownApp")
    /// The app is connected already, from another process that still runs.
    public static let alreadyConnected = IPCRefusal(rawValue: "alreadyConnected")
    /// A frame or message that cannot be read (too long, not a property list, not a message).
    public static let malformedMessage = IPCRefusal(rawValue: "malformedMessage")
    /// A message before the hello, or one this kind of client may not send.
    public static let protocolViolation = IPCRefusal(rawValue: "protocolViolation")
    /// No hello within its deadline.
    public static let timedOut = IPCRefusal(rawValue: "timedOut")
    /// The agent could not launch the app's executable (at the descriptor limit, say).
    public static let launchFailed = IPCRefusal(rawValue: "launchFailed")

    /// A continuation stream that could not open, for `failure` (F1–F3): its code is the failure's.
    public static func stream(_ failure: FetchFailure) -> IPCRefusal {
        IPCRefusal(rawValue: failure.rawValue)
    }

    /// The codes of the hello and of messages, as opposed to a stream's failures.
    public static let connectionCodes: [IPCRefusal] = [
        .unsupportedVersion, .notPermitted, .unknownApp, .alreadyConnected, .malformedMessage, .protocolViolation, .timedOut, .launchFailed,
    ]
}
