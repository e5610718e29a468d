import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A parsed `apple-app-site-association` file: which apps a domain approves, per service (SEMANTICS E4).
///
/// Reads every form in use: the 2014 `activitycontinuation.apps` list, `webcredentials` and `appclips` lists,
/// `applinks` with `details` as an array of `{appID, paths}` (paths with `NOT ` exclusions) or of
/// `{appIDs, components}` (`/`, `?` as a pattern or per-key patterns, `#`, `exclude`, `caseSensitive`,
/// `percentsEncoded`, applinks-wide `defaults`), and the early dictionary form `details: {appID: {paths}}`.
/// Order is significant: within an entry the first rule that matches decides.
public struct AppSiteAssociation: Sendable, Hashable {
    /// Apple's limit on the size of an association file; larger ones are refused.
    public static let maximumSize = 128 * 1024

    /// Apps approved for Handoff with this domain's pages (SEMANTICS E4).
    public var activityContinuationApps: [String]
    /// Apps approved for shared web credentials.
    public var webCredentialsApps: [String]
    /// App Clips approved for the domain.
    public var appClipsApps: [String]
    /// Universal-link entries, in file order.
    public var appLinks: [AppLinksEntry]
    /// Things in the file Baton does not act on (substitution variables, unknown keys of a component), for display.
    public var notes: [String]

    /// One `applinks.details` entry.
    public struct AppLinksEntry: Sendable, Hashable {
        /// The apps the entry is for (`TEAM.bundle.id`).
        public var appIDs: [String]
        /// The entry's rules, in order.
        public var rules: Rules
    }

    /// How an `applinks` entry says which URLs it covers.
    public enum Rules: Sendable, Hashable {
        /// The older `paths` list: patterns on the URL path, `NOT ` excluding.
        case paths([PathRule])
        /// The newer `components` list.
        case components([ComponentRule])
    }

    /// One entry of a `paths` list.
    public struct PathRule: Sendable, Hashable {
        /// The pattern, without its `NOT ` prefix.
        public var pattern: String
        /// Whether the entry was `NOT pattern`: a match means the URL is not covered.
        public var excludes: Bool
    }

    /// One entry of a `components` list. A field left out matches anything.
    public struct ComponentRule: Sendable, Hashable {
        /// The `/` pattern, on the URL's path.
        public var path: String?
        /// The `?` rule, on the URL's query.
        public var query: QueryRule?
        /// The `#` pattern, on the URL's fragment.
        public var fragment: String?
        /// Whether a match means the URL is not covered.
        public var excludes: Bool
        /// Whether patterns compare case-sensitively (default true).
        public var caseSensitive: Bool
        /// Whether patterns are written percent-encoded (default true).
        public var percentsEncoded: Bool
        /// The rule's `comment`, for display.
        public var comment: String?
    }

    /// The `?` of a component: one pattern for the whole query, or a pattern per query item.
    public enum QueryRule: Sendable, Hashable {
        case pattern(String)
        case items([String: String])
    }

    /// Parses a file's JSON.
    /// - Throws: ``BatonRegistryError`` `associationTooLarge` above ``maximumSize``, `invalidAssociationFile` when
    ///   the JSON is malformed or a service has the wrong shape.
    public init(json data: Data) throws {
        let object = try Self.parseJSON(data, limit: Self.maximumSize, what: "association file")
        guard let top = object as? [String: Any] else {
            throw BatonRegistryError(.invalidAssociationFile, "the top level is not a JSON object")
        }
        var notes: [String] = []
        activityContinuationApps = try Self.appList(top, service: "activitycontinuation")
        webCredentialsApps = try Self.appList(top, service: "webcredentials")
        appClipsApps = try Self.appList(top, service: "appclips")
        appLinks = try Self.appLinks(top["applinks"], notes: &notes)
        self.notes = notes
    }

    /// Parses JSON after checking its size, turning every failure into a typed error.
    static func parseJSON(_ data: Data, limit: Int, what: String) throws -> Any {
        guard data.count <= limit else {
            throw BatonRegistryError(.associationTooLarge, "\(what) is \(data.count) bytes, the limit is \(limit)")
        }
        do {
            return try JSONDecoder().decode(JSONTree.self, from: data).anyValue
        } catch {
            throw BatonRegistryError(.invalidAssociationFile, "not valid JSON: \(error)")
        }
    }

    static func invalid(_ message: String) -> BatonRegistryError {
        BatonRegistryError(.invalidAssociationFile, message)
    }

    static func strings(_ value: Any?, _ what: String) throws -> [String] {
        guard let value else { return [] }
        guard let list = value as? [Any] else { throw invalid("\(what) should be an array of strings") }
        return try list.map { element in
            guard let text = element as? String else { throw invalid("\(what) holds a non-string element") }
            return text
        }
    }

    static func appList(_ top: [String: Any], service: String) throws -> [String] {
        guard let value = top[service] else { return [] }
        guard let dictionary = value as? [String: Any] else { throw invalid("\"\(service)\" should be an object") }
        return try strings(dictionary["apps"], "\"\(service).apps\"")
    }

    static func appLinks(_ value: Any?, notes: inout [String]) throws -> [AppLinksEntry] {
        guard let value else { return [] }
        guard let applinks = value as? [String: Any] else { throw invalid("\"applinks\" should be an object") }
        if applinks["substitutionVariables"] != nil {
            notes.append("applinks.substitutionVariables is not supported: patterns using $(...) match literally")
        }
        let defaults = applinks["defaults"] as? [String: Any] ?? [:]
        guard let details = applinks["details"] else { return [] }
        if let byAppID = details as? [String: Any] {
            // The earliest form: {"TEAM.bundle": {"paths": [...]}}.
            return try byAppID.keys.sorted().map { appID in
                guard let entry = byAppID[appID] as? [String: Any] else { throw invalid("applinks.details \(BatonCoreError.quoted(appID)) should be an object") }
                return AppLinksEntry(appIDs: [appID], rules: try rules(entry, defaults: defaults, notes: &notes))
            }
        }
        guard let list = details as? [Any] else { throw invalid("\"applinks.details\" should be an array") }
        return try list.enumerated().map { index, element in
            guard let entry = element as? [String: Any] else { throw invalid("applinks.details[\(index)] should be an object") }
            var appIDs = try strings(entry["appIDs"], "applinks.details[\(index)].appIDs")
            if let single = entry["appID"] {
                guard let text = single as? String else { throw invalid("applinks.details[\(index)].appID should be a string") }
                appIDs.append(text)
            }
            return AppLinksEntry(appIDs: appIDs, rules: try rules(entry, defaults: defaults, notes: &notes))
        }
    }

    static func rules(_ entry: [String: Any], defaults: [String: Any], notes: inout [String]) throws -> Rules {
        if let components = entry["components"] {
            guard let list = components as? [Any] else { throw invalid("\"components\" should be an array") }
            return .components(try list.map { try component($0, defaults: defaults, notes: &notes) })
        }
        return .paths(try strings(entry["paths"], "\"paths\"").map { path in
            path.hasPrefix("NOT ") ? PathRule(pattern: String(path.dropFirst(4)), excludes: true) : PathRule(pattern: path, excludes: false)
        })
    }

    static func component(_ value: Any, defaults: [String: Any], notes: inout [String]) throws -> ComponentRule {
        guard let fields = value as? [String: Any] else { throw invalid("a component should be an object") }
        func pattern(_ key: String) throws -> String? {
            guard let value = fields[key] else { return nil }
            guard let text = value as? String else { throw invalid("component \"\(key)\" should be a string") }
            return text
        }
        func flag(_ key: String, default fallback: Bool) throws -> Bool {
            guard let value = fields[key] ?? defaults[key] else { return fallback }
            guard let flag = value as? Bool else { throw invalid("component \"\(key)\" should be true or false") }
            return flag
        }
        var query: QueryRule?
        if let value = fields["?"] {
            if let text = value as? String {
                query = .pattern(text)
            } else if let items = value as? [String: Any] {
                var patterns: [String: String] = [:]
                for (key, item) in items {
                    guard let text = item as? String else { throw invalid("component \"?\" item \(BatonCoreError.quoted(key)) should be a string") }
                    patterns[key] = text
                }
                query = .items(patterns)
            } else {
                throw invalid("component \"?\" should be a string or an object")
            }
        }
        let known: Set<String> = ["/", "?", "#", "exclude", "caseSensitive", "percentsEncoded", "comment"]
        for key in fields.keys.sorted() where !known.contains(key) {
            notes.append("component key \(BatonCoreError.quoted(key)) is not understood and was ignored")
        }
        return ComponentRule(
            path: try pattern("/"),
            query: query,
            fragment: try pattern("#"),
            excludes: try flag("exclude", default: false),
            caseSensitive: try flag("caseSensitive", default: true),
            percentsEncoded: try flag("percentsEncoded", default: true),
            comment: try pattern("comment")
        )
    }
}
