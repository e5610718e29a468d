#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a binary property list's objects are: its trailer read and checked, and bounds-checked access to the offset
/// table, object references and counts. The decoder reads every object through it, and ``BinaryPropertyList``'s
/// quick looks use the very same checks, so what they rule out is exactly what the decoder could not read.
///
/// Valid only while `bytes` is (inside a `withUnsafeBytes`).
struct BinaryPropertyListLayout {
    let bytes: UnsafeRawBufferPointer
    let offsetSize: Int
    let referenceSize: Int
    let objectCount: Int
    let topObject: Int
    /// Where the offset table starts; every object lies in `8..<objectsEnd`.
    let objectsEnd: Int

    init(bytes: UnsafeRawBufferPointer) throws {
        self.bytes = bytes
        let header = BinaryPropertyListMarker.header
        guard bytes.count >= header.count, bytes.starts(with: header) else {
            throw BatonCoreError(.unknownFormat, "not a binary property list (no bplist00 header)", offset: 0)
        }
        let trailerSize = BinaryPropertyListMarker.trailerSize
        // Smallest possible file: header, one 1-byte object, one 1-byte offset, trailer.
        guard bytes.count >= header.count + 2 + trailerSize else {
            throw BatonCoreError(
                .truncated,
                "file is \(bytes.count) bytes, too short to hold an object, offset table and trailer",
                offset: bytes.count
            )
        }
        let trailer = bytes.count - trailerSize
        offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
            throw BatonCoreError(
                .invalidTrailer,
                "offset size \(offsetSize) or reference size \(referenceSize) is not between 1 and 8",
                offset: trailer + 6
            )
        }
        let count = Self.readUnsigned(bytes, at: trailer + 8, size: 8)
        let top = Self.readUnsigned(bytes, at: trailer + 16, size: 8)
        let tableOffset = Self.readUnsigned(bytes, at: trailer + 24, size: 8)
        guard count >= 1, count <= UInt64(trailer) else {
            throw BatonCoreError(.invalidTrailer, "object count \(count) does not fit the file", offset: trailer + 8)
        }
        guard top < count else {
            throw BatonCoreError(
                .invalidTrailer,
                "top object \(top) is not below the object count \(count)",
                offset: trailer + 16
            )
        }
        let (tableSize, overflow) = count.multipliedReportingOverflow(by: UInt64(offsetSize))
        guard tableOffset > UInt64(header.count), tableOffset <= UInt64(trailer), !overflow,
            tableSize <= UInt64(trailer) - tableOffset
        else {
            throw BatonCoreError(
                .invalidTrailer,
                "offset table at \(tableOffset) with \(count) entries of \(offsetSize) bytes does not fit the file",
                offset: trailer + 24
            )
        }
        objectCount = Int(count)
        topObject = Int(top)
        objectsEnd = Int(tableOffset)
    }

    // The helpers below are inlined (issue 29 item 5): called once or twice per object, each call copied the layout
    // (or the whole reader calling it) onto the stack first.

    @inline(__always)
    static func readUnsigned(_ bytes: UnsafeRawBufferPointer, at position: Int, size: Int) -> UInt64 {
        switch size {
        case 1: return UInt64(bytes[position])
        case 2: return UInt64(UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt16.self)))
        case 4: return UInt64(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
        case 8: return UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self))
        default: return readUnsignedBytes(bytes, at: position, size: size)
        }
    }

    static func readUnsignedBytes(_ bytes: UnsafeRawBufferPointer, at position: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in position..<(position + size) {
            value = value << 8 | UInt64(bytes[index])
        }
        return value
    }

    /// The offset of `object`'s marker, from the offset table (`object` below ``objectCount``).
    @inline(__always)
    func offset(of object: Int) throws -> Int {
        if let offset = validOffset(of: object) { return offset }
        throw offsetError(object)
    }

    func offsetError(_ object: Int) -> BatonCoreError {
        let entry = objectsEnd + object * offsetSize
        return BatonCoreError(
            .invalidReference,
            "object \(object) has offset \(Self.readUnsigned(bytes, at: entry, size: offsetSize)), outside the object area 8..<\(objectsEnd)",
            offset: entry
        )
    }

    /// ``offset(of:)`` without the error: nil when the table points outside the object area.
    @inline(__always)
    func validOffset(of object: Int) -> Int? {
        let offset = Self.readUnsigned(bytes, at: objectsEnd + object * offsetSize, size: offsetSize)
        guard offset >= UInt64(BinaryPropertyListMarker.header.count), offset < UInt64(objectsEnd) else { return nil }
        return Int(offset)
    }

    @inline(__always)
    func reference(at position: Int) throws -> Int {
        let reference = Self.readUnsigned(bytes, at: position, size: referenceSize)
        guard reference < UInt64(objectCount) else { throw referenceError(reference, at: position) }
        return Int(reference)
    }

    func referenceError(_ reference: UInt64, at position: Int) -> BatonCoreError {
        BatonCoreError(
            .invalidReference,
            "reference to object \(reference), but the file has \(objectCount) objects",
            offset: position
        )
    }

    /// Checks that `length` bytes from `start` lie inside the object area.
    @inline(__always)
    func require(_ length: Int, at start: Int, for what: String) throws {
        guard length >= 0, start <= objectsEnd, length <= objectsEnd - start else {
            throw requireError(length, at: start, for: what)
        }
    }

    func requireError(_ length: Int, at start: Int, for what: String) -> BatonCoreError {
        BatonCoreError(
            .truncated,
            "\(what) needs \(length) bytes at \(start), past the end of the object area (\(objectsEnd))",
            offset: start
        )
    }

    /// The element count of the object whose marker is at `offset`, and where its contents begin.
    @inline(__always)
    func countAndStart(marker: UInt8, at offset: Int) throws -> (count: Int, start: Int) {
        let nibble = marker & 0x0F
        if nibble != 0x0F { return (Int(nibble), offset + 1) }
        return try extendedCountAndStart(at: offset)
    }

    /// ``countAndStart(marker:at:)`` for a count of 15 or more: an integer object after the marker.
    func extendedCountAndStart(at offset: Int) throws -> (count: Int, start: Int) {
        try require(1, at: offset + 1, for: "an extended count")
        let intMarker = bytes[offset + 1]
        guard intMarker >> 4 == BinaryPropertyListMarker.integer, intMarker & 0x0F <= 3 else {
            throw BatonCoreError(
                .invalidObject,
                "extended count has marker \(hex(intMarker)), expected an integer",
                offset: offset + 1
            )
        }
        let size = 1 << Int(intMarker & 0x0F)
        try require(size, at: offset + 2, for: "an extended count")
        let count = Self.readUnsigned(bytes, at: offset + 2, size: size)
        guard count <= UInt64(objectsEnd) else {
            throw BatonCoreError(.truncated, "count \(count) is larger than the file", offset: offset + 2)
        }
        return (Int(count), offset + 2 + size)
    }
}
