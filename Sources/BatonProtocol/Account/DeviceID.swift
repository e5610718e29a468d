import BatonCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A device's identity in the account: the SHA-256 of its certificate (DER), so the id and the certificate pin are
/// the same thing and one cannot be claimed without the other.
///
/// Written as 52 base32 characters in groups of four (`MFRG-GZDF-...`); ``short`` is the first eight, for display.
public struct DeviceID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 32 bytes of the SHA-256.
    public let bytes: [UInt8]

    /// The id of the device whose certificate is `certificateDER`.
    public init(certificateDER: some DataProtocol) {
        bytes = Array(SHA256.hash(data: Data(certificateDER)))
    }

    /// An id from its 32 bytes; `nil` for another length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// Parses the written form (case, dashes and spaces do not matter).
    /// - Throws: ``BatonProtocolError`` `invalidDeviceID`.
    public init(parsing text: String) throws {
        guard let bytes = Base32.decode(text), bytes.count == 32 else {
            throw BatonProtocolError(.invalidDeviceID, "\(BatonCoreError.quoted(text, limit: 80)) is not a device id (52 base32 characters)")
        }
        self.bytes = bytes
    }

    /// The full id, grouped in fours.
    public var description: String {
        let text = Base32.encode(bytes)
        return stride(from: 0, to: text.count, by: 4).map { offset in
            let start = text.index(text.startIndex, offsetBy: offset)
            return String(text[start..<(text.index(start, offsetBy: 4, limitedBy: text.endIndex) ?? text.endIndex)])
        }.joined(separator: "-")
    }

    /// The first eight characters, enough to tell a person's devices apart.
    public var short: String { String(Base32.encode(bytes.prefix(5))) }

    /// Whether `prefix` (written form, any case, dashes ignored) starts this id: how a person names a device.
    public func matches(prefix: String) -> Bool {
        let wanted = prefix.uppercased().filter { $0 != "-" }
        return !wanted.isEmpty && Base32.encode(bytes).hasPrefix(wanted)
    }

    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
