import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the browser extension tells its native messaging host, `baton browser-host` (issue 14).
///
/// On the wire: one UTF-8 JSON object per native message, `{"type":"tab","url":…,"title":…,"incognito":…}` for the
/// focused tab of the focused window, `{"type":"none"}` when no browser window has focus.
public enum BrowserMessage: Sendable, Hashable {
    /// The focused tab of the focused window: its URL, its title, and whether its window is private.
    case tab(url: String, title: String, incognito: Bool)
    /// No browser window has focus.
    case none

    /// The longest URL accepted, in UTF-8 bytes: browsers show longer ones, but an advert and a person's list of
    /// nearby pages have no use for them, and a longer one is refused rather than cut (a cut URL is another page).
    public static let maximumURLBytes = 8 * 1024
    /// The longest title kept, in UTF-8 bytes; a longer one is shortened (at a character) rather than refused, so a
    /// page with a long title is still advertised.
    public static let maximumTitleBytes = 1024

    struct Wire: Codable {
        var type: String
        var url: String?
        var title: String?
        var incognito: Bool?
    }

    /// Reads one message body.
    /// - Throws: ``BatonProtocolError`` `nativeMessageNotJSON` (not a UTF-8 JSON object), `nativeMessageUnknownType`,
    ///   or `nativeMessageField` (a field missing, of the wrong type, or a URL over ``maximumURLBytes``).
    public init(json body: Data) throws {
        let wire = try NativeMessageJSON.decode(Wire.self, from: body)
        switch wire.type {
        case "tab":
            guard let url = wire.url else { throw BatonProtocolError(.nativeMessageField, "a tab message without a url") }
            guard url.utf8.count <= Self.maximumURLBytes else {
                throw BatonProtocolError(.nativeMessageField, "a tab's url of \(url.utf8.count) bytes; at most \(Self.maximumURLBytes) are accepted")
            }
            // Never assume a window is not private: a message that does not say is refused.
            guard let incognito = wire.incognito else {
                throw BatonProtocolError(.nativeMessageField, "a tab message that does not say whether its window is private (incognito)")
            }
            self = .tab(url: url, title: Self.shortened(wire.title ?? ""), incognito: incognito)
        case "none":
            self = .none
        default:
            throw BatonProtocolError(.nativeMessageUnknownType, "a native message of unknown type \"\(wire.type.prefix(64))\" (tab or none)")
        }
    }

    /// The message as JSON (what the extension sends; tests and the fuzzer read it back).
    public var json: Data {
        switch self {
        case .tab(let url, let title, let incognito): NativeMessageJSON.encode(Wire(type: "tab", url: url, title: title, incognito: incognito))
        case .none: NativeMessageJSON.encode(Wire(type: "none"))
        }
    }

    /// `title` cut to at most ``maximumTitleBytes`` UTF-8 bytes, at a character boundary.
    static func shortened(_ title: String) -> String {
        title.prefix(utf8Bytes: maximumTitleBytes)
    }
}

/// What `baton browser-host` tells the browser extension (issue 14).
public enum HostMessage: Sendable, Hashable {
    /// Open this page in a new tab of the focused (last focused) window: a page continued from another device.
    case open(url: String)

    struct Wire: Codable {
        var type: String
        var url: String?
    }

    /// The message as JSON, the body of one native message.
    public var json: Data {
        switch self {
        case .open(let url): NativeMessageJSON.encode(Wire(type: "open", url: url))
        }
    }

    /// Reads one message body (tests; the extension reads these in JavaScript).
    /// - Throws: ``BatonProtocolError`` as ``BrowserMessage/init(json:)`` does.
    public init(json body: Data) throws {
        let wire = try NativeMessageJSON.decode(Wire.self, from: body)
        guard wire.type == "open" else {
            throw BatonProtocolError(.nativeMessageUnknownType, "a host message of unknown type \"\(wire.type.prefix(64))\" (open)")
        }
        guard let url = wire.url else { throw BatonProtocolError(.nativeMessageField, "an open message without a url") }
        self = .open(url: url)
    }
}

/// The JSON of native messages, with the decoder's failures turned into typed errors.
enum NativeMessageJSON {
    static func decode<T: Decodable>(_ type: T.Type, from body: Data) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch let error as DecodingError {
            switch error {
            case .dataCorrupted(let context) where context.codingPath.isEmpty:
                throw BatonProtocolError(.nativeMessageNotJSON, "a native message that is not UTF-8 JSON")
            case .typeMismatch(_, let context) where context.codingPath.isEmpty:
                throw BatonProtocolError(.nativeMessageNotJSON, "a native message that is JSON but not an object")
            case .keyNotFound(let key, _):
                throw BatonProtocolError(.nativeMessageField, "a native message without its \"\(key.stringValue.prefix(64))\" field")
            default:
                throw BatonProtocolError(.nativeMessageField, "a native message with a field of the wrong type")
            }
        } catch {
            throw BatonProtocolError(.nativeMessageNotJSON, "a native message that cannot be read as JSON")
        }
    }

    static func encode<T: Encodable>(_ value: T) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, booleans and optionals only: encoding cannot fail.
        return (try? encoder.encode(value)) ?? Data("{}".utf8)
    }
}

/// Splits a browser's native messaging input into message bodies (issue 14): each message is a 4-byte length in the
/// machine's byte order (little-endian on every Linux machine Baton runs on), then that many bytes of UTF-8 JSON.
///
/// A value, no I/O: append what was read, take whole bodies out, say when the input ended.
public struct NativeMessageReader: Sendable {
    /// The largest message accepted from the browser. The extension sends a URL (at most 8 KiB) and a title (1 KiB
    /// kept): 64 KiB leaves room for JSON escapes, and a length above it means the stream is not what we think.
    public static let maximumIncomingBytes = 64 * 1024
    /// The largest message a host may send to Chromium and Firefox (their documented limit: 1 MB).
    public static let maximumOutgoingBytes = 1024 * 1024

    private var buffer: [UInt8] = []

    /// A reader with nothing read yet.
    public init() {}

    /// Bytes read from the browser.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message body, or nil when more bytes are needed.
    /// - Throws: ``BatonProtocolError`` `nativeMessageSize` for a length of zero or above
    ///   ``maximumIncomingBytes`` (the stream cannot be trusted after that: stop reading).
    public mutating func next() throws -> Data? {
        guard buffer.count >= 4 else { return nil }
        let length = Int(UInt32(buffer[0]) | UInt32(buffer[1]) << 8 | UInt32(buffer[2]) << 16 | UInt32(buffer[3]) << 24)
        guard length > 0, length <= Self.maximumIncomingBytes else {
            throw BatonProtocolError(.nativeMessageSize, "a native message of \(length) bytes; 1 to \(Self.maximumIncomingBytes) are accepted")
        }
        guard buffer.count >= 4 + length else { return nil }
        let body = Data(buffer[4..<(4 + length)])
        buffer.removeSubrange(0..<(4 + length))
        return body
    }

    /// The input ended.
    /// - Throws: ``BatonProtocolError`` `nativeMessageTruncated` when it ended inside a message.
    public func finish() throws {
        guard buffer.isEmpty else {
            throw BatonProtocolError(.nativeMessageTruncated, "the browser's input ended inside a native message (\(buffer.count) bytes of it)")
        }
    }

    /// `body` framed for the browser: its 4-byte little-endian length, then the body.
    /// - Throws: ``BatonProtocolError`` `nativeMessageSize` when it is over ``maximumOutgoingBytes``.
    public static func frame(_ body: Data) throws -> Data {
        guard body.count <= maximumOutgoingBytes else {
            throw BatonProtocolError(.nativeMessageSize, "a message of \(body.count) bytes for the browser; at most \(maximumOutgoingBytes)")
        }
        let length = UInt32(body.count)
        var framed = Data([UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)])
        framed.append(body)
        return framed
    }
}
