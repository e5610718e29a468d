import BatonAgent
import Foundation
import Testing
import X509

@Suite("Account store: identity and roster on disk")
struct AccountStoreTests {
    static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("baton-state-\(UUID().uuidString)")
    }

    @Test("init makes a certificate whose SHA-256 is the device id, files 0600 in a 0700 folder")
    func initialize() throws {
        let store = AccountStore(folder: Self.folder())
        defer { try? FileManager.default.removeItem(at: store.folder) }
        let (identity, roster) = try store.initialize(name: "laptop")
        let certificate = try Certificate(derEncoded: Array(identity.certificateDER))
        #expect(certificate.publicKey == Certificate.PublicKey(identity.privateKey.publicKey))
        #expect(roster.activeMembers.map(\.id) == [identity.id])
        #expect(try store.identity().id == identity.id)
        #expect(try store.identity().privateKey.rawRepresentation == identity.privateKey.rawRepresentation)
        #expect(try store.roster() == roster)
        let manager = FileManager.default
        #expect(try manager.attributesOfItem(atPath: store.folder.path)[.posixPermissions] as? Int == 0o700)
        for file in ["identity.plist", "roster.plist"] {
            #expect(try manager.attributesOfItem(atPath: store.folder.appendingPathComponent(file).path)[.posixPermissions] as? Int == 0o600)
        }
        let again = #expect(throws: BatonAgentError.self) { try store.initialize(name: "other") }
        #expect(again?.code == .alreadyInitialized)
        #expect(try store.identity().id == identity.id, "the identity is never replaced")
    }

    @Test("a missing, damaged or world-readable identity is an error naming the file, never regenerated")
    func badState() throws {
        let store = AccountStore(folder: Self.folder())
        defer { try? FileManager.default.removeItem(at: store.folder) }
        let missing = #expect(throws: BatonAgentError.self) { try store.identity() }
        #expect(missing?.code == .notInitialized)
        #expect(missing?.message.contains(store.folder.path) == true)

        try store.initialize(name: "laptop")
        let identityPath = store.folder.appendingPathComponent("identity.plist").path
        let original = try Data(contentsOf: URL(fileURLWithPath: identityPath))
        let certificate = try store.identity().certificateDER
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: identityPath)
        let open = #expect(throws: BatonAgentError.self) { try store.identity() }
        #expect(open?.code == .statePermissions)
        #expect(open?.message.contains("chmod 600") == true)

        // Damage in the key or the certificate bytes (not just the file's structure) is caught.
        let certificateStart = try #require(original.range(of: certificate)).lowerBound
        for offset in [certificateStart + 40, certificateStart + certificate.count - 10, original.count / 3, 9, original.count - 5] {
            var damaged = original
            damaged[offset] ^= 0x55
            try damaged.write(to: URL(fileURLWithPath: identityPath))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: identityPath)
            do {
                let loaded = try store.identity()
                // Only damage to the name can pass: it is a label, not a secret or a pin.
                #expect(loaded.certificateDER == certificate, "byte \(offset): damage loaded silently")
            } catch let error as BatonAgentError {
                #expect(error.code == .stateCorrupt, "byte \(offset)")
                #expect(error.message.contains(identityPath))
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: identityPath)) == damaged, "the damaged file is left for inspection")
        }
    }
}
