#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The serialized forms a ``PropertyList`` can take.
public enum PropertyListFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// `bplist00`: compact and fast; what crosses the wire between devices.
    case binary
    /// Apple's XML form: what `Info.plist` files in source trees usually are.
    case xml
    /// JSON, write-only: for the classic types except data and dates, as `plutil -convert json` does.
    case json

    public var description: String { rawValue }
}

extension PropertyList {
    /// Decodes a property list in whichever format `data` is in (binary or XML), and says which.
    /// - Throws: ``BatonCoreError``: `unknownFormat` when the data is neither, otherwise the decoder's error.
    public static func decode(
        _ data: Data,
        limits: PropertyListLimits = .default
    ) throws -> (value: PropertyList, format: PropertyListFormat) {
        if BinaryPropertyListDecoder.isBinaryPropertyList(data) {
            return (try BinaryPropertyListDecoder.decode(data, limits: limits), .binary)
        }
        if data.starts(with: Array("bplist".utf8)) {
            throw BatonCoreError(
                .unknownFormat,
                "binary property list version \(BatonCoreError.quoted(String(decoding: data.prefix(8), as: UTF8.self))) is not supported "
                    + "(only bplist00)",
                offset: 0
            )
        }
        let firstSignificant = data.drop(while: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }).first
        switch firstSignificant {
        case UInt8(ascii: "<"), 0xEF, 0xFE, 0xFF:
            return (try XMLPropertyListDecoder.decode(data, limits: limits), .xml)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            throw BatonCoreError(
                .unknownFormat,
                "this looks like JSON; Baton reads binary and XML property lists (convert JSON with a JSON tool first)",
                offset: 0
            )
        case nil:
            throw BatonCoreError(.unknownFormat, "the input is empty", offset: 0)
        default:
            throw BatonCoreError(
                .unknownFormat,
                "not a property list: neither a bplist00 header nor XML",
                offset: 0
            )
        }
    }

    /// Encodes this value in `format`.
    /// - Throws: ``BatonCoreError`` `unrepresentable` when the format cannot hold a value in the tree.
    public func encoded(as format: PropertyListFormat, limits: PropertyListLimits = .default) throws -> Data {
        switch format {
        case .binary: try BinaryPropertyListEncoder.encode(self, limits: limits)
        case .xml: try XMLPropertyListEncoder.encode(self, limits: limits)
        case .json: try JSONPropertyListEncoder.encode(self, limits: limits)
        }
    }
}
