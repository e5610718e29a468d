import BatonRegistry
import BatonTestSupport
import Foundation
import Testing
import X509

/// A throwaway PKI made with openssl, an independent signer: two CAs, leaves for shopsnap.example, signed files.
final class TestPKI: Sendable {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("baton-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(#"{"activitycontinuation": {"apps": ["RAZE.com.razeware.ShopSnap"]}}"#.utf8)
            .write(to: directory.appendingPathComponent("aasa.json"))
        try Data(
            "subjectAltName=DNS:shopsnap.example\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n".utf8
        ).write(to: directory.appendingPathComponent("leaf.ext"))
        try shell(
            """
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj "/CN=Baton Test CA" \
              -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
            openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 30 -subj "/CN=Someone Else CA" \
              -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
            openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj "/CN=shopsnap.example"
            openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 20 -extfile leaf.ext -out leaf.pem
            openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile leaf.ext -out short.pem
            openssl ecparam -genkey -name prime256v1 -noout -out ecleaf.key
            openssl req -new -key ecleaf.key -out ecleaf.csr -subj "/CN=shopsnap.example"
            openssl x509 -req -in ecleaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 20 -extfile leaf.ext -out ecleaf.pem
            openssl smime -sign -in aasa.json -inkey leaf.key -signer leaf.pem -certfile ca.pem -noattr -nodetach -outform DER -out apple2014.der
            openssl smime -sign -binary -in aasa.json -inkey leaf.key -signer leaf.pem -nodetach -outform DER -out attrs.der
            openssl cms -sign -binary -in aasa.json -inkey ecleaf.key -signer ecleaf.pem -nodetach -outform DER -out ec.der
            openssl smime -sign -binary -in aasa.json -inkey leaf.key -signer short.pem -nodetach -outform DER -out short.der
            """
        )
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func shell(_ script: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-e", "-c", script]
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BatonRegistryError(.invalidSignedData, "openssl failed: \(String(decoding: text, as: UTF8.self))")
        }
    }

    func data(_ name: String) throws -> Data { try Data(contentsOf: directory.appendingPathComponent(name)) }

    func certificate(_ name: String) throws -> Certificate {
        try Certificate(pemEncoded: String(decoding: try data(name), as: UTF8.self))
    }
}

@Suite("Signed apple-app-site-association files (E4, 2014 form)", .serialized, .requires(.openssl))
struct SignedAssociationTests {
    static let pki: Result<TestPKI, Error> = Result { try TestPKI() }

    static func verifier(root: String = "ca.pem") throws -> (TestPKI, SignedAssociationVerifier) {
        let pki = try pki.get()
        return (pki, SignedAssociationVerifier(trustRoots: [try pki.certificate(root)]))
    }

    static func expectCode(_ code: BatonRegistryError.Code, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected \(code), but it verified")
        } catch let error as BatonRegistryError {
            #expect(error.code == code, "\(error)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test("Apple's 2014 command (smime -sign -noattr, text mode, RSA) verifies, and the JSON inside approves the app")
    func apple2014() async throws {
        let (pki, verifier) = try Self.verifier()
        let json = try await verifier.verify(try pki.data("apple2014.der"), domain: "shopsnap.example")
        let association = try AppSiteAssociation(json: json)
        #expect(association.approval(of: "RAZE.com.razeware.ShopSnap", for: .activityContinuation, url: nil).isApproved)
        #expect(SignedAssociationVerifier.isSigned(try pki.data("apple2014.der")))
        #expect(!SignedAssociationVerifier.isSigned(try pki.data("aasa.json")))
    }

    @Test("signed attributes (messageDigest) with RSA, and ECDSA P-256 via openssl cms, verify")
    func attributesAndECDSA() async throws {
        let (pki, verifier) = try Self.verifier()
        #expect(try await verifier.verify(try pki.data("attrs.der"), domain: "shopsnap.example") == (try pki.data("aasa.json")))
        #expect(try await verifier.verify(try pki.data("ec.der"), domain: "SHOPSNAP.example") == (try pki.data("aasa.json")))
    }

    @Test("a certificate for another domain fails with domainMismatch")
    func wrongDomain() async throws {
        let (pki, verifier) = try Self.verifier()
        await Self.expectCode(.domainMismatch) { _ = try await verifier.verify(try pki.data("attrs.der"), domain: "evil.example") }
    }

    @Test("an expired leaf fails with certificateExpired")
    func expired() async throws {
        let (pki, verifier) = try Self.verifier()
        let later = Date().addingTimeInterval(3 * 86_400)
        await Self.expectCode(.certificateExpired) {
            _ = try await verifier.verify(try pki.data("short.der"), domain: "shopsnap.example", now: later)
        }
        // The same file verifies today.
        #expect(try await verifier.verify(try pki.data("short.der"), domain: "shopsnap.example").count > 0)
    }

    @Test("a chain to a root that is not trusted fails with untrustedCertificate")
    func untrustedRoot() async throws {
        let (pki, verifier) = try Self.verifier(root: "other.pem")
        await Self.expectCode(.untrustedCertificate) { _ = try await verifier.verify(try pki.data("attrs.der"), domain: "shopsnap.example") }
    }

    @Test("a tampered body fails with signatureMismatch, with and without signed attributes")
    func tampered() async throws {
        let (pki, verifier) = try Self.verifier()
        for name in ["attrs.der", "apple2014.der"] {
            var bytes = [UInt8](try pki.data(name))
            let needle = Array("ShopSnap".utf8)
            let start = try #require((0...(bytes.count - needle.count)).first { Array(bytes[$0..<($0 + needle.count)]) == needle })
            bytes[start] = UInt8(ascii: "X")
            await Self.expectCode(.signatureMismatch) { _ = try await verifier.verify(Data(bytes), domain: "shopsnap.example") }
        }
    }

    @Test("garbage and truncated files fail with invalidSignedData, never a trap")
    func garbage() async throws {
        let (pki, verifier) = try Self.verifier()
        let valid = [UInt8](try pki.data("attrs.der"))
        for length in stride(from: 0, to: valid.count, by: 97) {
            await Self.expectCode(.invalidSignedData) { _ = try await verifier.verify(Data(valid[0..<length]), domain: "shopsnap.example") }
        }
        await Self.expectCode(.invalidSignedData) { _ = try await verifier.verify(Data("{\"not\": \"signed\"}".utf8), domain: "x") }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var bytes = valid
            for _ in 0..<4 { bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random) }
            do {
                _ = try await verifier.verify(Data(bytes), domain: "shopsnap.example")
            } catch is BatonRegistryError {
                // A typed refusal is the expected outcome of corruption.
            }
        }
    }
}
