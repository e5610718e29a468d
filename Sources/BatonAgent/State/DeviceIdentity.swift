import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwiftASN1
import X509

/// This device's long-lived identity: a P-256 key and a self-signed certificate for it. The device id is the
/// SHA-256 of the certificate, so the certificate is what other members pin.
public struct DeviceIdentity: Sendable {
    /// The signing key (never logged, never sent).
    public let privateKey: P256.Signing.PrivateKey
    /// The certificate, DER.
    public let certificateDER: Data
    /// The person's name for the device.
    public let name: String

    /// The device id.
    public var id: DeviceID { DeviceID(certificateDER: certificateDER) }

    /// A new identity with a fresh key and a certificate valid for 20 years. `now` is the system's clock, not an
    /// agent's (issue 26 item 2): TLS checks the certificate's validity against the system's clock.
    public static func generate(name: String, now: Date = Date()) throws -> DeviceIdentity {
        let key = P256.Signing.PrivateKey()
        let certificate = try selfSignedCertificate(for: key, commonName: "Baton device", now: now, lifetime: 20 * 365 * 86_400)
        return DeviceIdentity(privateKey: key, certificateDER: certificate, name: name)
    }

    /// A self-signed certificate (DER) for `key`, valid from an hour before `now` (clocks differ) for `lifetime`
    /// seconds, for TLS either way: a device's, or a direct stream's end (issue 30).
    static func selfSignedCertificate(for key: P256.Signing.PrivateKey, commonName: String, now: Date, lifetime: TimeInterval) throws -> Data {
        let subject = try DistinguishedName {
            CommonName(commonName)
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(lifetime),
            issuer: subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth, .clientAuth])
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return Data(serializer.serializedBytes)
    }

    /// An identity from its parts.
    public init(privateKey: P256.Signing.PrivateKey, certificateDER: Data, name: String) {
        self.privateKey = privateKey
        self.certificateDER = certificateDER
        self.name = name
    }

    /// The certificate in PEM, for TLS.
    public var certificatePEM: String {
        "-----BEGIN CERTIFICATE-----\n" + certificateDER.base64EncodedString(options: .lineLength64Characters)
            + "\n-----END CERTIFICATE-----\n"
    }
}
