/// Why a Syncthing `config.xml` could not be read (C9, `baton folders syncthing`): BatonFolders' one error type
/// (issue 26 item 4: the reader left BatonProtocol, which holds what crosses the wire, with its codes).
///
/// Hostile input gets this error, never a trap (the file is another program's, and Fuzz/SyncthingConfigFuzzer.swift
/// runs it). Printed as before, `message [code]`. Compare ``code``, not ``message``.
public struct SyncthingConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as printed.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        /// Not well-formed where Baton reads it.
        public static let malformed = Code("syncthingConfigMalformed")
        /// Over one of ``SyncthingConfigLimits`` (size, folders, attribute length, attributes, depth).
        public static let tooLarge = Code("syncthingConfigTooLarge")
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
