#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A running count and 64-bit FNV-1a hash of the bytes seen, in order, whatever their chunks: two ends of a stream
/// compare what they wrote and read without keeping the bytes (the stream tests, and `baton-debug stream-copy`).
public struct Tally: Sendable, Equatable {
    public var count = 0
    public var hash: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public init(_ bytes: [UInt8]) {
        add(Data(bytes))
    }

    public mutating func add(_ data: Data) {
        count += data.count
        var hash = self.hash
        data.withUnsafeBytes { bytes in
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        self.hash = hash
    }

    /// The hash as 16 hex digits.
    public var hex: String {
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
