#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The object markers of the binary property-list format (`bplist00`), high nibble unless noted.
///
/// The layout: an 8-byte header, the objects, an offset table (one offset per object) and a 32-byte trailer that
/// says where the table is, how wide its entries and the object references are, and which object is the top.
/// docs/PROTOCOL.md describes it in full, with the Baton extensions (URL and UUID markers).
enum BinaryPropertyListMarker {
    static let header: [UInt8] = Array("bplist00".utf8)
    static let trailerSize = 32

    // Whole-byte markers in the 0x0_ row.
    static let null: UInt8 = 0x00
    static let boolFalse: UInt8 = 0x08
    static let boolTrue: UInt8 = 0x09
    /// Baton extension (a marker the format reserves for URLs): followed by one inline string object.
    static let url: UInt8 = 0x0C
    /// Baton extension (the format's reserved UUID marker): followed by the 16 bytes of the UUID.
    static let uuid: UInt8 = 0x0E

    // High nibbles.
    static let integer: UInt8 = 0x1
    static let real: UInt8 = 0x2
    static let date: UInt8 = 0x3
    static let data: UInt8 = 0x4
    static let asciiString: UInt8 = 0x5
    static let utf16String: UInt8 = 0x6
    static let utf8String: UInt8 = 0x7
    static let uid: UInt8 = 0x8
    static let array: UInt8 = 0xA
    static let set: UInt8 = 0xC
    static let dictionary: UInt8 = 0xD
}

/// Reads binary property lists (`bplist00`) into ``PropertyList`` values.
///
/// Every malformed input throws a ``BatonCoreError`` with the byte offset of the problem; nothing traps. Reads are
/// bounds-checked against the object area, references against the object count, and the decode against
/// ``PropertyListLimits`` (input size, nesting depth, expanded object count) and against cycles.
public enum BinaryPropertyListDecoder {
    /// Whether `data` starts like a binary property list.
    public static func isBinaryPropertyList(_ data: some DataProtocol) -> Bool {
        data.starts(with: BinaryPropertyListMarker.header)
    }

    /// Decodes a whole binary property list.
    /// - Throws: ``BatonCoreError`` for any malformed input or exceeded limit.
    public static func decode(_ data: Data, limits: PropertyListLimits = .default) throws -> PropertyList {
        try limits.checkInputSize(data.count)
        return try data.withUnsafeBytes { bytes in
            var reader = try Reader(bytes: bytes, limits: limits)
            return try reader.decodeTopObject()
        }
    }
}

private struct Reader {
    let bytes: UnsafeRawBufferPointer
    let limits: PropertyListLimits
    /// The trailer, offset table and bounds checks (shared with ``BinaryPropertyList``'s quick looks).
    let layout: BinaryPropertyListLayout
    var referenceSize: Int { layout.referenceSize }
    var topObject: Int { layout.topObject }
    var decodedObjects = 0
    /// Which objects are containers currently being decoded: a reference back to one is a cycle.
    var onPath: [Bool]
    /// Dictionary keys already decoded, by object index modulo its size (issue 29 item 5): a key object is referenced
    /// from every dictionary that has the key, and was made into a new string for each. Its size is fixed, so hostile
    /// input costs no memory by it.
    var keyCache = [DecodedKey](repeating: DecodedKey(object: -1, name: ""), count: 64)
    /// The last dictionary's key references by key count modulo 8, and its shape when the one before it had the
    /// same references (``DictionaryShape``). Fixed in size, as ``keyCache`` is. (Named structs, not tuples: an array
    /// of tuples looked its type up at run time on every decode.)
    var shapes = [ShapeSlot](repeating: ShapeSlot(keysStart: -1, count: -1, shape: nil), count: 8)

    init(bytes: UnsafeRawBufferPointer, limits: PropertyListLimits) throws {
        self.bytes = bytes
        self.limits = limits
        layout = try BinaryPropertyListLayout(bytes: bytes)
        onPath = [Bool](repeating: false, count: layout.objectCount)
    }

    static func readUnsigned(_ bytes: UnsafeRawBufferPointer, at position: Int, size: Int) -> UInt64 {
        BinaryPropertyListLayout.readUnsigned(bytes, at: position, size: size)
    }

    mutating func decodeTopObject() throws -> PropertyList {
        try object(topObject, depth: 0)
    }

    // MARK: Locating objects

    // Inlined, as the layout's are: a call copied the whole reader onto the stack (issue 29 item 5).
    @inline(__always)
    func offset(of object: Int) throws -> Int { try layout.offset(of: object) }
    @inline(__always)
    func reference(at position: Int) throws -> Int { try layout.reference(at: position) }
    @inline(__always)
    func require(_ length: Int, at start: Int, for what: String) throws { try layout.require(length, at: start, for: what) }
    @inline(__always)
    func countAndStart(marker: UInt8, at offset: Int) throws -> (count: Int, start: Int) {
        try layout.countAndStart(marker: marker, at: offset)
    }

    // MARK: Objects

    /// Counts one more value against ``PropertyListLimits/maximumObjects``.
    mutating func countObject() throws {
        decodedObjects += 1
        guard decodedObjects <= limits.maximumObjects else {
            throw BatonCoreError(
                .tooManyObjects,
                "more than \(limits.maximumObjects) values (shared references count once per use)"
            )
        }
    }

    mutating func object(_ index: Int, depth: Int) throws -> PropertyList {
        try countObject()
        let offset = try offset(of: index)
        let marker = bytes[offset]
        switch marker >> 4 {
        case 0x0:
            return try layout.singleByteObject(marker, at: offset)
        case BinaryPropertyListMarker.integer:
            return try layout.integer(marker, at: offset)
        case BinaryPropertyListMarker.real:
            let size = 1 << Int(marker & 0x0F)
            guard size == 4 || size == 8 else {
                throw BatonCoreError(.invalidObject, "real of \(size) bytes (only 4 and 8 exist)", offset: offset)
            }
            try require(size, at: offset + 1, for: "a real")
            let bits = Self.readUnsigned(bytes, at: offset + 1, size: size)
            return .real(size == 4 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: bits))) : Double(bitPattern: bits))
        case BinaryPropertyListMarker.date:
            guard marker == 0x33 else {
                throw BatonCoreError(.invalidObject, "date marker \(hex(marker)), expected 0x33", offset: offset)
            }
            try require(8, at: offset + 1, for: "a date")
            let seconds = Double(bitPattern: Self.readUnsigned(bytes, at: offset + 1, size: 8))
            // NaN or infinity is no point in time, and would make the value unequal to itself.
            guard seconds.isFinite else {
                throw BatonCoreError(.invalidDate, "date is \(seconds) seconds, not a finite time", offset: offset)
            }
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case BinaryPropertyListMarker.data:
            let (count, start) = try countAndStart(marker: marker, at: offset)
            try require(count, at: start, for: "data")
            return .data(Data(bytes[start..<(start + count)]))
        case BinaryPropertyListMarker.asciiString, BinaryPropertyListMarker.utf16String,
            BinaryPropertyListMarker.utf8String:
            return .string(try layout.string(marker: marker, at: offset))
        case BinaryPropertyListMarker.uid:
            throw BatonCoreError(
                .keyedArchiverNotSupported,
                "UID object: this is NSKeyedArchiver output (an archived object graph), not a property list",
                offset: offset
            )
        case BinaryPropertyListMarker.array, BinaryPropertyListMarker.set, BinaryPropertyListMarker.dictionary:
            return try container(index, marker: marker, at: offset, depth: depth)
        default:
            throw BatonCoreError(.invalidObject, "unknown object marker \(hex(marker))", offset: offset)
        }
    }

    mutating func container(_ index: Int, marker: UInt8, at offset: Int, depth: Int) throws -> PropertyList {
        guard depth < limits.maximumDepth else {
            throw BatonCoreError(.tooDeep, "containers nest deeper than \(limits.maximumDepth) levels", offset: offset)
        }
        guard !onPath[index] else {
            throw BatonCoreError(.cycle, "object \(index) contains itself", offset: offset)
        }
        onPath[index] = true
        defer { onPath[index] = false }

        let (count, start) = try countAndStart(marker: marker, at: offset)
        let kind = marker >> 4
        let references = kind == BinaryPropertyListMarker.dictionary ? 2 * count : count
        let (size, overflow) = references.multipliedReportingOverflow(by: referenceSize)
        guard !overflow else { throw BatonCoreError(.truncated, "container too large", offset: offset) }
        try require(size, at: start, for: "a container's references")

        switch kind {
        case BinaryPropertyListMarker.array:
            var elements: [PropertyList] = []
            elements.reserveCapacity(count)
            for position in stride(from: start, to: start + size, by: referenceSize) {
                elements.append(try object(try reference(at: position), depth: depth + 1))
            }
            return .array(elements)
        case BinaryPropertyListMarker.set:
            var members = Set<PropertyList>(minimumCapacity: count)
            for position in stride(from: start, to: start + size, by: referenceSize) {
                members.insert(try object(try reference(at: position), depth: depth + 1))
            }
            return .set(members)
        default:
            return .dictionary(try dictionary(count: count, at: start, depth: depth))
        }
    }

    /// The entries of the dictionary with `count` keys whose references start at `start`.
    ///
    /// Its keys are looked up in ``shapes``: when a dictionary with the very same key references was decoded twice
    /// before, its keys are copied from a template (no key hashed, no bucket probed) and only the values are read.
    mutating func dictionary(count: Int, at start: Int, depth: Int) throws -> [String: PropertyList] {
        let valuesStart = start + count * referenceSize
        let slot = count & (shapes.count - 1)
        let seen = shapes[slot]
        let seenBefore =
            seen.count == count && (seen.keysStart == start || Self.sameBytes(bytes, seen.keysStart, start, count * referenceSize))
        if seenBefore, let shape = seen.shape {
            var entries = shape.template
            for element in 0..<count {
                // The key, read before from the same reference (and still counted as each use of a shared object is).
                try countObject()
                let valuePosition = valuesStart + element * referenceSize
                entries.values[shape.positions[element]] = try object(try reference(at: valuePosition), depth: depth + 1)
            }
            return entries
        }
        var entries = [String: PropertyList](minimumCapacity: count)
        var names: [String] = []
        if seenBefore { names.reserveCapacity(count) }
        for element in 0..<count {
            let keyPosition = start + element * referenceSize
            let name = try key(try reference(at: keyPosition), at: keyPosition, depth: depth + 1)
            if seenBefore { names.append(name) }
            let valuePosition = valuesStart + element * referenceSize
            entries[name] = try object(try reference(at: valuePosition), depth: depth + 1)
        }
        shapes[slot] = ShapeSlot(keysStart: start, count: count, shape: seenBefore ? DictionaryShape(names: names) : nil)
        return entries
    }

    /// Whether the `length` bytes at `first` and at `second` are the same (both checked to be in `bytes`).
    static func sameBytes(_ bytes: UnsafeRawBufferPointer, _ first: Int, _ second: Int, _ length: Int) -> Bool {
        var offset = 0
        while offset + 8 <= length {
            guard bytes.loadUnaligned(fromByteOffset: first + offset, as: UInt64.self) == bytes.loadUnaligned(fromByteOffset: second + offset, as: UInt64.self) else { return false }
            offset += 8
        }
        while offset < length {
            guard bytes[first + offset] == bytes[second + offset] else { return false }
            offset += 1
        }
        return true
    }
}

/// The keys of a dictionary, by the references to them (issue 29 item 5): the dictionaries of an array of records
/// reference the same key objects in the same order, and hashing each key into each new dictionary was a third of
/// the decode. Seen once, only where its key references are is kept (``ShapeSlot``); seen again, this: a
/// template dictionary of its keys (values all null) and each key reference's index in it, so the next dictionary
/// with these key references is a copy of the template (no key hashed) with its values set by index. Indices stay
/// valid in a copy of a dictionary (value semantics); a key repeated in the references has one index, and its last
/// value wins, as when inserted. A class, so looking one up retains it once.
private final class DictionaryShape {
    let template: [String: PropertyList]
    let positions: [Dictionary<String, PropertyList>.Index]

    /// The shape of a dictionary whose keys, in reference order, are `names`; nil if a key is not found again.
    init?(names: [String]) {
        var template = [String: PropertyList](minimumCapacity: names.count)
        for name in names { template[name] = .null }
        var positions: [Dictionary<String, PropertyList>.Index] = []
        positions.reserveCapacity(names.count)
        for name in names {
            guard let index = template.index(forKey: name) else { return nil }
            positions.append(index)
        }
        self.template = template
        self.positions = positions
    }
}

/// A dictionary key decoded before: its object and its string (``Reader/keyCache``).
private struct DecodedKey {
    var object: Int
    var name: String
}

/// Where the last dictionary with some key count had its key references, and its shape if it had one.
private struct ShapeSlot {
    var keysStart: Int
    var count: Int
    var shape: DictionaryShape?
}

/// Reading scalars: on the layout rather than the reader, so that reading one does not copy the reader (a call of a
/// non-mutating method from a mutating one copied all of it onto the stack: issue 29 item 5).
extension BinaryPropertyListLayout {
    func singleByteObject(_ marker: UInt8, at offset: Int) throws -> PropertyList {
        switch marker {
        case BinaryPropertyListMarker.null:
            return .null
        case BinaryPropertyListMarker.boolFalse:
            return .bool(false)
        case BinaryPropertyListMarker.boolTrue:
            return .bool(true)
        case BinaryPropertyListMarker.uuid:
            try require(16, at: offset + 1, for: "a UUID")
            let base = offset + 1
            let uuid = UUID(
                uuid: (
                    bytes[base], bytes[base + 1], bytes[base + 2], bytes[base + 3], bytes[base + 4],
                    bytes[base + 5], bytes[base + 6], bytes[base + 7], bytes[base + 8], bytes[base + 9],
                    bytes[base + 10], bytes[base + 11], bytes[base + 12], bytes[base + 13], bytes[base + 14],
                    bytes[base + 15]
                )
            )
            return .uuid(uuid)
        case BinaryPropertyListMarker.url:
            try require(1, at: offset + 1, for: "a URL")
            let stringMarker = bytes[offset + 1]
            guard (0x5...0x7).contains(stringMarker >> 4) else {
                throw BatonCoreError(.invalidObject, "URL not followed by a string", offset: offset + 1)
            }
            let text = try string(marker: stringMarker, at: offset + 1)
            guard let url = URL(string: text) else {
                throw BatonCoreError(.invalidObject, "URL object holds an invalid URL \(BatonCoreError.quoted(text))", offset: offset)
            }
            return .url(url)
        default:
            throw BatonCoreError(.invalidObject, "unknown object marker \(hex(marker))", offset: offset)
        }
    }

    func integer(_ marker: UInt8, at offset: Int) throws -> PropertyList {
        let nibble = Int(marker & 0x0F)
        guard nibble <= 4 else {
            throw BatonCoreError(.invalidObject, "integer of 2^\(nibble) bytes (at most 16 exist)", offset: offset)
        }
        let size = 1 << nibble
        try require(size, at: offset + 1, for: "an integer")
        switch size {
        case 1, 2, 4:
            // 1-, 2- and 4-byte integers are unsigned in this format.
            return .integer(Int64(Self.readUnsigned(bytes, at: offset + 1, size: size)))
        case 8:
            return .integer(Int64(bitPattern: Self.readUnsigned(bytes, at: offset + 1, size: 8)))
        default:
            // A 16-byte two's-complement integer: values beyond 64 bits are out of range.
            let high = Self.readUnsigned(bytes, at: offset + 1, size: 8)
            let low = Self.readUnsigned(bytes, at: offset + 9, size: 8)
            if high == 0 {
                return PropertyList(integer: low) ?? .unsignedInteger(low)
            }
            if high == UInt64.max, Int64(bitPattern: low) < 0 {
                return .integer(Int64(bitPattern: low))
            }
            throw BatonCoreError(.invalidNumber, "128-bit integer outside the 64-bit range", offset: offset)
        }
    }

    func string(marker: UInt8, at offset: Int) throws -> String {
        let (count, start) = try countAndStart(marker: marker, at: offset)
        switch marker >> 4 {
        case BinaryPropertyListMarker.asciiString:
            try require(count, at: start, for: "an ASCII string")
            let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)])
            guard !slice.contains(where: { $0 >= 0x80 }) else {
                throw BatonCoreError(.invalidString, "ASCII string holds a byte above 0x7F", offset: offset)
            }
            return String(decoding: slice, as: UTF8.self)
        case BinaryPropertyListMarker.utf8String:
            try require(count, at: start, for: "a UTF-8 string")
            guard let text = String(validating: bytes[start..<(start + count)], as: UTF8.self) else {
                throw BatonCoreError(.invalidString, "UTF-8 string is not valid UTF-8", offset: offset)
            }
            return text
        default:
            let (byteCount, overflow) = count.multipliedReportingOverflow(by: 2)
            guard !overflow else { throw BatonCoreError(.truncated, "UTF-16 string too long", offset: offset) }
            try require(byteCount, at: start, for: "a UTF-16 string")
            return try utf16String(units: count, at: start, markerOffset: offset)
        }
    }

    func utf16String(units: Int, at start: Int, markerOffset: Int) throws -> String {
        var scalars = String.UnicodeScalarView()
        var index = 0
        while index < units {
            let unit = UInt16(bytes[start + 2 * index]) << 8 | UInt16(bytes[start + 2 * index + 1])
            index += 1
            if UTF16.isLeadSurrogate(unit) {
                guard index < units else {
                    throw BatonCoreError(.invalidString, "UTF-16 string ends inside a surrogate pair", offset: markerOffset)
                }
                let trail = UInt16(bytes[start + 2 * index]) << 8 | UInt16(bytes[start + 2 * index + 1])
                guard UTF16.isTrailSurrogate(trail) else {
                    throw BatonCoreError(.invalidString, "UTF-16 string has an unpaired surrogate", offset: markerOffset)
                }
                index += 1
                let value = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(trail) - 0xDC00)
                if let scalar = Unicode.Scalar(value) { scalars.append(scalar) }
            } else if let scalar = Unicode.Scalar(unit) {
                scalars.append(scalar)
            } else {
                throw BatonCoreError(.invalidString, "UTF-16 string has an unpaired surrogate", offset: markerOffset)
            }
        }
        return String(scalars)
    }
}

extension Reader {
    /// The dictionary key that is object `index`, referenced at `position`: from ``keyCache`` when it was decoded
    /// before (still counted as a value, as every use of a shared object is), else decoded and kept there.
    mutating func key(_ index: Int, at position: Int, depth: Int) throws -> String {
        let slot = index % keyCache.count
        if keyCache[slot].object == index {
            try countObject()
            return keyCache[slot].name
        }
        let key = try object(index, depth: depth)
        guard case .string(let name) = key else {
            throw BatonCoreError(
                .nonStringKey,
                "dictionary key is a \(key.typeName), property-list keys are strings",
                offset: position
            )
        }
        keyCache[slot] = DecodedKey(object: index, name: name)
        return name
    }
}

/// A marker byte as errors print it: `0x0F`, two upper-case digits (what `String(format: "0x%02X")` gave, without
/// needing Foundation's formatter).
func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return "0x" + (digits.count == 1 ? "0" + digits : digits)
}
