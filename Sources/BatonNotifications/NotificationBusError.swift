/// Why desktop notifications cannot be shown now: the session D-Bus cannot be reached, refused us, or went away, or
/// libsystemd cannot be loaded (issue 16: never fatal; the agent tries again later, and `baton doctor` says so).
///
/// BatonNotifications' own error (issue 26 item 4), printed as the agent's errors are, `message [busUnavailable]`.
/// Compare ``code``, not ``message``.
public struct NotificationBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as printed.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        /// The session bus, its notification server or libsystemd is not there or did not answer.
        public static let busUnavailable = Code("busUnavailable")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong and what to do, for a person.
    public var message: String

    /// An error with `code` and `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code)]" }
}
