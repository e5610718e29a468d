#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether an association file approves an app, and why, in words a person can read.
public struct AssociationApproval: Sendable, Hashable, CustomStringConvertible {
    /// Whether the app is approved (for `applinks`: for that URL).
    public let isApproved: Bool
    /// Why.
    public let reason: String

    public var description: String { "\(isApproved ? "approved" : "not approved"): \(reason)" }
}

extension AppSiteAssociation {
    /// Every app the file names, in any service, sorted.
    public var mentionedAppIDs: [String] {
        let all = activityContinuationApps + webCredentialsApps + appClipsApps + appLinks.flatMap(\.appIDs)
        return Set(all).sorted()
    }

    /// Whether the file approves `appID` (`TEAM.bundle.id`) for `service`. For `applinks` the URL decides too: the
    /// first entry that lists the app applies, and within it the first rule that matches the URL.
    public func approval(of appID: String, for service: AssociatedDomain.Service, url: URL?) -> AssociationApproval {
        func listed(_ apps: [String], _ key: String) -> AssociationApproval {
            apps.contains(appID)
                ? AssociationApproval(isApproved: true, reason: "\(appID) is listed in \(key)")
                : AssociationApproval(isApproved: false, reason: "\(appID) is not among the \(apps.count) apps in \(key)")
        }
        switch service {
        case .activityContinuation: return listed(activityContinuationApps, "activitycontinuation.apps")
        case .webCredentials: return listed(webCredentialsApps, "webcredentials.apps")
        case .appClips: return listed(appClipsApps, "appclips.apps")
        case .other(let name): return AssociationApproval(isApproved: false, reason: "service \(name) is not one Baton knows")
        case .appLinks:
            guard let index = appLinks.firstIndex(where: { $0.appIDs.contains(appID) }) else {
                return AssociationApproval(isApproved: false, reason: "no applinks entry lists \(appID)")
            }
            guard let url else {
                return AssociationApproval(isApproved: true, reason: "applinks.details[\(index)] lists \(appID) (no URL given to match)")
            }
            return Self.cover(url, rules: appLinks[index].rules, entry: index)
        }
    }

    static func cover(_ url: URL, rules: Rules, entry: Int) -> AssociationApproval {
        let parts = URLComponents(url: url, resolvingAgainstBaseURL: false)
        switch rules {
        case .paths(let paths):
            let path = URLPattern.canonicalPercentEncoding(parts.map(\.percentEncodedPath).flatMap { $0.isEmpty ? nil : $0 } ?? "/")
            for (index, rule) in paths.enumerated()
            where URLPattern.matches(URLPattern.canonicalPercentEncoding(rule.pattern), path) {
                let where_ = "applinks.details[\(entry)].paths[\(index)] \"\(rule.excludes ? "NOT " : "")\(rule.pattern)\""
                return AssociationApproval(isApproved: !rule.excludes, reason: "\(where_) \(rule.excludes ? "excludes" : "matches") \(path)")
            }
            return AssociationApproval(isApproved: false, reason: "no pattern of applinks.details[\(entry)].paths matches \(path)")
        case .components(let components):
            for (index, component) in components.enumerated() where matches(component, parts) {
                let note = component.comment.map { " (\($0))" } ?? ""
                return AssociationApproval(
                    isApproved: !component.excludes,
                    reason: "applinks.details[\(entry)].components[\(index)]\(note) \(component.excludes ? "excludes" : "matches") the URL"
                )
            }
            return AssociationApproval(isApproved: false, reason: "no component of applinks.details[\(entry)] matches the URL")
        }
    }

    static func matches(_ rule: ComponentRule, _ parts: URLComponents?) -> Bool {
        func text(encoded: String?, decoded: String?) -> String {
            rule.percentsEncoded ? URLPattern.canonicalPercentEncoding(encoded ?? "") : (decoded ?? "")
        }
        func pattern(_ raw: String) -> String {
            rule.percentsEncoded ? URLPattern.canonicalPercentEncoding(raw) : raw
        }
        if let path = rule.path {
            let encodedPath = parts?.percentEncodedPath ?? ""
            let decodedPath = parts?.path ?? ""
            let subject = text(encoded: encodedPath.isEmpty ? "/" : encodedPath, decoded: decodedPath.isEmpty ? "/" : decodedPath)
            guard URLPattern.matches(pattern(path), subject, caseSensitive: rule.caseSensitive) else { return false }
        }
        switch rule.query {
        case nil:
            break
        case .pattern(let query):
            let subject = text(encoded: parts?.percentEncodedQuery, decoded: parts?.query)
            guard URLPattern.matches(pattern(query), subject, caseSensitive: rule.caseSensitive) else { return false }
        case .items(let items):
            // Each named item must be present with a value the pattern matches (values compared decoded).
            let present = parts?.queryItems ?? []
            for (name, valuePattern) in items {
                let decodedPattern = rule.percentsEncoded ? (valuePattern.percentDecoded ?? valuePattern) : valuePattern
                let found = present.contains { item in
                    item.name == name && URLPattern.matches(decodedPattern, item.value ?? "", caseSensitive: rule.caseSensitive)
                }
                guard found else { return false }
            }
        }
        if let fragment = rule.fragment {
            let subject = text(encoded: parts?.percentEncodedFragment, decoded: parts?.fragment)
            guard URLPattern.matches(pattern(fragment), subject, caseSensitive: rule.caseSensitive) else { return false }
        }
        return true
    }
}
