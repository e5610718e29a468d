/// One entry of an app's associated-domains entitlement: `service:domain`, as in `activitycontinuation:example.com`
/// or `applinks:*.example.com?mode=developer` (SEMANTICS E3).
public struct AssociatedDomain: Sendable, Hashable, CustomStringConvertible {
    /// The service an entry is for.
    public enum Service: Sendable, Hashable, CustomStringConvertible {
        /// Handoff between the app and the domain's web pages.
        case activityContinuation
        /// Universal links.
        case appLinks
        /// Shared web credentials.
        case webCredentials
        /// App Clips.
        case appClips
        /// A service Baton does not act on, kept so it can be shown.
        case other(String)

        init(_ name: String) {
            switch name {
            case "activitycontinuation": self = .activityContinuation
            case "applinks": self = .appLinks
            case "webcredentials": self = .webCredentials
            case "appclips": self = .appClips
            default: self = .other(name)
            }
        }

        /// The service's name as entitlements and association files spell it.
        public var description: String {
            switch self {
            case .activityContinuation: "activitycontinuation"
            case .appLinks: "applinks"
            case .webCredentials: "webcredentials"
            case .appClips: "appclips"
            case .other(let name): name
            }
        }
    }

    /// The service.
    public let service: Service
    /// The domain, lowercased, without the `*.` of a wildcard entry.
    public let host: String
    /// Whether the entry was `*.host`: it then matches every subdomain of `host` (at any depth), not `host` itself.
    public let isWildcard: Bool
    /// A port given as `host:port`, if any.
    public let port: Int?
    /// The `?mode=` of the entry (`developer`, `managed`), if any.
    public let mode: String?

    /// Parses an entitlement entry. Returns `nil` for entries that are not `service:domain`.
    public init?(_ entry: String) {
        guard let colon = entry.firstIndex(of: ":") else { return nil }
        let serviceName = entry[..<colon]
        var rest = entry[entry.index(after: colon)...]
        guard !serviceName.isEmpty, !rest.isEmpty else { return nil }
        var mode: String?
        if let question = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: question)...]
            if query.hasPrefix("mode=") { mode = String(query.dropFirst(5)) }
            rest = rest[..<question]
        }
        var port: Int?
        if let portColon = rest.lastIndex(of: ":") {
            guard let number = Int(rest[rest.index(after: portColon)...]), (1...65_535).contains(number) else { return nil }
            port = number
            rest = rest[..<portColon]
        }
        var wildcard = false
        if rest.hasPrefix("*.") {
            wildcard = true
            rest = rest.dropFirst(2)
        }
        let host = rest.lowercased()
        let allowed = host.unicodeScalars.allSatisfy {
            ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".") && $0 != " "
        }
        // 253 bytes is the longest name DNS can carry; a longer "host" is no domain at all.
        guard !host.isEmpty, host.utf8.count <= 253, allowed, !host.hasPrefix("."), !host.hasSuffix("."), !host.contains("..") else {
            return nil
        }
        self.service = Service(String(serviceName))
        self.host = host
        self.isWildcard = wildcard
        self.port = port
        self.mode = mode
    }

    /// How well this entry matches `candidate` (a URL's host): `nil` when it does not, otherwise the number of
    /// characters matched, so that the longest (most specific) entry can win, as Apple's matching does.
    public func matchLength(host candidate: String) -> Int? {
        let candidate = candidate.lowercased()
        if isWildcard {
            return candidate.hasSuffix("." + host) ? host.count + 1 : nil
        }
        return candidate == host ? host.count + 2 : nil
    }

    /// The domain whose association file approves this entry: the host itself, also for a wildcard entry.
    public var approvingDomain: String { host }

    public var description: String {
        "\(service):\(isWildcard ? "*." : "")\(host)\(port.map { ":\($0)" } ?? "")\(mode.map { "?mode=\($0)" } ?? "")"
    }
}
