import BatonProtocol
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The TLS identity of one app end of one direct stream (issue 30): a fresh P-256 key and a self-signed certificate
/// made for this stream, given to the app with the stream's socket. It proves nothing but "the end the agents
/// introduced": each agent pins the other end's certificate by its fingerprint, sent over their authenticated
/// session, so the key is worth nothing for any other connection, and the device's own key never leaves the agent.
struct StreamCredential: Sendable {
    /// How long the certificate is valid: a stream needs it only for its handshake.
    static let lifetime: TimeInterval = 86_400

    let key: P256.Signing.PrivateKey
    let certificateDER: Data

    /// SHA-256 of the certificate: what the other end pins.
    var fingerprint: Data { Data(SHA256.hash(data: certificateDER)) }

    /// A new credential.
    /// - Throws: swift-certificates' error if the certificate cannot be made (never expected).
    init(now: Date = Date()) throws {
        key = P256.Signing.PrivateKey()
        certificateDER = try DeviceIdentity.selfSignedCertificate(for: key, commonName: "Baton stream", now: now, lifetime: Self.lifetime)
    }

    /// What the app is given: its role, this key and certificate, and the certificate it accepts.
    func end(_ role: DirectStreamEnd.Role, peer: Data) -> DirectStreamEnd {
        DirectStreamEnd(role: role, key: key.derRepresentation, certificate: certificateDER, peerFingerprint: peer)
    }
}
