#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes ``PropertyList`` values as binary property lists (`bplist00`).
///
/// Output is deterministic: dictionary keys are written sorted and equal strings are stored once, so the same value
/// always encodes to the same bytes (sets excepted: their order is unspecified). Files with only the classic types
/// are readable by Foundation's `PropertyListSerialization` and Python's `plistlib`; `null`, `url` and `uuid`
/// values use markers only Baton reads (docs/PROTOCOL.md).
public enum BinaryPropertyListEncoder {
    /// Encodes `value`.
    /// - Throws: ``BatonCoreError`` with code `tooDeep` when containers nest deeper than `limits.maximumDepth`, and
    ///   `unrepresentable` for a NaN or infinite date: everything written can be read back under the same limits.
    public static func encode(_ value: PropertyList, limits: PropertyListLimits = .default) throws -> Data {
        var writer = BinaryWriter(maximumDepth: limits.maximumDepth)
        _ = try writer.flatten(value, depth: 0)
        return Data(writer.write())
    }
}

private struct BinaryWriter {
    /// One object of the file, in object-index order; containers point into `references`.
    enum FlatObject {
        case scalar(PropertyList)
        case string(String)
        case array(start: Int, count: Int)
        case set(start: Int, count: Int)
        /// Keys at `start..<start+count`, values at `start+count..<start+2*count`.
        case dictionary(start: Int, count: Int)
    }

    let maximumDepth: Int
    var objects: [FlatObject] = []
    var references: [Int] = []
    var stringObjects: [String: Int] = [:]
    var output: [UInt8] = []

    init(maximumDepth: Int) {
        self.maximumDepth = maximumDepth
    }

    // MARK: Flattening

    mutating func flatten(_ value: PropertyList, depth: Int) throws -> Int {
        switch value {
        case .string(let text):
            return flattenString(text)
        case .array(let elements):
            let (index, start) = try reserveContainer(references: elements.count, depth: depth)
            for (offset, element) in elements.enumerated() {
                references[start + offset] = try flatten(element, depth: depth + 1)
            }
            objects[index] = .array(start: start, count: elements.count)
            return index
        case .set(let members):
            let (index, start) = try reserveContainer(references: members.count, depth: depth)
            for (offset, member) in members.enumerated() {
                references[start + offset] = try flatten(member, depth: depth + 1)
            }
            objects[index] = .set(start: start, count: members.count)
            return index
        case .dictionary(let entries):
            let count = entries.count
            let (index, start) = try reserveContainer(references: 2 * count, depth: depth)
            for (offset, entry) in entries.sorted(by: { $0.key < $1.key }).enumerated() {
                references[start + offset] = flattenString(entry.key)
                references[start + count + offset] = try flatten(entry.value, depth: depth + 1)
            }
            objects[index] = .dictionary(start: start, count: count)
            return index
        case .date(let date) where !date.timeIntervalSinceReferenceDate.isFinite:
            throw BatonCoreError(.unrepresentable, "a date of \(date.timeIntervalSinceReferenceDate) seconds is no point in time")
        default:
            objects.append(.scalar(value))
            return objects.count - 1
        }
    }

    mutating func flattenString(_ text: String) -> Int {
        if let existing = stringObjects[text] { return existing }
        objects.append(.string(text))
        stringObjects[text] = objects.count - 1
        return objects.count - 1
    }

    /// Appends a placeholder for a container and room for its references; returns both positions.
    mutating func reserveContainer(references count: Int, depth: Int) throws -> (index: Int, start: Int) {
        guard depth < maximumDepth else {
            throw BatonCoreError(.tooDeep, "containers nest deeper than \(maximumDepth) levels")
        }
        objects.append(.array(start: 0, count: 0))
        let start = references.count
        references.append(contentsOf: repeatElement(0, count: count))
        return (objects.count - 1, start)
    }

    // MARK: Writing

    static func byteWidth(_ maximum: Int) -> Int {
        switch maximum {
        case ..<(1 << 8): 1
        case ..<(1 << 16): 2
        case ..<(1 << 32): 4
        default: 8
        }
    }

    mutating func write() -> [UInt8] {
        let referenceSize = Self.byteWidth(objects.count - 1)
        var offsets: [Int] = []
        offsets.reserveCapacity(objects.count)
        output.reserveCapacity(objects.count * 8 + 64)
        output.append(contentsOf: BinaryPropertyListMarker.header)
        for object in objects {
            offsets.append(output.count)
            switch object {
            case .scalar(let value):
                writeScalar(value)
            case .string(let text):
                writeString(text)
            case .array(let start, let count):
                writeCount(BinaryPropertyListMarker.array, count)
                writeReferences(start..<(start + count), size: referenceSize)
            case .set(let start, let count):
                writeCount(BinaryPropertyListMarker.set, count)
                writeReferences(start..<(start + count), size: referenceSize)
            case .dictionary(let start, let count):
                writeCount(BinaryPropertyListMarker.dictionary, count)
                writeReferences(start..<(start + 2 * count), size: referenceSize)
            }
        }
        let tableOffset = output.count
        let offsetSize = Self.byteWidth(tableOffset)
        for offset in offsets {
            appendBigEndian(UInt64(offset), size: offsetSize)
        }
        // Trailer: 5 unused bytes, sort version, offset size, reference size, count, top object, table offset.
        output.append(contentsOf: repeatElement(0, count: 6))
        output.append(UInt8(offsetSize))
        output.append(UInt8(referenceSize))
        appendBigEndian(UInt64(objects.count), size: 8)
        appendBigEndian(0, size: 8)
        appendBigEndian(UInt64(tableOffset), size: 8)
        return output
    }

    mutating func appendBigEndian(_ value: UInt64, size: Int) {
        var shift = (size - 1) * 8
        while shift >= 0 {
            output.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            shift -= 8
        }
    }

    mutating func writeReferences(_ range: Range<Int>, size: Int) {
        for position in range {
            appendBigEndian(UInt64(references[position]), size: size)
        }
    }

    /// A marker with its count in the low nibble, or `0xF` and an integer object when the count is 15 or more.
    mutating func writeCount(_ kind: UInt8, _ count: Int) {
        if count < 15 {
            output.append(kind << 4 | UInt8(count))
        } else {
            output.append(kind << 4 | 0x0F)
            writeInteger(UInt64(count))
        }
    }

    mutating func writeInteger(_ value: UInt64) {
        switch value {
        case ..<(1 << 8):
            output.append(0x10)
            appendBigEndian(value, size: 1)
        case ..<(1 << 16):
            output.append(0x11)
            appendBigEndian(value, size: 2)
        case ..<(1 << 32):
            output.append(0x12)
            appendBigEndian(value, size: 4)
        case ...UInt64(Int64.max):
            output.append(0x13)
            appendBigEndian(value, size: 8)
        default:
            // Above Int64.max the format needs its 16-byte signed integer.
            output.append(0x14)
            appendBigEndian(0, size: 8)
            appendBigEndian(value, size: 8)
        }
    }

    mutating func writeString(_ text: String) {
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            writeCount(BinaryPropertyListMarker.asciiString, text.utf8.count)
            output.append(contentsOf: text.utf8)
        } else {
            writeCount(BinaryPropertyListMarker.utf16String, text.utf16.count)
            for unit in text.utf16 {
                output.append(UInt8(truncatingIfNeeded: unit >> 8))
                output.append(UInt8(truncatingIfNeeded: unit))
            }
        }
    }

    mutating func writeScalar(_ value: PropertyList) {
        switch value {
        case .integer(let number):
            if number < 0 {
                output.append(0x13)
                appendBigEndian(UInt64(bitPattern: number), size: 8)
            } else {
                writeInteger(UInt64(number))
            }
        case .unsignedInteger(let number):
            writeInteger(number)
        case .real(let number):
            output.append(0x23)
            appendBigEndian(number.bitPattern, size: 8)
        case .bool(let flag):
            output.append(flag ? BinaryPropertyListMarker.boolTrue : BinaryPropertyListMarker.boolFalse)
        case .date(let date):
            output.append(0x33)
            appendBigEndian(date.timeIntervalSinceReferenceDate.bitPattern, size: 8)
        case .data(let bytes):
            writeCount(BinaryPropertyListMarker.data, bytes.count)
            output.append(contentsOf: bytes)
        case .null:
            output.append(BinaryPropertyListMarker.null)
        case .uuid(let uuid):
            output.append(BinaryPropertyListMarker.uuid)
            withUnsafeBytes(of: uuid.uuid) { output.append(contentsOf: $0) }
        case .url(let url):
            output.append(BinaryPropertyListMarker.url)
            writeString(url.absoluteString)
        case .string(let text):
            writeString(text)
        case .array, .set, .dictionary:
            // Containers are flattened into their own objects and never reach this point.
            preconditionFailure("container passed to writeScalar")
        }
    }
}
