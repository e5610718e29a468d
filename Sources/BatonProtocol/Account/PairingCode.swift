import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The six-digit code both devices show during numeric-comparison pairing.
///
/// It is derived from the two certificates each side actually saw in the TLS handshake and from a nonce each side
/// sent inside that session. A relay in the middle terminates TLS on both sides and so presents its own certificate
/// to each: the two devices then compute their codes over different certificates, and the codes differ (1 in a
/// million chance of a collision). The person confirming both screens is the check.
public enum PairingCode {
    /// The code for a session between `local` and `peer` (certificates as DER, as seen in the handshake).
    /// The same on both ends: the inputs are put in a fixed order first.
    public static func compute(localCertificate: Data, localNonce: [UInt8], peerCertificate: Data, peerNonce: [UInt8]) -> String {
        let local = (DeviceID(certificateDER: localCertificate), localNonce)
        let peer = (DeviceID(certificateDER: peerCertificate), peerNonce)
        let (first, second) = local.0 < peer.0 ? (local, peer) : (peer, local)
        var hasher = SHA256()
        hasher.update(data: Array("baton pairing code v1".utf8))
        for (id, nonce) in [first, second] {
            hasher.update(data: id.bytes)
            hasher.update(data: [UInt8(nonce.count)])
            hasher.update(data: nonce)
        }
        let digest = Array(hasher.finalize())
        let number = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 1_000_000
        let digits = String(number)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}
