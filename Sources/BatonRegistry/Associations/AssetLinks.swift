#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A parsed Android `assetlinks.json` (Digital Asset Links): which apps and sites a domain approves, per relation.
/// The Android counterpart of ``AppSiteAssociation``, answered the same way: approved or not, with a reason.
public struct AssetLinks: Sendable, Hashable {
    /// The file's size limit, as for association files.
    public static let maximumSize = AppSiteAssociation.maximumSize

    /// One statement: the relations it grants and to whom.
    public struct Statement: Sendable, Hashable {
        /// Relations such as `delegate_permission/common.handle_all_urls`.
        public var relations: [String]
        /// Who is granted them.
        public var target: Target
    }

    /// The grantee of a statement.
    public enum Target: Sendable, Hashable, CustomStringConvertible {
        /// A web site, by origin (`https://example.com`).
        case web(site: String)
        /// An Android app, by package name and signing-certificate SHA-256 fingerprints.
        case androidApp(packageName: String, fingerprints: [String])
        /// A namespace Baton does not know, kept for display.
        case other(namespace: String)

        public var description: String {
            switch self {
            case .web(let site): "web \(site)"
            case .androidApp(let name, let fingerprints): "android_app \(name) (\(fingerprints.count) certificate fingerprints)"
            case .other(let namespace): namespace
            }
        }
    }

    /// The statements, in file order.
    public var statements: [Statement]

    /// The relation Android uses for app links, the counterpart of `applinks`.
    public static let handleAllURLs = "delegate_permission/common.handle_all_urls"
    /// The relation for shared credentials, the counterpart of `webcredentials`.
    public static let getLoginCredentials = "delegate_permission/common.get_login_creds"

    /// Parses a file's JSON.
    /// - Throws: ``BatonRegistryError`` `associationTooLarge` or `invalidAssociationFile`.
    public init(json data: Data) throws {
        let object = try AppSiteAssociation.parseJSON(data, limit: Self.maximumSize, what: "assetlinks file")
        guard let list = object as? [Any] else {
            throw BatonRegistryError(.invalidAssociationFile, "assetlinks.json should be a JSON array of statements")
        }
        statements = try list.enumerated().map { index, element in
            guard let statement = element as? [String: Any], let target = statement["target"] as? [String: Any],
                let namespace = target["namespace"] as? String
            else {
                throw BatonRegistryError(.invalidAssociationFile, "statement \(index) needs a target with a namespace")
            }
            let relations = try AppSiteAssociation.strings(statement["relation"], "statement \(index) relation")
            switch namespace {
            case "web":
                guard let site = target["site"] as? String else {
                    throw BatonRegistryError(.invalidAssociationFile, "statement \(index): a web target needs a site")
                }
                return Statement(relations: relations, target: .web(site: site))
            case "android_app":
                guard let name = target["package_name"] as? String else {
                    throw BatonRegistryError(.invalidAssociationFile, "statement \(index): an android_app target needs a package_name")
                }
                let prints = try AppSiteAssociation.strings(target["sha256_cert_fingerprints"], "statement \(index) fingerprints")
                return Statement(relations: relations, target: .androidApp(packageName: name, fingerprints: prints))
            default:
                return Statement(relations: relations, target: .other(namespace: namespace))
            }
        }
    }

    /// Whether the file grants `relation` to the Android app `packageName`, signed by the certificate with
    /// `fingerprint` (colon-separated hex, any case) when one is given.
    public func approval(ofAndroidApp packageName: String, fingerprint: String?, relation: String) -> AssociationApproval {
        let wanted = fingerprint.map(Self.normalized)
        for (index, statement) in statements.enumerated() where statement.relations.contains(relation) {
            guard case .androidApp(let name, let prints) = statement.target, name == packageName else { continue }
            if let wanted, !prints.map(Self.normalized).contains(wanted) { continue }
            return AssociationApproval(isApproved: true, reason: "statement \(index) grants \(relation) to \(packageName)")
        }
        return AssociationApproval(isApproved: false, reason: "no statement grants \(relation) to \(packageName)\(fingerprint == nil ? "" : " with that certificate")")
    }

    /// Whether the file grants `relation` to the web site `site` (an origin such as `https://example.com`).
    public func approval(ofSite site: String, relation: String) -> AssociationApproval {
        let wanted = site.lowercased().trimming { $0 == "/" }
        for (index, statement) in statements.enumerated() where statement.relations.contains(relation) {
            if case .web(let granted) = statement.target, granted.lowercased().trimming { $0 == "/" } == wanted {
                return AssociationApproval(isApproved: true, reason: "statement \(index) grants \(relation) to \(site)")
            }
        }
        return AssociationApproval(isApproved: false, reason: "no statement grants \(relation) to \(site)")
    }

    static func normalized(_ fingerprint: String) -> String {
        fingerprint.uppercased().filter { $0 != ":" }
    }
}
