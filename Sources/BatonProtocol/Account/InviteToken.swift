#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A one-time invitation for a headless machine: `baton invite` prints it, `baton join` takes it.
///
/// It says where the inviter listens, which certificate it must present (its device id, pinned before anything secret
/// is sent), a 128-bit secret that proves the joiner was given the token, and when it expires. Written as
/// `baton1-` and base32, so it survives copy, paste and being read aloud.
public struct InviteToken: Sendable, Hashable, CustomStringConvertible {
    static let prefix = "baton1-"

    /// The inviter's address.
    public var host: String
    /// The inviter's port.
    public var port: Int
    /// The inviter's device id: the joiner refuses any other certificate.
    public var inviter: DeviceID
    /// 16 random bytes.
    public var secret: [UInt8]
    /// After this the inviter refuses the token.
    public var expires: Date

    /// A token.
    public init(host: String, port: Int, inviter: DeviceID, secret: [UInt8], expires: Date) {
        self.host = host
        self.port = port
        self.inviter = inviter
        self.secret = secret
        self.expires = expires
    }

    /// The written token.
    public var description: String {
        var bytes: [UInt8] = [1]
        bytes += inviter.bytes
        bytes += secret
        let seconds = UInt64(max(0, expires.timeIntervalSince1970))
        bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: seconds >> (UInt64($0) * 8)) }
        bytes += [UInt8(truncatingIfNeeded: port >> 8), UInt8(truncatingIfNeeded: port)]
        let hostBytes = Array(host.utf8.prefix(255))
        bytes.append(UInt8(hostBytes.count))
        bytes += hostBytes
        return Self.prefix + Base32.encode(bytes).lowercased()
    }

    /// Reads a written token.
    /// - Throws: ``BatonProtocolError`` `invalidInvite` for anything malformed.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingWhitespace()
        guard trimmed.lowercased().hasPrefix(Self.prefix), let bytes = Base32.decode(String(trimmed.dropFirst(Self.prefix.count))),
            bytes.count >= 1 + 32 + 16 + 8 + 2 + 1, bytes[0] == 1
        else {
            throw BatonProtocolError(.invalidInvite, "not a Baton invite token (they start with \(Self.prefix))")
        }
        let hostCount = Int(bytes[59])
        guard bytes.count == 60 + hostCount, let host = String(validating: bytes[60...], as: UTF8.self), !host.isEmpty,
            let inviter = DeviceID(bytes: Array(bytes[1..<33]))
        else {
            throw BatonProtocolError(.invalidInvite, "the invite token is damaged (was it copied in full?)")
        }
        let seconds = bytes[49..<57].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        self.init(
            host: host,
            port: Int(bytes[57]) << 8 | Int(bytes[58]),
            inviter: inviter,
            secret: Array(bytes[33..<49]),
            expires: Date(timeIntervalSince1970: TimeInterval(seconds))
        )
    }
}
