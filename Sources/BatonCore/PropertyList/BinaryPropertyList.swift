#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Quick looks at a binary property list that answer what a full decode would, without building the tree: one
/// marker byte per object, no allocation. For the agents' warm continue (issue 26 item 5), which decoded the whole
/// state (60-140 µs for 3 KB) only to look at its URLs.
///
/// Each answers "may" conservatively: false only when it is sure, from the same layout checks the decoder makes
/// (``BinaryPropertyListLayout``); anything it cannot read (not a binary property list, a damaged trailer) is true,
/// and the caller takes its full path.
public enum BinaryPropertyList {
    /// Whether decoding `data` with ``BinaryPropertyListDecoder`` may give a ``PropertyList/url(_:)`` anywhere in it.
    ///
    /// False only when `data` is a binary property list with a well-formed trailer and no object the offset table
    /// points at starts with the URL marker (0x0C): the decoder makes a URL from that marker alone (a string that
    /// looks like a URL, in any encoding or case, stays a string; a URL's own text is inline after its marker, not
    /// an object), and reads every object through the table, so it can reach no URL. A table entry outside the object
    /// area is skipped: the decoder fails on reaching it. XML and other formats are true (the XML decoder makes no
    /// URLs today, but its callers do not need this).
    public static func mayHoldURLs(_ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            guard let layout = try? BinaryPropertyListLayout(bytes: bytes) else { return true }
            for object in 0..<layout.objectCount {
                guard let offset = layout.validOffset(of: object) else { continue }
                if bytes[offset] == BinaryPropertyListMarker.url { return true }
            }
            return false
        }
    }

    /// Whether the value of any of `keys` in the top-level dictionary of `data` may hold `byte` (an ASCII byte) once
    /// decoded, or be anything but a string.
    ///
    /// False only when the top object is a dictionary and the value of every entry whose key may be one of `keys`
    /// is an ASCII string (marker 0x5_, bytes below 0x80) without `byte`. A key is told apart from `keys` only when
    /// it is an ASCII or UTF-8 string of ASCII bytes (there string equality is byte equality); any other key is taken
    /// to match. Duplicate keys are all looked at, whichever the decoder keeps.
    public static func mayHold(_ byte: UInt8, inTopLevelValuesOf keys: [String], in data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            guard let layout = try? BinaryPropertyListLayout(bytes: bytes),
                let top = layout.validOffset(of: layout.topObject),
                bytes[top] >> 4 == BinaryPropertyListMarker.dictionary,
                let (count, start) = try? layout.countAndStart(marker: bytes[top], at: top),
                // count is at most the file's size, so this cannot overflow.
                (try? layout.require(2 * count * layout.referenceSize, at: start, for: "a dictionary's references")) != nil
            else { return true }
            for element in 0..<count {
                let keyPosition = start + element * layout.referenceSize
                guard let key = object(layout, referencedAt: keyPosition) else { return true }
                if let text = asciiText(layout, at: key, orUTF8: true),
                    !keys.contains(where: { $0.utf8.elementsEqual(text) })
                {
                    continue
                }
                let valuePosition = start + (count + element) * layout.referenceSize
                guard let value = object(layout, referencedAt: valuePosition),
                    let text = asciiText(layout, at: value, orUTF8: false),
                    !text.contains(byte)
                else { return true }
            }
            return false
        }
    }

    /// The offset of the object referenced at `position`, or nil when the reference or its table entry is bad.
    private static func object(_ layout: BinaryPropertyListLayout, referencedAt position: Int) -> Int? {
        guard let object = try? layout.reference(at: position) else { return nil }
        return layout.validOffset(of: object)
    }

    /// The bytes of the string at `offset` when it is an ASCII string (or a UTF-8 one, `orUTF8`) of ASCII bytes.
    private static func asciiText(_ layout: BinaryPropertyListLayout, at offset: Int, orUTF8: Bool) -> UnsafeRawBufferPointer? {
        let marker = layout.bytes[offset]
        let kind = marker >> 4
        guard kind == BinaryPropertyListMarker.asciiString || (orUTF8 && kind == BinaryPropertyListMarker.utf8String), let (count, start) = try? layout.countAndStart(marker: marker, at: offset),
            (try? layout.require(count, at: start, for: "a string")) != nil
        else { return nil }
        let text = UnsafeRawBufferPointer(rebasing: layout.bytes[start..<(start + count)])
        return text.contains(where: { $0 >= 0x80 }) ? nil : text
    }
}
