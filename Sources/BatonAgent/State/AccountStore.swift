import BatonClient
import BatonCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import X509

/// The account as it lives in a state folder: this device's identity, the roster, and the open invites.
///
/// Files: `identity.plist` (key, certificate, name), `roster.plist`, `invites.plist`, each written atomically with
/// mode 0600 in a folder of mode 0700. A missing or damaged file is an error naming it, never a silently regenerated
/// identity: a new identity would be a different device to every other member.
public struct AccountStore: Sendable {
    /// The state folder.
    public let folder: URL

    static let identityFile = "identity.plist"
    static let rosterFile = "roster.plist"
    static let invitesFile = "invites.plist"

    /// The default state folder: `$XDG_DATA_HOME/baton`, else `~/.local/share/baton`.
    public static func defaultFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        AgentSocket.defaultStateFolder(environment: environment)
    }

    /// A store in `folder` (not touched until used).
    public init(folder: URL) {
        self.folder = folder
    }

    var identityURL: URL { folder.appendingPathComponent(Self.identityFile) }
    var rosterURL: URL { folder.appendingPathComponent(Self.rosterFile) }
    var invitesURL: URL { folder.appendingPathComponent(Self.invitesFile) }

    /// Whether the folder holds an identity file (valid or not).
    public var isInitialized: Bool { FileManager.default.fileExists(atPath: identityURL.path) }

    /// Creates this device's identity and a one-device account. `now` is the system's clock, not an agent's (issue
    /// 26 item 2): it dates the certificate TLS checks against the system's clock.
    /// - Throws: `alreadyInitialized` when an identity exists (it is never replaced), `stateUnwritable`.
    @discardableResult
    public func initialize(name: String, now: Date = Date()) throws -> (DeviceIdentity, Roster) {
        guard !isInitialized else {
            throw BatonAgentError(.alreadyInitialized, "\(identityURL.path) already exists; this device already has an identity")
        }
        try createFolder()
        let identity = try DeviceIdentity.generate(name: name, now: now)
        let founder = Roster.Member(certificate: identity.certificateDER, name: name, addedBy: nil, addedAt: now)
        let roster = Roster(founder: founder, key: Self.randomKey())
        // The roster first: an identity without a roster is "not initialized" on the next try, never half an account.
        try saveRoster(roster)
        let document: PropertyList = [
            "v": 1, "key": .data(identity.privateKey.derRepresentation), "cert": .data(identity.certificateDER),
            "name": .string(name), "created": .date(now),
        ]
        try AtomicFile.store(try BinaryPropertyListEncoder.encode(document), at: identityURL)
        return (identity, roster)
    }

    /// This device's identity.
    /// - Throws: `notInitialized` when there is none, `stateCorrupt` or `statePermissions` naming the file.
    public func identity() throws -> DeviceIdentity {
        let document = try readDocument(identityURL, what: "identity")
        guard let keyBytes = document["key"]?.dataValue, let certificate = document["cert"]?.dataValue,
            let name = document["name"]?.stringValue
        else {
            throw BatonAgentError(.stateCorrupt, "\(identityURL.path): the identity lacks its key, certificate or name")
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(derRepresentation: keyBytes)
        } catch {
            throw BatonAgentError(.stateCorrupt, "\(identityURL.path): the private key cannot be read")
        }
        // The certificate must be readable and certify this very key: a damaged byte anywhere in either shows here.
        // It is self-signed, so its own signature covers every byte of it.
        guard let parsed = try? Certificate(derEncoded: Array(certificate)), parsed.publicKey == Certificate.PublicKey(key.publicKey),
            parsed.publicKey.isValidSignature(parsed.signature, for: parsed)
        else {
            throw BatonAgentError(.stateCorrupt, "\(identityURL.path): the certificate does not match the private key")
        }
        return DeviceIdentity(privateKey: key, certificateDER: certificate, name: name)
    }

    /// The roster.
    /// - Throws: `notInitialized`, `stateCorrupt` or `statePermissions` naming the file.
    public func roster() throws -> Roster {
        let data = try readFile(rosterURL, what: "roster")
        do {
            return try Roster(decoding: data)
        } catch {
            throw BatonAgentError(.stateCorrupt, "\(rosterURL.path): \(error)")
        }
    }

    /// Replaces the roster on disk, atomically.
    public func saveRoster(_ roster: Roster) throws {
        try createFolder()
        try AtomicFile.store(try roster.encoded(), at: rosterURL)
    }

    /// 32 random bytes for an account key.
    public static func randomKey() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    // MARK: Files

    func createFolder() throws {
        try createFolderOnly()
        AtomicFile.removeLeftovers(in: folder)
    }

    /// Creates the folder without touching what is in it.
    func createFolderOnly() throws {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw BatonAgentError(.stateUnwritable, "\(folder.path): cannot create the state folder")
        }
    }

    func readFile(_ url: URL, what: String) throws -> Data {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw BatonAgentError(.notInitialized, "\(url.path): no \(what) here; run `baton init --name NAME` first (or pass --state)")
        }
        if let mode = FileStatus(path: url.path)?.permissions, mode & 0o077 != 0 {
            throw BatonAgentError(
                .statePermissions,
                "\(url.path): permissions \(String(mode, radix: 8)) let others read the \(what); run `chmod 600 \(url.path)`"
            )
        }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw BatonAgentError(.stateCorrupt, "\(url.path): cannot be read")
        }
        return data
    }

    func readDocument(_ url: URL, what: String) throws -> PropertyList {
        let data = try readFile(url, what: what)
        do {
            return try BinaryPropertyListDecoder.decode(data)
        } catch {
            throw BatonAgentError(.stateCorrupt, "\(url.path): the \(what) file is damaged (\(error)); it is not replaced automatically")
        }
    }
}
