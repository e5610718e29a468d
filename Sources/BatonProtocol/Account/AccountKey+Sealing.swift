import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountKey {
    /// Seals `plaintext` for the account's devices: AES-256-GCM under this key, with a random 96-bit nonce and the
    /// full 128-bit tag, the epoch bound in as associated data. Output: epoch (8 bytes, big-endian), nonce, ciphertext
    /// and tag. Adverts are built on this (docs/PROTOCOL.md).
    public func seal(_ plaintext: some DataProtocol) throws -> Data {
        let epochBytes = Data((0..<8).reversed().map { UInt8(truncatingIfNeeded: epoch >> (UInt64($0) * 8)) })
        let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: key), authenticating: epochBytes)
        guard let combined = box.combined else { throw BatonProtocolError(.invalidRoster, "sealing produced no output") }
        return epochBytes + combined
    }

    /// Opens what ``seal(_:)`` made; `nil` when it was sealed under another key or epoch, or altered.
    public func open(_ sealed: Data) -> Data? {
        guard sealed.count >= 8 + 12 + 16 else { return nil }
        let epochBytes = sealed.prefix(8)
        let sealedEpoch = epochBytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard sealedEpoch == epoch, let box = try? AES.GCM.SealedBox(combined: sealed.dropFirst(8)) else { return nil }
        return try? AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: epochBytes)
    }
}
