import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The continuing device's offer of a direct stream (issue 30; docs/PROTOCOL.md §8 "Direct streams"), carried in its
/// `stream` request: the apps then hold a TCP connection of their own, with TLS 1.3 between them, and the agents are
/// out of the byte path. The originating agent takes it by answering `opened` with its own app end's fingerprint;
/// an older agent ignores the two fields and the stream is relayed as before.
public struct DirectStreamOffer: Sendable, Hashable {
    /// A SHA-256 fingerprint.
    public static let fingerprintLength = 32
    /// The one-time token the stream's TCP connection names in its ``StreamPreamble``.
    public var token: Data
    /// SHA-256 of the continuing app end's certificate (DER), made for this stream alone: the originating app's TLS
    /// accepts exactly that certificate.
    public var fingerprint: Data

    /// An offer.
    public init(token: Data, fingerprint: Data) {
        self.token = token
        self.fingerprint = fingerprint
    }

    /// The offer in a `stream` message's `direct` and `cert` fields; nil when it has neither (an older peer, or a
    /// relayed stream), `malformedMessage` when only one or either is the wrong size.
    init?(_ fields: MessageFields) throws {
        switch (fields.fields["direct"], fields.fields["cert"]) {
        case (nil, nil):
            return nil
        case (_?, _?):
            self.init(
                token: try fields.data("direct", count: StreamPreamble.tokenLength),
                fingerprint: try fields.data("cert", count: Self.fingerprintLength)
            )
        default:
            throw fields.missing("direct", "given with \"cert\" (a direct stream's token and certificate fingerprint)")
        }
    }
}

/// What an app end of a direct stream is given with its socket (IPC `direct`, issue 30): the TLS identity its agent
/// made for this stream alone, and the one certificate it accepts from the other end. The key signs nothing but this
/// stream's handshake; no device key ever reaches an app.
public struct DirectStreamEnd: Sendable, Hashable {
    /// Which side of the TLS handshake the app is. The originating app connects (`client`) and the continuing app
    /// answers (`server`): the continuing side's connection then carries nothing after its preamble until the
    /// originating side speaks, so its agent reads no byte meant for the app.
    public enum Role: String, Sendable {
        case client
        case server
    }

    /// Larger than a P-256 key in DER (138 bytes) by far; a bound on what an app reads.
    public static let maximumKeyLength = 1_024
    /// A self-signed P-256 certificate is under 600 bytes.
    public static let maximumCertificateLength = 4_096

    public var role: Role
    /// The end's private key, DER (SEC 1 / PKCS#8 as swift-crypto writes it).
    public var key: Data
    /// The end's certificate, DER.
    public var certificate: Data
    /// SHA-256 of the other end's certificate (DER).
    public var peerFingerprint: Data

    /// An end.
    public init(role: Role, key: Data, certificate: Data, peerFingerprint: Data) {
        self.role = role
        self.key = key
        self.certificate = certificate
        self.peerFingerprint = peerFingerprint
    }
}

extension DirectStreamEnd {
    /// The fingerprint of a certificate (DER) as the other end pins it: SHA-256.
    public static func fingerprint(of certificate: some DataProtocol) -> Data {
        Data(SHA256.hash(data: certificate))
    }
}
