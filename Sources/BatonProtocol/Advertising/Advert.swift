import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The notice a device broadcasts about its current activity (SEMANTICS C2): just enough for another device of the
/// account to show it and to connect back for the state. No title, no `userInfo`.
public struct Advert: Sendable, Hashable {
    /// What the flags byte says.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The activity has a webpage URL (it can fall back to the browser, E1).
        public static let hasWebpageURL = Flags(rawValue: 1 << 0)
        /// The activity supports continuation streams (F1).
        public static let supportsStreams = Flags(rawValue: 1 << 1)
        /// The activity is current; without this flag the advert is a goodbye (A9: gone from every device).
        public static let isCurrent = Flags(rawValue: 1 << 2)

        /// The top four bits: the activity's revision, modulo 16. It changes when the app makes the same activity
        /// current again with something else to show (a new title, say), so other devices ask again what it is
        /// (C3). Older agents write 0 here and ignore it.
        public static let revisionMask: UInt8 = 0xF0

        /// The revision these flags carry (0 to 15).
        public var revision: UInt8 { rawValue >> 4 }

        /// These flags with `revision` (modulo 16) in the top four bits.
        public func with(revision: UInt8) -> Flags {
            Flags(rawValue: (rawValue & ~Self.revisionMask) | ((revision & 0x0F) << 4))
        }
    }

    /// The originating device.
    public var device: DeviceID
    /// The activity's sequence number on that device: the same for re-advertisements of one activity.
    public var sequence: UInt64
    /// A short keyed hash of team and activity type (of the host for web pages): lets a receiver tell which app
    /// could continue it, and tells an outsider nothing.
    public var typeHash: [UInt8]
    /// Flags.
    public var flags: Flags
    /// The port of the originating agent's session listener, for the connect-back (C4).
    public var sessionPort: UInt16
    /// When it was sent, in milliseconds since 1970: bounds replays.
    public var timestamp: UInt64

    /// An advert; `typeHash` must be ``AdvertKeys/typeHashLength`` bytes.
    public init(device: DeviceID, sequence: UInt64, typeHash: [UInt8], flags: Flags, sessionPort: UInt16, timestamp: UInt64) {
        self.device = device
        self.sequence = sequence
        self.typeHash = typeHash
        self.flags = flags
        self.sessionPort = sessionPort
        self.timestamp = timestamp
    }

    /// The plaintext inside the seal: id, sequence, type hash, flags, port, timestamp (59 bytes, big-endian).
    static let plaintextLength = 32 + 8 + AdvertKeys.typeHashLength + 1 + 2 + 8

    var plaintext: [UInt8] {
        var bytes = device.bytes
        bytes += bigEndian(sequence, 8)
        bytes += typeHash
        bytes.append(flags.rawValue)
        bytes += bigEndian(UInt64(sessionPort), 2)
        bytes += bigEndian(timestamp, 8)
        return bytes
    }

    init?(plaintext bytes: [UInt8]) {
        guard bytes.count == Self.plaintextLength, let device = DeviceID(bytes: Array(bytes[0..<32])) else { return nil }
        func number(_ range: Range<Int>) -> UInt64 { bytes[range].reduce(0) { $0 << 8 | UInt64($1) } }
        self.init(
            device: device,
            sequence: number(32..<40),
            typeHash: Array(bytes[40..<48]),
            flags: Flags(rawValue: bytes[48]),
            sessionPort: UInt16(number(49..<51)),
            timestamp: number(51..<59)
        )
    }
}

func bigEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
    (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
}

/// The keys adverts use, derived from the account key with HKDF-SHA256, one per purpose.
public struct AdvertKeys: Sendable {
    /// The datagram's format version: the only cleartext besides the nonce.
    public static let version: UInt8 = 1
    /// Bytes of the keyed type hash.
    public static let typeHashLength = 8
    /// Bytes on the wire: version, 12-byte nonce, sealed plaintext, 16-byte tag.
    public static let datagramLength = 1 + 12 + Advert.plaintextLength + 16

    let sealing: SymmetricKey
    let hashing: SymmetricKey
    /// The account-key epoch these keys come from.
    public let epoch: UInt64

    /// Keys for `accountKey`.
    public init(_ accountKey: AccountKey) {
        let material = SymmetricKey(data: accountKey.key)
        sealing = HKDF<SHA256>.deriveKey(inputKeyMaterial: material, info: Data("baton advert seal v1".utf8), outputByteCount: 32)
        hashing = HKDF<SHA256>.deriveKey(inputKeyMaterial: material, info: Data("baton advert type hash v1".utf8), outputByteCount: 32)
        epoch = accountKey.epoch
    }

    /// The keyed hash of an app activity: team and type (SEMANTICS D1).
    public func typeHash(team: String, activityType: String) -> [UInt8] {
        hash("app\u{0}\(team)\u{0}\(activityType)")
    }

    /// The keyed hash of a web page's host (SEMANTICS E3).
    public func typeHash(webHost: String) -> [UInt8] {
        hash("web\u{0}\(webHost.lowercased())")
    }

    func hash(_ text: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: hashing).prefix(Self.typeHashLength))
    }

    /// The datagram for `advert`: a fresh random nonce each time, so no two datagrams share anything in clear.
    public func seal(_ advert: Advert) throws -> Data {
        let header = Data([Self.version])
        let box = try AES.GCM.seal(advert.plaintext, using: sealing, nonce: AES.GCM.Nonce(), authenticating: header)
        guard let combined = box.combined else { throw BatonProtocolError(.invalidRoster, "sealing produced no output") }
        return header + combined
    }

    /// Opens a datagram; `nil` for anything not sealed under these keys (another account, an older key, damage).
    /// This is the whole cost of a stranger's datagram: one failed open.
    public func open(_ datagram: Data) -> (advert: Advert, nonce: [UInt8])? {
        guard datagram.count == Self.datagramLength, datagram.first == Self.version else { return nil }
        guard let box = try? AES.GCM.SealedBox(combined: datagram.dropFirst()),
            let plaintext = try? AES.GCM.open(box, using: sealing, authenticating: datagram.prefix(1)),
            let advert = Advert(plaintext: Array(plaintext))
        else { return nil }
        return (advert, Array(box.nonce))
    }
}
