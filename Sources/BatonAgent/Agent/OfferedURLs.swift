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
    /// UTF-16), so it is not decoded.
    static func withoutCredentials(_ data: Data) -> Data {
        guard data.contains(UInt8(ascii: "@")), let payload = try? ActivityPayload(decoding: data) else { return data }
        let stripped = withoutCredentials(payload)
        guard stripped != payload else { return data }
        // Cannot fail in practice (the payload was decoded from bytes); if it did, nothing is offered rather than
        // a password.
        return (try? stripped.encoded()) ?? Data()
    }

    /// `payload` with its http(s) URLs' user and password removed.
    static func withoutCredentials(_ payload: ActivityPayload) -> ActivityPayload {
        var payload = payload
        if let url = payload.webpageURL {
            let stripped = withoutCredentials(url)
            // Still http(s) with a host (A5): only the user information went.
            if stripped != url, (try? payload.setWebpageURL(stripped)) == nil { try? payload.setWebpageURL(nil) }
        }
        payload.referrerURL = payload.referrerURL.map(withoutCredentials)
        payload.userInfo = payload.userInfo.mapValues(withoutCredentials)
        payload.contentAttributeSet = payload.contentAttributeSet?.mapValues(withoutCredentials)
        return payload
    }

    /// `value` with every http(s) URL in it (arrays, dictionaries, sets) without user and password.
    static func withoutCredentials(_ value: PropertyList) -> PropertyList {
        switch value {
        case .url(let url): .url(withoutCredentials(url))
        case .array(let items): .array(items.map(withoutCredentials))
        case .dictionary(let entries): .dictionary(entries.mapValues(withoutCredentials))
        case .set(let items): .set(Set(items.map(withoutCredentials)))
        case .string, .integer, .unsignedInteger, .real, .bool, .data, .date, .null, .uuid: value
        }
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
