/// The one error type of `BatonRegistry`: loading app bundles and desktop files, reading associated-domain files, verifying them.
///
/// Compare ``code`` (stable) rather than ``message`` (for people).
public struct BatonRegistryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as it appears in `description` and `--json` output.
        public let name: String

        private init(_ name: String) { self.name = name }

        public var description: String { name }

        /// The bundle folder or its Info.plist cannot be read.
        public static let bundleUnreadable = Code("bundleUnreadable")
        /// The Info.plist or entitlements file is not a valid property list, or not a dictionary.
        public static let invalidInfoPlist = Code("invalidInfoPlist")
        /// A desktop file with `X-Baton-` keys that cannot register an app (issue 28 item 2): over the size bounds, not
        /// a desktop entry, not `Type=Application`, no valid desktop file id, or its `TryExec` not installed.
        public static let invalidDesktopFile = Code("invalidDesktopFile")
        /// An `apple-app-site-association` or `assetlinks.json` file is not what its format requires.
        public static let invalidAssociationFile = Code("invalidAssociationFile")
        /// An associated-domain file above the size limit.
        public static let associationTooLarge = Code("associationTooLarge")
        /// A signed associated-domain file whose CMS structure cannot be read.
        public static let invalidSignedData = Code("invalidSignedData")
        /// The signature does not match the content: the file was altered after signing.
        public static let signatureMismatch = Code("signatureMismatch")
        /// The signing certificate does not chain to a trusted root.
        public static let untrustedCertificate = Code("untrustedCertificate")
        /// The signing certificate is expired or not yet valid.
        public static let certificateExpired = Code("certificateExpired")
        /// The signing certificate is not valid for the domain the file was fetched from.
        public static let domainMismatch = Code("domainMismatch")
        /// A signature or digest algorithm Baton does not verify.
        public static let unsupportedAlgorithm = Code("unsupportedAlgorithm")
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
