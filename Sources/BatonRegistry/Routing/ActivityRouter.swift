#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the router is asked: an activity offered by another device.
public struct RouteRequest: Sendable, Hashable {
    /// The activity type.
    public var activityType: String
    /// The team of the app that created the activity (SEMANTICS D1, D3).
    public var teamIdentifier: String?
    /// The activity's webpage URL, if any (SEMANTICS E1, E3).
    public var webpageURL: URL?
    /// The activity's title; shown, not used for the choice (see docs/ARCHITECTURE.md).
    public var title: String?
    /// The bundle identifier of the app that created it: the same app here is preferred over other claimants.
    public var originBundleIdentifier: String?
    /// The activity has a team, but it is not known here because no app here claims the type for it: an advert
    /// names its team and type only as a keyed hash (D1, D3), and that hash named no app here. Without a
    /// ``teamIdentifier`` the reason then says so, rather than that the activity names no team (issue 24 part 7).
    public var teamMatchedNoApp: Bool

    /// A request; only the type is required.
    public init(
        activityType: String,
        teamIdentifier: String? = nil,
        webpageURL: URL? = nil,
        title: String? = nil,
        originBundleIdentifier: String? = nil,
        teamMatchedNoApp: Bool = false
    ) {
        self.activityType = activityType
        self.teamIdentifier = teamIdentifier
        self.webpageURL = webpageURL
        self.title = title
        self.originBundleIdentifier = originBundleIdentifier
        self.teamMatchedNoApp = teamMatchedNoApp
    }
}

/// Where an activity goes, and why, in words a person can read.
public struct RouteDecision: Sendable, Hashable, CustomStringConvertible {
    /// The destination.
    public enum Target: Sendable, Hashable {
        /// Continue in this app.
        case app(bundleIdentifier: String)
        /// Open the URL in this browser app, or in the system's default browser when `nil` (SEMANTICS E1).
        case browser(bundleIdentifier: String?, url: URL)
        /// Nothing on this device can continue it.
        case nothing
    }

    /// The destination.
    public let target: Target
    /// Why, naming the requirement that decided.
    public let reason: String
    /// The activity type the app receives: `NSUserActivityTypeBrowsingWeb` when a web page goes to an app (E3).
    public let deliveredActivityType: String?
    /// Whether the app receives an empty `userInfo` (web to app, SEMANTICS E3).
    public let emptiesUserInfo: Bool

    public var description: String {
        switch target {
        case .app(let identifier): "app \(identifier): \(reason)"
        case .browser(let identifier, let url): "browser \(identifier ?? "(system default)") at \(url.absoluteString): \(reason)"
        case .nothing: "nothing: \(reason)"
        }
    }
}

/// The association files the agent has fetched and verified, by domain (SEMANTICS E4: cached, not fetched per
/// continuation).
public struct DomainApprovals: Sendable {
    /// Parsed files by lowercased domain.
    public var associations: [String: AppSiteAssociation]

    /// Why there is no usable file for a domain, by lowercased domain (it expired and the last fetch failed, or no
    /// fetch succeeded yet): the router's reason quotes it (E4).
    public var unavailable: [String: String]

    /// Approvals from these files; `unavailable` says why other domains have none.
    public init(_ associations: [String: AppSiteAssociation] = [:], unavailable: [String: String] = [:]) {
        self.associations = Dictionary(associations.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.unavailable = Dictionary(unavailable.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
    }
}

/// Decides which app on this device continues an activity (SEMANTICS D1–D4, E1–E4).
///
/// The choice, in order:
/// 1. `NSUserActivityTypeBrowsingWeb` with a URL: an app whose associated domain (`activitycontinuation:` or
///    `applinks:`) matches the host, most specific entry first, and which that domain's association file approves,
///    receives it with an empty `userInfo` (E3, E4). Otherwise the default browser app receives it if it claims the
///    type (E2); otherwise the URL opens in the system's browser.
/// 2. Any other type: apps with the same team that claim the type, in `NSUserActivityTypes` or as a document type's
///    activity type (D1, D3, B5), whether bundles or desktop files (`X-Baton-ActivityTypes`,
///    `X-Baton-DocumentActivityType`; issue 28 item 2): one team's apps of both kinds continue each other's types.
///    Among several: the app that created the activity, then apps naming the type among their activity types, then
///    registry order (bundles before desktop files; each in search-path order, user before system).
/// 3. No such app and a webpage URL: the browser at that URL (E1). Otherwise nothing.
///
/// Building the router indexes the registry; a decision is a hash lookup (about a microsecond; `baton bench route`).
public struct ActivityRouter: Sendable {
    struct TeamType: Hashable {
        let team: String
        let type: String
    }

    struct DomainClaim {
        let app: Int
        let domain: AssociatedDomain
    }

    let apps: [AppRecord]
    let approvals: DomainApprovals
    /// The default browser app, resolved when the router is built.
    let defaultBrowser: AppRecord?
    /// Candidate app indices per (team, type), in precedence order without the origin rule.
    let byTeamAndType: [TeamType: [Int]]
    /// Exact-host domain claims, and wildcard claims by their base domain.
    let exactHosts: [String: [DomainClaim]]
    let wildcardBases: [String: [DomainClaim]]

    /// A router over `registry`'s apps. `defaultBrowser` is the bundle identifier of the person's default browser
    /// app, if it is a registered app; otherwise URLs open in the system's browser.
    public init(registry: AppRegistry, approvals: DomainApprovals = DomainApprovals(), defaultBrowser: String? = nil) {
        let apps = registry.apps
        self.apps = apps
        self.approvals = approvals
        self.defaultBrowser = defaultBrowser.flatMap { identifier in apps.first { $0.bundleIdentifier == identifier } }
        var index: [TeamType: [Int]] = [:]
        var exact: [String: [DomainClaim]] = [:]
        var wildcard: [String: [DomainClaim]] = [:]
        for (position, app) in apps.enumerated() where app.isIdentityResolved {
            guard let team = app.teamIdentifier else { continue }
            for type in app.claimedActivityTypes {
                index[TeamType(team: team, type: type), default: []].append(position)
            }
            for domain in app.associatedDomains {
                switch domain.service {
                case .activityContinuation, .appLinks:
                    let claim = DomainClaim(app: position, domain: domain)
                    if domain.isWildcard { wildcard[domain.host, default: []].append(claim) } else { exact[domain.host, default: []].append(claim) }
                default:
                    continue
                }
            }
        }
        // Apps naming the type in NSUserActivityTypes first, then registry order (the enumeration order above).
        for (key, candidates) in index {
            index[key] = candidates.sorted { left, right in
                let leftExplicit = apps[left].activityTypes.contains(key.type)
                let rightExplicit = apps[right].activityTypes.contains(key.type)
                return leftExplicit != rightExplicit ? leftExplicit : left < right
            }
        }
        byTeamAndType = index
        exactHosts = exact
        wildcardBases = wildcard
    }

    /// Decides where `request` goes.
    public func route(_ request: RouteRequest) -> RouteDecision {
        if request.activityType == AppRecord.browsingWebActivityType {
            return routeWebPage(request)
        }
        guard let team = request.teamIdentifier, !team.isEmpty else {
            if request.teamMatchedNoApp {
                return fallback(request, why: "no app here claims \(request.activityType) for the team of the app that made it (D1, D3)")
            }
            return fallback(request, why: "the activity names no team, and apps continue only their own team's activities (D3)")
        }
        guard let candidates = byTeamAndType[TeamType(team: team, type: request.activityType)], let first = candidates.first else {
            return fallback(request, why: "no app of team \(team) claims \(request.activityType) (D1)")
        }
        var chosen = first
        var rule = candidates.count == 1 ? "the only app of team \(team) claiming it" : "first in search-path order"
        if let origin = request.originBundleIdentifier, let same = candidates.first(where: { apps[$0].bundleIdentifier == origin }) {
            chosen = same
            rule = candidates.count == 1 ? rule : "the same app created it"
        } else if candidates.count > 1, apps[first].activityTypes.contains(request.activityType),
            !apps[candidates[1]].activityTypes.contains(request.activityType)
        {
            rule = "it names the type among its activity types; the others claim it through a document type"
        }
        let app = apps[chosen]
        // A desktop-file app (issue 28 item 2) names its types in X-Baton-ActivityTypes: the same claim under its key.
        let typesKey = app.kind == .desktopFile ? "X-Baton-ActivityTypes" : "NSUserActivityTypes"
        let how = app.activityTypes.contains(request.activityType) ? typesKey : "a document type (B5)"
        var reason = "team \(team) claims \(request.activityType) in \(how) (D1); \(rule)"
        if candidates.count > 1 {
            let others = candidates.filter { $0 != chosen }.map { apps[$0].bundleIdentifier }
            reason += "; also claimed by \(others.joined(separator: ", "))"
        }
        return RouteDecision(target: .app(bundleIdentifier: app.bundleIdentifier), reason: reason, deliveredActivityType: request.activityType, emptiesUserInfo: false)
    }

    /// E2, E3, E4: a web page.
    func routeWebPage(_ request: RouteRequest) -> RouteDecision {
        guard let url = request.webpageURL, let host = url.host?.lowercased(), !host.isEmpty else {
            return RouteDecision(target: .nothing, reason: "a web-page activity without a webpage URL", deliveredActivityType: nil, emptiesUserInfo: false)
        }
        var refusals: [String] = []
        for claim in claims(for: host) {
            let app = apps[claim.app]
            guard let appID = app.applicationIdentifier else { continue }
            guard let association = approvals.associations[claim.domain.approvingDomain] else {
                let why = approvals.unavailable[claim.domain.approvingDomain].map { ": \($0)" } ?? ""
                refusals.append("\(app.bundleIdentifier) claims \(claim.domain), but no association file for \(claim.domain.approvingDomain) is cached (E4)\(why)")
                continue
            }
            let approval = association.approval(of: appID, for: claim.domain.service, url: url)
            guard approval.isApproved else {
                refusals.append("\(app.bundleIdentifier) claims \(claim.domain), but \(claim.domain.approvingDomain) does not approve it: \(approval.reason)")
                continue
            }
            return RouteDecision(
                target: .app(bundleIdentifier: app.bundleIdentifier),
                reason: "\(app.bundleIdentifier) claims \(claim.domain) and \(claim.domain.approvingDomain) approves it (\(approval.reason)) (E3, E4)",
                deliveredActivityType: AppRecord.browsingWebActivityType,
                emptiesUserInfo: true
            )
        }
        let why = refusals.isEmpty ? "no app claims \(host) (E3)" : refusals.joined(separator: "; ")
        if let browser = defaultBrowser, browser.isBrowser {
            return RouteDecision(
                target: .app(bundleIdentifier: browser.bundleIdentifier),
                reason: "\(why); the default browser \(browser.bundleIdentifier) claims \(AppRecord.browsingWebActivityType) (E2)",
                deliveredActivityType: AppRecord.browsingWebActivityType,
                emptiesUserInfo: false
            )
        }
        return RouteDecision(target: .browser(bundleIdentifier: nil, url: url), reason: "\(why); opening the page in the system's browser", deliveredActivityType: nil, emptiesUserInfo: false)
    }

    /// Domain claims matching `host`, most specific first (exact, then the longest wildcard base), then registry order.
    func claims(for host: String) -> [DomainClaim] {
        var found = exactHosts[host] ?? []
        var suffix = Substring(host)
        while let dot = suffix.firstIndex(of: ".") {
            suffix = suffix[suffix.index(after: dot)...]
            if let wildcard = wildcardBases[String(suffix)] { found += wildcard }
        }
        return found
    }

    /// E1: no app continues it; a webpage URL opens in the browser.
    func fallback(_ request: RouteRequest, why: String) -> RouteDecision {
        guard let url = request.webpageURL else {
            return RouteDecision(target: .nothing, reason: "\(why), and it has no webpage URL (E1)", deliveredActivityType: nil, emptiesUserInfo: false)
        }
        let browser = defaultBrowser
        return RouteDecision(
            target: .browser(bundleIdentifier: browser?.bundleIdentifier, url: url),
            reason: "\(why); its webpage URL opens in \(browser.map { "the default browser \($0.bundleIdentifier)" } ?? "the system's browser") (E1)",
            deliveredActivityType: nil,
            emptiesUserInfo: false
        )
    }
}
