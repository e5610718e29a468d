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
        return writer.write()
    }
}

/// Flattens a value into objects in index order, then writes the file.
///
/// Scalars and strings are written as they are met, into ``scalarBytes``; each object is a range there or a container
/// pointing into ``references``. The file is then the header, the objects in index order (a copy for a scalar, a
/// marker and references for a container, once the reference width is known), the offset table and the trailer, each
/// written once into a buffer of the exact size (issue 26 item 5: the continuing and origin apps encode every state).
private struct BinaryWriter {
    /// One object of the file, in object-index order.
    struct FlatObject {
        /// ``BinaryPropertyListMarker`` high nibble of a container (array, set, dictionary), or 0: bytes in `scalarBytes`.
        var container: UInt8
        /// Scalars: where their bytes start and end in `scalarBytes`. Containers: where their references start, and
        /// how many elements they have (a dictionary's keys at `first..<first+second`, its values after them).
        var first: Int
        var second: Int
    }

    let maximumDepth: Int
    var objects: [FlatObject] = []
    var references: [Int] = []
    /// The string objects by their encoded bytes (``StringTable``): equal bytes, one object.
    var stringTable = StringTable()
    /// The string objects by value (`==`, canonical equivalence), made only once a string is not ASCII: equal strings
    /// are stored once, as the encoder always did, also when their scalars differ ("é" composed or not).
    var stringObjects: [String: Int]?
    var scalarBytes: [UInt8] = []
    /// The objects of strings met lately, by their representation (``flattenString(_:)``); 128 slots, direct-mapped.
    var recentStrings = [(first: UInt64, second: UInt64, object: Int)](repeating: (0, 0, -1), count: 128)

    init(maximumDepth: Int) {
        self.maximumDepth = maximumDepth
        objects.reserveCapacity(256)
        references.reserveCapacity(512)
        scalarBytes.reserveCapacity(4_096)
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
            objects[index] = FlatObject(container: BinaryPropertyListMarker.array, first: start, second: elements.count)
            return index
        case .set(let members):
            let (index, start) = try reserveContainer(references: members.count, depth: depth)
            for (offset, member) in members.enumerated() {
                references[start + offset] = try flatten(member, depth: depth + 1)
            }
            objects[index] = FlatObject(container: BinaryPropertyListMarker.set, first: start, second: members.count)
            return index
        case .dictionary(let entries):
            let count = entries.count
            let (index, start) = try reserveContainer(references: 2 * count, depth: depth)
            try withUnsafeTemporaryAllocation(of: SortedEntry.self, capacity: count) { order in
                // Sorted by key (unique under `==`, so `<` orders them totally: the same order every time), as
                // positions in the dictionary and the keys' first bytes, not as a copy of the entries (issue 29 item 5).
                var allASCII = true
                var filled = 0
                var position = entries.startIndex
                while position != entries.endIndex, filled < count {
                    var key = entries.keys[position]
                    let (prefix, ascii) = key.withUTF8(Self.sortPrefix)
                    allASCII = allASCII && ascii
                    order.initializeElement(at: filled, to: SortedEntry(prefix: prefix, position: position))
                    filled += 1
                    entries.formIndex(after: &position)
                }
                var sorted = UnsafeMutableBufferPointer(rebasing: order[..<filled])
                defer { _ = sorted.deinitialize() }
                // Among ASCII strings `<` is the order of their bytes, so the first eight decide unless they are equal.
                func precedes(_ first: SortedEntry, _ second: SortedEntry) -> Bool {
                    if allASCII, first.prefix != second.prefix { return first.prefix < second.prefix }
                    return entries.keys[first.position] < entries.keys[second.position]
                }
                if filled <= 16 {
                    // Few entries (most dictionaries): an insertion sort in place, where the standard sort allocated
                    // a buffer for every dictionary.
                    for next in sorted.indices.dropFirst() {
                        let entry = sorted[next]
                        var slot = next
                        while slot > 0, precedes(entry, sorted[slot - 1]) {
                            sorted[slot] = sorted[slot - 1]
                            slot -= 1
                        }
                        sorted[slot] = entry
                    }
                } else {
                    sorted.sort(by: precedes)
                }
                for (offset, entry) in sorted.enumerated() {
                    references[start + offset] = flattenString(entries.keys[entry.position])
                    references[start + count + offset] = try flatten(entries.values[entry.position], depth: depth + 1)
                }
            }
            objects[index] = FlatObject(container: BinaryPropertyListMarker.dictionary, first: start, second: count)
            return index
        case .date(let date) where !date.timeIntervalSinceReferenceDate.isFinite:
            throw BatonCoreError(.unrepresentable, "a date of \(date.timeIntervalSinceReferenceDate) seconds is no point in time")
        default:
            let start = scalarBytes.count
            writeScalar(value)
            objects.append(FlatObject(container: 0, first: start, second: scalarBytes.count))
            return objects.count - 1
        }
    }

    /// The object of the string `text`: the first one equal to it (`==`), else a new one.
    ///
    /// Its bytes are written first and looked up in ``stringTable``: the same bytes are the same string. Strings can be
    /// equal with other bytes only when one has a scalar from U+0300 on ("e" and a combining accent against "è", the
    /// Kelvin sign against "K"; ``writeString(_:)``), so from the first such string on, a string whose bytes are new
    /// is looked up by value too (``stringObjects``). Every string goes where a dictionary of strings alone put it (as
    /// the encoder had), so the output is the same, byte for byte.
    mutating func flattenString(_ text: String) -> Int {
        // The same representation is the same string (its storage, if any, is immutable and held by the value being
        // encoded), so it is the same object as last time: a key repeated in every dictionary is found by two words
        // compared, not its bytes hashed (issue 29 item 5). ``lookUpString(_:)`` is the same for the same string
        // however often it is asked, so this changes no output.
        guard MemoryLayout<String>.size == 16 else { return lookUpString(text) }
        let identity = withUnsafeBytes(of: text) { raw in
            (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        let slot = Int(truncatingIfNeeded: (((identity.0 &* multiplier) ^ identity.1) &* multiplier) >> 57)
        let recent = recentStrings[slot]
        if recent.object >= 0, recent.first == identity.0, recent.second == identity.1 { return recent.object }
        let object = lookUpString(text)
        recentStrings[slot] = (identity.0, identity.1, object)
        return object
    }

    /// The object of `text` (``flattenString(_:)``), looked up by its bytes and, if need be, its value.
    mutating func lookUpString(_ text: String) -> Int {
        var text = text
        // ASCII (nearly every key and most values): its own UTF-8 is looked up, hashed as it is checked to be ASCII in
        // the same pass, and written only when new (issue 29 item 5: most keys repeat in every dictionary).
        let ascii = text.withUTF8 { utf8 -> (object: Int?, slot: Int, hash: UInt64)? in
            let payload = UnsafeRawBufferPointer(utf8)
            let (hash, isASCII) = StringTable.hash(payload, kind: BinaryPropertyListMarker.asciiString)
            guard isASCII else { return nil }
            return scalarBytes.withUnsafeBufferPointer { all in
                stringTable.find(BinaryPropertyListMarker.asciiString, payload, hash: hash, in: all, objects: objects)
            }
        }
        if let ascii {
            if let existing = ascii.object ?? stringObjects?[text] { return existing }
            let start = scalarBytes.count
            text.withUTF8 { utf8 in
                writeCount(BinaryPropertyListMarker.asciiString, utf8.count)
                scalarBytes.append(contentsOf: utf8)
            }
            return addString(text, from: start, slot: ascii.slot, hash: ascii.hash)
        }
        let start = scalarBytes.count
        let plain = writeString(text)
        let found = scalarBytes.withUnsafeBufferPointer { bytes in
            // The UTF-16 units after the marker and count (for 15 or more units, an integer object).
            let header = bytes[start] & 0x0F != 0x0F ? 1 : 2 + (1 << Int(bytes[start + 1] & 0x0F))
            let payload = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[(start + header)...]))
            let hash = StringTable.hash(payload, kind: BinaryPropertyListMarker.utf16String).hash
            return stringTable.find(BinaryPropertyListMarker.utf16String, payload, hash: hash, in: bytes, objects: objects)
        }
        if let existing = found.object {
            scalarBytes.removeLast(scalarBytes.count - start)
            return existing
        }
        if stringObjects == nil, !plain { stringObjects = allStringObjects() }
        if let existing = stringObjects?[text] {
            scalarBytes.removeLast(scalarBytes.count - start)
            return existing
        }
        return addString(text, from: start, slot: found.slot, hash: found.hash)
    }

    /// Makes the string written from `start` on a new object, found from now on by its bytes and its value.
    mutating func addString(_ text: String, from start: Int, slot: Int, hash: UInt64) -> Int {
        objects.append(FlatObject(container: 0, first: start, second: scalarBytes.count))
        let index = objects.count - 1
        stringTable.insert(index, at: slot, hash: hash)
        stringObjects?[text] = index
        return index
    }

    /// The string objects so far by value, each string read back from its bytes (exactly the scalars written).
    func allStringObjects() -> [String: Int] {
        var strings: [String: Int] = [:]
        for (index, object) in objects.enumerated() where object.container == 0 {
            let bytes = scalarBytes[object.first..<object.second]
            let marker = bytes[bytes.startIndex]
            // Strings are the only scalars with these markers (a URL's inline string follows its own marker).
            guard marker >> 4 == BinaryPropertyListMarker.asciiString || marker >> 4 == BinaryPropertyListMarker.utf16String else { continue }
            // The marker, and for 15 or more the integer object of the count.
            let header = marker & 0x0F != 0x0F ? 1 : 2 + (1 << Int(bytes[bytes.startIndex + 1] & 0x0F))
            let text = bytes[(bytes.startIndex + header)...]
            let string =
                marker >> 4 == BinaryPropertyListMarker.asciiString
                ? String(decoding: text, as: UTF8.self)
                : String(decoding: stride(from: text.startIndex, to: text.endIndex, by: 2).map { UInt16(text[$0]) << 8 | UInt16(text[$0 + 1]) }, as: UTF16.self)
            if strings[string] == nil { strings[string] = index }
        }
        return strings
    }

    /// A dictionary entry to be sorted: its position in the dictionary, and its key's first eight UTF-8 bytes.
    struct SortedEntry {
        var prefix: UInt64
        var position: Dictionary<String, PropertyList>.Index
    }

    /// The first eight bytes of `utf8`, big-endian and zero-padded (so ordered as the bytes are, a shorter string
    /// first when they are equal but for the padding), and whether every byte is ASCII.
    static func sortPrefix(_ utf8: UnsafeBufferPointer<UInt8>) -> (prefix: UInt64, ascii: Bool) {
        var prefix: UInt64 = 0
        var bits: UInt8 = 0
        for (offset, byte) in utf8.enumerated() {
            bits |= byte
            if offset < 8 { prefix |= UInt64(byte) << (56 - 8 * offset) }
        }
        return (prefix, bits < 0x80)
    }

    /// Appends a placeholder for a container and room for its references; returns both positions.
    mutating func reserveContainer(references count: Int, depth: Int) throws -> (index: Int, start: Int) {
        guard depth < maximumDepth else {
            throw BatonCoreError(.tooDeep, "containers nest deeper than \(maximumDepth) levels")
        }
        objects.append(FlatObject(container: BinaryPropertyListMarker.array, first: 0, second: 0))
        let start = references.count
        references.append(contentsOf: repeatElement(0, count: count))
        return (objects.count - 1, start)
    }

    // MARK: Writing the file

    static func byteWidth(_ maximum: Int) -> Int {
        switch maximum {
        case ..<(1 << 8): 1
        case ..<(1 << 16): 2
        case ..<(1 << 32): 4
        default: 8
        }
    }

    /// The bytes of a count as ``writeCount(_:_:)`` writes it: the marker, and an integer object from 15 on.
    static func countSize(_ count: Int) -> Int {
        count < 15 ? 1 : 1 + integerSize(UInt64(count))
    }

    /// The bytes of an integer object as ``writeInteger(_:)`` writes it.
    static func integerSize(_ value: UInt64) -> Int {
        switch value {
        case ..<(1 << 8): 2
        case ..<(1 << 16): 3
        case ..<(1 << 32): 5
        case ...UInt64(Int64.max): 9
        default: 17
        }
    }

    func write() -> Data {
        let referenceSize = Self.byteWidth(objects.count - 1)
        // The object area's size, so the whole file is written once into a buffer of its size.
        var objectsEnd = BinaryPropertyListMarker.header.count
        for object in objects {
            if object.container == 0 {
                objectsEnd += object.second - object.first
            } else {
                let count = object.second
                let references = object.container == BinaryPropertyListMarker.dictionary ? 2 * count : count
                objectsEnd += Self.countSize(count) + references * referenceSize
            }
        }
        let offsetSize = Self.byteWidth(objectsEnd)
        let fileSize = objectsEnd + objects.count * offsetSize + BinaryPropertyListMarker.trailerSize
        var file = Data(count: fileSize)
        file.withUnsafeMutableBytes { buffer in
            var out = ByteWriter(buffer)
            for byte in BinaryPropertyListMarker.header { out.append(byte) }
            var offsets = out.position
            // The offset table is filled in beside the objects: entry i is object i's position.
            var table = ByteWriter(buffer, at: objectsEnd)
            scalarBytes.withUnsafeBufferPointer { scalars in
                for object in objects {
                    offsets = out.position
                    table.appendBigEndian(UInt64(offsets), size: offsetSize)
                    if object.container == 0 {
                        out.append(UnsafeBufferPointer(rebasing: scalars[object.first..<object.second]))
                        continue
                    }
                    let count = object.second
                    out.appendCount(object.container, count)
                    let end = object.first + (object.container == BinaryPropertyListMarker.dictionary ? 2 * count : count)
                    for position in object.first..<end {
                        out.appendBigEndian(UInt64(references[position]), size: referenceSize)
                    }
                }
            }
            // Trailer: 5 unused bytes, sort version, offset size, reference size, count, top object, table offset.
            // The buffer starts zeroed, so the six zero bytes are skipped.
            table.position += 6
            table.append(UInt8(offsetSize))
            table.append(UInt8(referenceSize))
            table.appendBigEndian(UInt64(objects.count), size: 8)
            table.appendBigEndian(0, size: 8)
            table.appendBigEndian(UInt64(objectsEnd), size: 8)
        }
        return file
    }

    // MARK: Scalars

    mutating func appendBigEndian(_ value: UInt64, size: Int) {
        // The low `size` bytes in one append: byte by byte, each append checked uniqueness and capacity.
        withUnsafeBytes(of: value.bigEndian) { scalarBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[(8 - size)...])) }
    }

    /// A marker with its count in the low nibble, or `0xF` and an integer object when the count is 15 or more.
    mutating func writeCount(_ kind: UInt8, _ count: Int) {
        if count < 15 {
            scalarBytes.append(kind << 4 | UInt8(count))
        } else {
            scalarBytes.append(kind << 4 | 0x0F)
            writeInteger(UInt64(count))
        }
    }

    mutating func writeInteger(_ value: UInt64) {
        switch value {
        case ..<(1 << 8):
            scalarBytes.append(0x10)
            appendBigEndian(value, size: 1)
        case ..<(1 << 16):
            scalarBytes.append(0x11)
            appendBigEndian(value, size: 2)
        case ..<(1 << 32):
            scalarBytes.append(0x12)
            appendBigEndian(value, size: 4)
        case ...UInt64(Int64.max):
            scalarBytes.append(0x13)
            appendBigEndian(value, size: 8)
        default:
            // Above Int64.max the format needs its 16-byte signed integer.
            scalarBytes.append(0x14)
            appendBigEndian(0, size: 8)
            appendBigEndian(value, size: 8)
        }
    }

    /// Writes `text` as an ASCII string object when it is ASCII, else as a UTF-16 one; says whether all its scalars
    /// are below U+0300.
    ///
    /// Such a string is in Unicode's normal form C and no other string of such scalars is canonically equivalent to
    /// it (none of them combines, none decomposes to another), so among them `==` is the same scalars.
    @discardableResult
    mutating func writeString(_ text: String) -> Bool {
        var text = text
        // Contiguous UTF-8 (every native string; a bridged one is made so once): its bytes are read in place. Below
        // U+0300 is every byte below 0xCC (lead bytes up to 0xCB, continuation bytes below 0xC0).
        let highest = text.withUTF8 { bytes in
            let highest = bytes.max() ?? 0
            if highest < 0x80 {
                writeCount(BinaryPropertyListMarker.asciiString, bytes.count)
                scalarBytes.append(contentsOf: bytes)
            }
            return highest
        }
        guard highest >= 0x80 else { return true }
        writeCount(BinaryPropertyListMarker.utf16String, text.utf16.count)
        for unit in text.utf16 {
            scalarBytes.append(UInt8(truncatingIfNeeded: unit >> 8))
            scalarBytes.append(UInt8(truncatingIfNeeded: unit))
        }
        return highest < 0xCC
    }

    mutating func writeScalar(_ value: PropertyList) {
        switch value {
        case .integer(let number):
            if number < 0 {
                scalarBytes.append(0x13)
                appendBigEndian(UInt64(bitPattern: number), size: 8)
            } else {
                writeInteger(UInt64(number))
            }
        case .unsignedInteger(let number):
            writeInteger(number)
        case .real(let number):
            scalarBytes.append(0x23)
            appendBigEndian(number.bitPattern, size: 8)
        case .bool(let flag):
            scalarBytes.append(flag ? BinaryPropertyListMarker.boolTrue : BinaryPropertyListMarker.boolFalse)
        case .date(let date):
            scalarBytes.append(0x33)
            appendBigEndian(date.timeIntervalSinceReferenceDate.bitPattern, size: 8)
        case .data(let bytes):
            writeCount(BinaryPropertyListMarker.data, bytes.count)
            scalarBytes.append(contentsOf: bytes)
        case .null:
            scalarBytes.append(BinaryPropertyListMarker.null)
        case .uuid(let uuid):
            scalarBytes.append(BinaryPropertyListMarker.uuid)
            withUnsafeBytes(of: uuid.uuid) { scalarBytes.append(contentsOf: $0) }
        case .url(let url):
            scalarBytes.append(BinaryPropertyListMarker.url)
            writeString(url.absoluteString)
        case .string(let text):
            writeString(text)
        case .array, .set, .dictionary:
            // Containers are flattened into their own objects and never reach this point.
            preconditionFailure("container passed to writeScalar")
        }
    }
}

extension BinaryWriter {
    /// The string objects by their kind and text (so by their encoded bytes): open addressing on a word-at-a-time hash, as
    /// Swift's dictionary of strings hashed each of them with a seeded SipHash, half the encoder's time for a 3 KB state.
    struct StringTable {
        /// Each slot's object, or -1; and its bytes' hash.
        var slots = [Int](repeating: -1, count: 64)
        var hashes = [UInt64](repeating: 0, count: 64)
        var count = 0

        /// A hash of a string object's kind (its marker's high nibble) and its text (what follows the marker and count,
        /// which the kind and the text's length decide), eight bytes at a time; and whether every byte is below 0x80.
        static func hash(_ text: UnsafeRawBufferPointer, kind: UInt8) -> (hash: UInt64, ascii: Bool) {
            let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
            var hash = (UInt64(kind) << 56 | UInt64(truncatingIfNeeded: text.count)) &* multiplier
            var bits: UInt64 = 0
            var offset = 0
            while offset + 8 <= text.count {
                let word = text.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                bits |= word
                hash = (hash ^ word) &* multiplier
                hash ^= hash >> 32
                offset += 8
            }
            if offset < text.count {
                var word: UInt64 = 0
                while offset < text.count {
                    word = word << 8 | UInt64(text[offset])
                    offset += 1
                }
                bits |= word
                hash = (hash ^ word) &* multiplier
            }
            // The slot is the low bits, which a multiplication fills only from the low bits: fold the high ones in.
            hash ^= hash >> 29
            hash = hash &* multiplier
            hash ^= hash >> 32
            return (hash, bits & 0x8080_8080_8080_8080 == 0)
        }

        /// The string object of `kind` whose text is `text`, if any (its hash is `hash`), and the slot for it
        /// otherwise. `all` holds every object's bytes: a string object is its marker and count, then its text.
        func find(
            _ kind: UInt8, _ text: UnsafeRawBufferPointer, hash: UInt64, in all: UnsafeBufferPointer<UInt8>, objects: [FlatObject]
        ) -> (object: Int?, slot: Int, hash: UInt64) {
            let mask = slots.count - 1
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] >= 0 {
                let object = objects[slots[slot]]
                // The same kind and text length is the same marker and count.
                if hashes[slot] == hash, all[object.first] >> 4 == kind,
                    object.second - object.first == BinaryWriter.countSize(kind == BinaryPropertyListMarker.asciiString ? text.count : text.count / 2) + text.count,
                    Self.same(all, from: object.second - text.count, as: text)
                {
                    return (slots[slot], slot, hash)
                }
                slot = (slot + 1) & mask
            }
            return (nil, slot, hash)
        }

        /// Whether `all` holds the bytes of `key` from `start` on (checked to be in it), compared eight at a time.
        static func same(_ all: UnsafeBufferPointer<UInt8>, from start: Int, as key: UnsafeRawBufferPointer) -> Bool {
            let stored = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(all)[start..<(start + key.count)])
            var offset = 0
            while offset + 8 <= key.count {
                guard stored.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == key.loadUnaligned(fromByteOffset: offset, as: UInt64.self) else {
                    return false
                }
                offset += 8
            }
            while offset < key.count {
                guard stored[offset] == key[offset] else { return false }
                offset += 1
            }
            return true
        }

        /// Puts `object` in `slot` (from ``find(_:_:hash:in:objects:)``, with nothing inserted since).
        mutating func insert(_ object: Int, at slot: Int, hash: UInt64) {
            slots[slot] = object
            hashes[slot] = hash
            count += 1
            guard count * 2 > slots.count else { return }
            // Keep it at most half full: twice the slots, every entry moved.
            let (oldSlots, oldHashes) = (slots, hashes)
            slots = [Int](repeating: -1, count: 2 * oldSlots.count)
            hashes = [UInt64](repeating: 0, count: 2 * oldSlots.count)
            let mask = slots.count - 1
            for (index, object) in oldSlots.enumerated() where object >= 0 {
                var slot = Int(truncatingIfNeeded: oldHashes[index]) & mask
                while slots[slot] >= 0 { slot = (slot + 1) & mask }
                slots[slot] = object
                hashes[slot] = oldHashes[index]
            }
        }
    }
}

/// Writes bytes into a buffer sized beforehand (``BinaryWriter/write()`` computes the file's exact size).
private struct ByteWriter {
    let buffer: UnsafeMutableRawBufferPointer
    var position: Int

    init(_ buffer: UnsafeMutableRawBufferPointer, at position: Int = 0) {
        self.buffer = buffer
        self.position = position
    }

    mutating func append(_ byte: UInt8) {
        buffer[position] = byte
        position += 1
    }

    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        UnsafeMutableRawBufferPointer(rebasing: buffer[position..<(position + bytes.count)]).copyMemory(from: UnsafeRawBufferPointer(bytes))
        position += bytes.count
    }

    mutating func appendBigEndian(_ value: UInt64, size: Int) {
        // One- and two-byte references and offsets (every file under 64 KB) in one store.
        switch size {
        case 1:
            buffer[position] = UInt8(truncatingIfNeeded: value)
            position += 1
            return
        case 2:
            buffer.storeBytes(of: UInt16(truncatingIfNeeded: value).bigEndian, toByteOffset: position, as: UInt16.self)
            position += 2
            return
        default:
            break
        }
        var shift = (size - 1) * 8
        while shift >= 0 {
            buffer[position] = UInt8(truncatingIfNeeded: value >> UInt64(shift))
            position += 1
            shift -= 8
        }
    }

    /// A container's marker and count, as ``BinaryWriter/writeCount(_:_:)`` writes a scalar's.
    mutating func appendCount(_ kind: UInt8, _ count: Int) {
        if count < 15 {
            append(kind << 4 | UInt8(count))
            return
        }
        append(kind << 4 | 0x0F)
        let size = BinaryWriter.integerSize(UInt64(count))
        append(0x10 | UInt8(size == 2 ? 0 : size == 3 ? 1 : size == 5 ? 2 : 3))
        appendBigEndian(UInt64(count), size: size - 1)
    }
}
