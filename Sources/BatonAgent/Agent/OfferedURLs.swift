import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The state an app gave, as it is offered to other devices, without the credentials in its web URLs (issue 25
/// item 7; A5): `https://user:password@host/...` leaves as `https://host/...`. A password an app keeps in its own
/// URL is for its own use on this device; another device (and the browser it may fall back to, E1) gets the page,
/// not the account. The webpage URL, the referrer URL, and every `http`/`https` URL value at any depth of
/// `userInfo` and the content attributes are stripped; text that merely looks like a URL is the app's own business.
enum OfferedURLs {
    /// `data` (an encoded ``ActivityPayload``) with its http(s) URLs' user and password removed; the same bytes when
    /// there were none. A state without an `@` byte has none (a URL's user information ends with one, in ASCII or
    /// UTF-16), so it is not decoded; nor is one whose `@`s are all outside URLs (issue 26 item 5: no URL object,
    /// and webpage and referrer URLs in ASCII without one, read from the bytes: `ActivityPayload.mayHoldURL`).
    static func withoutCredentials(_ data: Data) -> Data {
        let at = UInt8(ascii: "@")
        guard data.contains(at), ActivityPayload.mayHoldURL(with: at, in: data) else { return data }
        return withoutCredentials(decoding: data)
    }

    /// ``withoutCredentials(_:)-(Data)`` by decoding `data`, whatever its bytes hold.
    static func withoutCredentials(decoding data: Data) -> Data {
        guard let payload = try? ActivityPayload(decoding: data), let stripped = strippingCredentials(payload) else { return data }
        // Cannot fail in practice (the payload was decoded from bytes); if it did, nothing is offered rather than
        // a password.
        return (try? stripped.encoded()) ?? Data()
    }

    /// `payload` with its http(s) URLs' user and password removed, or nil when none has any: then nothing was copied
    /// and nothing needs comparing (issue 26 item 5: a 3 KB state rebuilt and compared whole on every fetch was
    /// most of the originating agent's time on a warm continue).
    static func strippingCredentials(_ payload: ActivityPayload) -> ActivityPayload? {
        var payload = payload
        var changed = false
        if let url = payload.webpageURL, let stripped = strippingCredentials(url) {
            changed = true
            // Still http(s) with a host (A5): only the user information went.
            if (try? payload.setWebpageURL(stripped)) == nil { try? payload.setWebpageURL(nil) }
        }
        if let url = payload.referrerURL, let stripped = strippingCredentials(url) {
            changed = true
            payload.referrerURL = stripped
        }
        if case .dictionary(let userInfo)? = strippingCredentials(.dictionary(payload.userInfo)) {
            changed = true
            payload.userInfo = userInfo
        }
        if let attributes = payload.contentAttributeSet, case .dictionary(let stripped)? = strippingCredentials(.dictionary(attributes)) {
            changed = true
            payload.contentAttributeSet = stripped
        }
        return changed ? payload : nil
    }

    /// `value` with every http(s) URL in it (arrays, dictionaries, sets) without user and password, or nil when none
    /// had any. Containers are copied only when something in them changed.
    static func strippingCredentials(_ value: PropertyList) -> PropertyList? {
        switch value {
        case .url(let url):
            return strippingCredentials(url).map(PropertyList.url)
        case .array(let items):
            var result = items
            var changed = false
            for (index, item) in items.enumerated() {
                guard let stripped = strippingCredentials(item) else { continue }
                result[index] = stripped
                changed = true
            }
            return changed ? .array(result) : nil
        case .dictionary(let entries):
            var result = entries
            var changed = false
            for (key, item) in entries {
                guard let stripped = strippingCredentials(item) else { continue }
                result[key] = stripped
                changed = true
            }
            return changed ? .dictionary(result) : nil
        case .set(let items):
            guard items.contains(where: { strippingCredentials($0) != nil }) else { return nil }
            return .set(Set(items.map { strippingCredentials($0) ?? $0 }))
        case .string, .integer, .unsignedInteger, .real, .bool, .data, .date, .null, .uuid:
            return nil
        }
    }

    /// `url` without its user information (``withoutCredentials(_:)-URL``), or nil when it has none to remove.
    static func strippingCredentials(_ url: URL) -> URL? {
        let stripped = withoutCredentials(url)
        return stripped == url ? nil : stripped
    }

    /// `url` without the `user:password@` of its authority when it is http or https; other URLs unchanged
    /// (`mailto:me@host` has no authority to strip).
    static func withoutCredentials(_ url: URL) -> URL {
        let text = url.absoluteString
        guard let schemeEnd = text.range(of: "://") else { return url }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return url }
        let rest = text[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        // The user information is everything up to the authority's last '@' (a password may hold an encoded one).
        guard let at = authority.lastIndex(of: "@") else { return url }
        let stripped = text[..<schemeEnd.upperBound] + rest[rest.index(after: at)...]
        // A URL that no longer parses is not offered with its password: the host alone stands for it.
        return URL(string: String(stripped)) ?? URL(string: text[..<schemeEnd.upperBound] + "invalid") ?? url
    }
}
