import BatonCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SwiftASN1
// The SPI is the one swift-certificates' own deprecation notice points to for validating at a given time; it lets
// the caller inject the clock (tests check expiry without waiting). The CMS SPI is not used: it rejects the RSA
// SignedData that `openssl smime -sign` and Apple's 2014 instructions produce (docs/ARCHITECTURE.md).
@_spi(FixedExpiryValidationTime) import X509

/// Verifies a CMS-signed `apple-app-site-association` file (`application/pkcs7-mime`), the form Apple required in
/// 2014 (SEMANTICS E4): a `SignedData` whose content is the JSON, signed by a certificate valid for the domain the
/// file came from.
///
/// The `SignedData` is read with swift-asn1, the signature checked with the signer certificate's key (RSA PKCS #1
/// v1.5 or ECDSA, SHA-256/384/512; with or without signed attributes), and the certificate chain with
/// swift-certificates' `Verifier` against the given trust roots. Each failure has its own code: a tampered body is
/// `signatureMismatch`, an expired certificate `certificateExpired`, an unknown root `untrustedCertificate`, another
/// domain `domainMismatch`.
public struct SignedAssociationVerifier: Sendable {
    /// The largest signed file accepted: the JSON's own limit plus room for a certificate chain.
    public static let maximumSize = AppSiteAssociation.maximumSize + 64 * 1024

    /// The certificates trusted to vouch for domains.
    public var trustRoots: [Certificate]

    /// A verifier trusting `trustRoots`.
    public init(trustRoots: [Certificate]) {
        self.trustRoots = trustRoots
    }

    /// A verifier trusting every certificate in a PEM bundle (such as `/etc/ssl/certs/ca-certificates.crt`).
    /// - Throws: ``BatonRegistryError`` `invalidSignedData` when the bundle holds no readable certificate.
    public init(trustRootsPEM pem: String) throws {
        let documents = (try? PEMDocument.parseMultiple(pemString: pem)) ?? []
        let roots = documents.compactMap { try? Certificate(pemDocument: $0) }
        guard !roots.isEmpty else {
            throw BatonRegistryError(.invalidSignedData, "the trust-root bundle holds no readable certificate")
        }
        self.init(trustRoots: roots)
    }

    /// Whether `data` looks like a signed file (DER starts with a SEQUENCE) rather than plain JSON.
    public static func isSigned(_ data: Data) -> Bool {
        data.first == 0x30
    }

    /// Checks the file and returns the JSON it carries.
    /// - Parameters:
    ///   - data: The file as fetched (DER).
    ///   - domain: The domain it was fetched from: the signer's certificate must be valid for it.
    ///   - now: The time to judge certificate validity at.
    /// - Throws: ``BatonRegistryError`` with a code for each kind of failure.
    public func verify(_ data: Data, domain: String, now: Date = Date()) async throws -> Data {
        guard data.count <= Self.maximumSize else {
            throw BatonRegistryError(.associationTooLarge, "signed association file is \(data.count) bytes, the limit is \(Self.maximumSize)")
        }
        let signed = try SignedData(Array(data))
        let signer = try signed.verifiedSigner()

        // Expiry first, so an expired certificate is reported as such rather than as an unverifiable chain.
        for certificate in [signer] + signed.certificates where certificate.notValidAfter < now || certificate.notValidBefore > now {
            throw BatonRegistryError(
                .certificateExpired,
                "certificate \(BatonCoreError.quoted(certificate.subject.description)) is valid from \(certificate.notValidBefore) to \(certificate.notValidAfter), not at \(now)"
            )
        }
        let intermediates = CertificateStore(signed.certificates.filter { $0 != signer })
        var chain = Verifier(rootCertificates: CertificateStore(trustRoots)) {
            RFC5280Policy(fixedExpiryValidationTime: now)
        }
        guard case .validCertificate = await chain.validate(leaf: signer, intermediates: intermediates) else {
            throw BatonRegistryError(.untrustedCertificate, "the signer \(BatonCoreError.quoted(signer.subject.description)) does not chain to a trusted root")
        }
        var identity = Verifier(rootCertificates: CertificateStore(trustRoots)) {
            RFC5280Policy(fixedExpiryValidationTime: now)
            ServerIdentityPolicy(serverHostname: domain, serverIP: nil)
        }
        guard case .validCertificate = await identity.validate(leaf: signer, intermediates: intermediates) else {
            throw BatonRegistryError(.domainMismatch, "the signer \(BatonCoreError.quoted(signer.subject.description)) is not valid for \(domain)")
        }
        return Data(signed.content)
    }
}

/// The parts of a CMS `SignedData` (RFC 5652) that verification needs.
private struct SignedData {
    static let signedDataType: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
    static let contentTypeAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 3]
    static let messageDigestAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 4]

    struct Signer {
        let issuer: ArraySlice<UInt8>?
        let serialNumber: ArraySlice<UInt8>?
        let subjectKeyIdentifier: ArraySlice<UInt8>?
        let digest: ASN1ObjectIdentifier
        /// The signed attributes re-tagged as a SET, as they were signed; nil when the content is signed directly.
        let signedAttributes: [UInt8]?
        let attributes: [(ASN1ObjectIdentifier, [ASN1Node])]
        let signatureAlgorithm: ASN1ObjectIdentifier
        let signature: ArraySlice<UInt8>
    }

    let contentType: ASN1ObjectIdentifier
    let content: [UInt8]
    let certificates: [Certificate]
    let signers: [Signer]

    init(_ bytes: [UInt8]) throws {
        let root: ASN1Node
        do {
            root = try DER.parse(bytes)
        } catch {
            do { root = try BER.parse(bytes) } catch { throw Self.invalid("not DER or BER: \(error)") }
        }
        let contentInfo = try Self.children(root, "ContentInfo")
        guard contentInfo.count == 2, try Self.oid(contentInfo[0]) == Self.signedDataType else {
            throw Self.invalid("not a CMS SignedData (ContentInfo of another type)")
        }
        guard let signedDataNode = try Self.children(contentInfo[1], "content").first else { throw Self.invalid("empty content") }
        let fields = try Self.children(signedDataNode, "SignedData")
        guard fields.count >= 4 else { throw Self.invalid("SignedData has \(fields.count) fields, at least 4 are required") }

        let encapsulated = try Self.children(fields[2], "EncapsulatedContentInfo")
        guard encapsulated.count == 2, let octets = try Self.children(encapsulated[1], "eContent").first else {
            throw Self.invalid("the signed content is detached or missing; Baton needs it inside the file")
        }
        contentType = try Self.oid(encapsulated[0])
        content = try Self.octetString(octets)

        var certificates: [Certificate] = []
        var signerSet: ASN1Node?
        for node in fields[3...] {
            if node.identifier.tagClass == .contextSpecific, node.identifier.tagNumber == 0 {
                for child in try Self.children(node, "certificates") {
                    // Other certificate formats ([0]..[3] alternatives) are skipped; X.509 ones are SEQUENCEs.
                    guard child.identifier == .sequence else { continue }
                    do {
                        certificates.append(try Certificate(derEncoded: Array(child.encodedBytes)))
                    } catch {
                        throw Self.invalid("a certificate in the file cannot be read: \(error)")
                    }
                }
            } else if node.identifier == .set {
                signerSet = node
            }
        }
        guard let signerSet else { throw Self.invalid("SignedData has no signerInfos") }
        self.certificates = certificates
        signers = try Self.children(signerSet, "signerInfos").map(Self.signer)
        guard !signers.isEmpty else { throw Self.invalid("SignedData has no signer") }
    }

    static func signer(_ node: ASN1Node) throws -> Signer {
        let fields = try children(node, "SignerInfo")
        guard fields.count >= 5 else { throw invalid("SignerInfo has \(fields.count) fields, at least 5 are required") }
        var issuer: ArraySlice<UInt8>?
        var serial: ArraySlice<UInt8>?
        var keyIdentifier: ArraySlice<UInt8>?
        if fields[1].identifier == .sequence {
            let parts = try children(fields[1], "IssuerAndSerialNumber")
            guard parts.count == 2 else { throw invalid("IssuerAndSerialNumber has \(parts.count) fields") }
            issuer = parts[0].encodedBytes
            serial = try primitive(parts[1], "serialNumber")
        } else {
            keyIdentifier = try primitive(fields[1], "subjectKeyIdentifier")
        }
        let digest = try algorithm(fields[2])
        var index = 3
        var signedAttributes: [UInt8]?
        var attributes: [(ASN1ObjectIdentifier, [ASN1Node])] = []
        if fields[index].identifier.tagClass == .contextSpecific, fields[index].identifier.tagNumber == 0 {
            // Signed over the DER of the attributes with the SET tag in place of the [0] IMPLICIT tag (RFC 5652 §5.4).
            var encoded = Array(fields[index].encodedBytes)
            encoded[0] = 0x31
            signedAttributes = encoded
            for attribute in try children(fields[index], "signedAttrs") {
                let parts = try children(attribute, "Attribute")
                guard parts.count == 2 else { throw invalid("an attribute has \(parts.count) fields") }
                attributes.append((try oid(parts[0]), try children(parts[1], "attrValues")))
            }
            index += 1
        }
        guard fields.count >= index + 2 else { throw invalid("SignerInfo ends before its signature") }
        return Signer(
            issuer: issuer,
            serialNumber: serial,
            subjectKeyIdentifier: keyIdentifier,
            digest: digest,
            signedAttributes: signedAttributes,
            attributes: attributes,
            signatureAlgorithm: try algorithm(fields[index]),
            signature: try primitive(fields[index + 1], "signature")
        )
    }

    /// The certificate of a signer whose signature verifies; the first such signer.
    func verifiedSigner() throws -> Certificate {
        var lastError = BatonRegistryError(.signatureMismatch, "no signer's signature verifies")
        for signer in signers {
            guard let certificate = certificates.first(where: { matches($0, signer) }) else {
                lastError = BatonRegistryError(.invalidSignedData, "the signer's certificate is not in the file")
                continue
            }
            do {
                try verify(signer, with: certificate)
                return certificate
            } catch let error as BatonRegistryError {
                lastError = error
            }
        }
        throw lastError
    }

    func matches(_ certificate: Certificate, _ signer: Signer) -> Bool {
        if let keyIdentifier = signer.subjectKeyIdentifier {
            let extensionValue = try? certificate.extensions.subjectKeyIdentifier
            return extensionValue.map { ArraySlice($0.keyIdentifier) == keyIdentifier } ?? false
        }
        guard let serial = signer.serialNumber, ArraySlice(certificate.serialNumber.bytes) == serial.drop(while: { $0 == 0 })
            || certificate.serialNumber.bytes == serial
        else { return false }
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(certificate.issuer)) != nil, let issuer = signer.issuer else { return true }
        return ArraySlice(serializer.serializedBytes) == issuer
    }

    func verify(_ signer: Signer, with certificate: Certificate) throws {
        let hash = try Self.hash(content, signer.digest)
        let signedBytes: [UInt8]
        if let signedAttributes = signer.signedAttributes {
            guard let digestValue = signer.attributes.first(where: { $0.0 == Self.messageDigestAttribute })?.1.first else {
                throw Self.invalid("signed attributes without a messageDigest")
            }
            guard try Self.octetString(digestValue) == hash else {
                throw BatonRegistryError(.signatureMismatch, "the content does not match the signed digest: the file was altered after signing")
            }
            if let typeValue = signer.attributes.first(where: { $0.0 == Self.contentTypeAttribute })?.1.first {
                guard try Self.oid(typeValue) == contentType else { throw Self.invalid("the signed content type differs from the content's") }
            }
            signedBytes = signedAttributes
        } else {
            signedBytes = content
        }
        let algorithm = try Self.signatureAlgorithm(signer.signatureAlgorithm, digest: signer.digest)
        guard certificate.publicKey.isValidSignature(signer.signature, for: signedBytes, signatureAlgorithm: algorithm) else {
            throw BatonRegistryError(.signatureMismatch, "the signature does not verify with \(BatonCoreError.quoted(certificate.subject.description)): the file was altered or signed by another key")
        }
    }

    // MARK: Algorithms

    static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    static let sha384: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 2]
    static let sha512: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 3]

    static func hash(_ bytes: [UInt8], _ digest: ASN1ObjectIdentifier) throws -> [UInt8] {
        switch digest {
        case sha256: return Array(SHA256.hash(data: bytes))
        case sha384: return Array(SHA384.hash(data: bytes))
        case sha512: return Array(SHA512.hash(data: bytes))
        default: throw BatonRegistryError(.unsupportedAlgorithm, "digest algorithm \(BatonCoreError.quoted(digest.description)) is not supported (SHA-256, -384 and -512 are)")
        }
    }

    static func signatureAlgorithm(_ oid: ASN1ObjectIdentifier, digest: ASN1ObjectIdentifier) throws -> Certificate.SignatureAlgorithm {
        let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 1]
        let ecPublicKey: ASN1ObjectIdentifier = [1, 2, 840, 10045, 2, 1]
        switch (oid, digest) {
        case (rsaEncryption, sha256), ([1, 2, 840, 113_549, 1, 1, 11], _): return .sha256WithRSAEncryption
        case (rsaEncryption, sha384), ([1, 2, 840, 113_549, 1, 1, 12], _): return .sha384WithRSAEncryption
        case (rsaEncryption, sha512), ([1, 2, 840, 113_549, 1, 1, 13], _): return .sha512WithRSAEncryption
        case (ecPublicKey, sha256), ([1, 2, 840, 10045, 4, 3, 2], _): return .ecdsaWithSHA256
        case (ecPublicKey, sha384), ([1, 2, 840, 10045, 4, 3, 3], _): return .ecdsaWithSHA384
        case (ecPublicKey, sha512), ([1, 2, 840, 10045, 4, 3, 4], _): return .ecdsaWithSHA512
        default:
            throw BatonRegistryError(.unsupportedAlgorithm, "signature algorithm \(BatonCoreError.quoted(oid.description)) with digest \(BatonCoreError.quoted(digest.description)) is not supported")
        }
    }

    // MARK: ASN.1 access

    static func invalid(_ message: String) -> BatonRegistryError {
        BatonRegistryError(.invalidSignedData, message)
    }

    static func children(_ node: ASN1Node, _ what: String) throws -> [ASN1Node] {
        guard case .constructed(let nodes) = node.content else { throw invalid("\(what) should be constructed") }
        return Array(nodes)
    }

    static func primitive(_ node: ASN1Node, _ what: String) throws -> ArraySlice<UInt8> {
        guard case .primitive(let bytes) = node.content else { throw invalid("\(what) should be primitive") }
        return bytes
    }

    /// An OCTET STRING's bytes; a constructed one (BER) is the concatenation of its parts.
    static func octetString(_ node: ASN1Node) throws -> [UInt8] {
        switch node.content {
        case .primitive(let bytes): return Array(bytes)
        case .constructed(let parts): return try parts.flatMap { try octetString($0) }
        }
    }

    static func oid(_ node: ASN1Node) throws -> ASN1ObjectIdentifier {
        do {
            return try ASN1ObjectIdentifier(derEncoded: node)
        } catch {
            throw invalid("expected an object identifier")
        }
    }

    static func algorithm(_ node: ASN1Node) throws -> ASN1ObjectIdentifier {
        guard let first = try children(node, "AlgorithmIdentifier").first else { throw invalid("empty AlgorithmIdentifier") }
        return try oid(first)
    }
}
