import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The datagram a waiting `baton pair` announces on the adverts' multicast groups, so that `baton pair --find` on
/// another machine of the LAN can list it without an address typed in (issue 24; docs/PROTOCOL.md §4, "Pairing
/// beacon").
///
/// It says only what a person needs to pick the device and what a program needs to dial it: a display name and a
/// TCP port, with a random nonce per `baton pair` run that tells two waiting runs apart. Nothing about the account:
/// the beacon is clear text to everyone on the LAN, and the sealed adverts are built so that an outsider cannot
/// link a device to its account; an account or device id here would undo that. The address to dial is the
/// datagram's source, never something inside it.
///
/// Layout (big-endian): magic `BTNP`, version, 16-byte nonce, port (2 bytes), name length (1 byte), name (UTF-8).
public struct PairingBeacon: Sendable, Hashable {
    /// The first four bytes, `BTNP`. An advert starts with its version byte 0x01, so the two never share a first byte.
    public static let magic: [UInt8] = [0x42, 0x54, 0x4E, 0x50]
    /// The layout's version.
    public static let version: UInt8 = 1
    /// Bytes of the per-run nonce: enough that two runs never collide by chance (128 bits).
    public static let nonceLength = 16
    /// Most UTF-8 bytes of the name: a list line stays readable, and the datagram stays shorter than an advert.
    public static let maximumNameBytes = 63
    /// Bytes before the name: magic, version, nonce, port, name length.
    public static let headerLength = 4 + 1 + nonceLength + 2 + 1
    /// The longest beacon (87 bytes). Adverts are exactly ``AdvertKeys/datagramLength`` (88) bytes and the agent's
    /// receiver drops any other length unread, so an agent sharing the discovery port never even tries to open one.
    public static let maximumDatagramLength = headerLength + maximumNameBytes
    /// The name a device whose name sanitizes to nothing is announced under.
    public static let fallbackName = "Baton device"

    /// Random per `baton pair` run: the finder lists one entry per nonce, however many copies (every second, on
    /// IPv4 and IPv6) arrive.
    public let nonce: [UInt8]
    /// The waiting device's display name: 1 to ``maximumNameBytes`` UTF-8 bytes, no control, separator or
    /// bidirectional-formatting characters, no leading or trailing white space.
    public let name: String
    /// The TCP port the waiting side listens on for the pairing session (1 to 65535).
    public let port: UInt16

    /// A beacon for a device called `displayName` (sanitized with ``sanitizedName(_:)``).
    /// - Throws: `invalidPairingBeacon` when `nonce` is not ``nonceLength`` bytes or `port` is 0.
    public init(nonce: [UInt8], displayName: String, port: UInt16) throws {
        guard nonce.count == Self.nonceLength else {
            throw BatonProtocolError(.invalidPairingBeacon, "a pairing beacon's nonce must be \(Self.nonceLength) bytes, not \(nonce.count)")
        }
        guard port != 0 else { throw BatonProtocolError(.invalidPairingBeacon, "a pairing beacon needs the port the device listens on, not 0") }
        self.nonce = nonce
        self.name = Self.sanitizedName(displayName)
        self.port = port
    }

    /// Reads a datagram from the discovery port.
    /// - Throws: `notPairingBeacon` when it does not start with ``magic`` (an advert, say: the caller ignores it);
    ///   `unsupportedVersion` for a later layout; `invalidPairingBeacon` when it is cut short, too long, names port
    ///   0, or its name is empty, too long, not UTF-8 or holds a character a name may not.
    public init(datagram: some Collection<UInt8>) throws {
        let bytes = Array(datagram.prefix(Self.maximumDatagramLength + 1))
        guard bytes.count >= Self.magic.count, Array(bytes[0..<Self.magic.count]) == Self.magic else {
            throw BatonProtocolError(.notPairingBeacon, "the datagram is not a pairing beacon")
        }
        guard bytes.count >= Self.headerLength else {
            throw BatonProtocolError(.invalidPairingBeacon, "a pairing beacon of \(bytes.count) bytes is shorter than its \(Self.headerLength)-byte header")
        }
        guard bytes[4] == Self.version else {
            throw BatonProtocolError(.unsupportedVersion, "a pairing beacon of version \(bytes[4]) (this Baton reads version \(Self.version)); update Baton")
        }
        let nonceEnd = 5 + Self.nonceLength
        let port = UInt16(bytes[nonceEnd]) << 8 | UInt16(bytes[nonceEnd + 1])
        guard port != 0 else { throw BatonProtocolError(.invalidPairingBeacon, "a pairing beacon names port 0") }
        let nameLength = Int(bytes[nonceEnd + 2])
        guard (1...Self.maximumNameBytes).contains(nameLength) else {
            throw BatonProtocolError(.invalidPairingBeacon, "a pairing beacon's name of \(nameLength) bytes (1 to \(Self.maximumNameBytes))")
        }
        guard bytes.count == Self.headerLength + nameLength else {
            throw BatonProtocolError(
                .invalidPairingBeacon,
                "a pairing beacon of \(bytes.count) bytes where its name's length makes \(Self.headerLength + nameLength)"
            )
        }
        guard let name = String(validating: bytes[Self.headerLength...], as: UTF8.self) else {
            throw BatonProtocolError(.invalidPairingBeacon, "a pairing beacon's name is not UTF-8")
        }
        guard Self.sanitizedName(name) == name else {
            throw BatonProtocolError(
                .invalidPairingBeacon,
                "a pairing beacon's name holds control, separator or bidirectional characters, or white space at an end"
            )
        }
        self.nonce = Array(bytes[5..<nonceEnd])
        self.name = name
        self.port = port
    }

    /// The datagram: at most ``maximumDatagramLength`` bytes.
    public var datagram: [UInt8] {
        let nameBytes = Array(name.utf8)
        var bytes = Self.magic
        bytes.append(Self.version)
        bytes += nonce
        bytes += [UInt8(port >> 8), UInt8(port & 0xFF), UInt8(nameBytes.count)]
        return bytes + nameBytes
    }

    /// `name` as a beacon carries it: without control characters (C0, C1, DEL), line and paragraph separators and
    /// bidirectional formatting characters (which could make a list line read as something else), white space
    /// trimmed, cut to ``maximumNameBytes`` UTF-8 bytes at a character boundary; ``fallbackName`` if nothing is left.
    public static func sanitizedName(_ name: String) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: name.unicodeScalars.filter(isAllowed))
        let trimmed = trimmingWhiteSpace(String(scalars))
        // Cutting can leave white space at the new end.
        let result = trimmingWhiteSpace(trimmed.prefix(utf8Bytes: maximumNameBytes))
        return result.isEmpty ? fallbackName : result
    }

    static func trimmingWhiteSpace(_ text: String) -> String {
        String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }

    static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator:
            return false
        default:
            break
        }
        // Bidirectional formatting: ALM, LRM, RLM, the embeddings and overrides, the isolates; and the BOM.
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0xFEFF:
            return false
        default:
            return true
        }
    }
}
