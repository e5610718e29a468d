import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOHTTP1

/// Fetches and verifies a domain's `apple-app-site-association` file over HTTPS (SEMANTICS E4).
///
/// Tries `https://DOMAIN/.well-known/apple-app-site-association`, then `https://DOMAIN/apple-app-site-association`
/// when the first answers with an HTTP status other than 2xx (404 above all: older sites keep the file at the root).
/// A connection, TLS, timeout or size failure is not retried at the second path: it is the same server, and it
/// would fail the same way, twice as slowly. A redirect is refused (Apple's rule), whichever path sends it. A file
/// starting with a DER SEQUENCE is the 2014 CMS-signed form: its signature and certificate (valid for DOMAIN,
/// chaining to the system's roots or the extra ones) are checked, and the JSON inside it is what is kept.
public struct AssociationFetcher: Sendable {
    /// The two places a file may be, in the order they are tried.
    public static let paths = ["/.well-known/apple-app-site-association", "/apple-app-site-association"]
    /// Where the system's CA bundle may be, for checking signed files (TLS uses swift-nio-ssl's own default).
    static let systemBundles = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]

    /// A verified file.
    public struct Fetched: Sendable {
        /// The URL it came from.
        public var url: String
        /// The JSON (for a signed file, its content once verified).
        public var json: Data
        /// The parsed file.
        public var association: AppSiteAssociation
        /// Whether it was CMS-signed.
        public var signed: Bool
        /// The `Cache-Control: max-age` the server gave, in seconds, if any (`no-cache`/`no-store` count as 0).
        public var maxAge: Int?
    }

    /// The HTTP client, with its trust roots, timeouts and cap.
    public var client: HTTPSClient
    /// Where to connect for some domains instead of resolving them.
    public var resolve: [ResolveRule]
    /// The extra PEM files of trusted roots (also trusted for signed files).
    public var extraRootFiles: [String]

    /// A fetcher trusting the system's roots and those in `extraRootFiles`.
    /// - Throws: ``AssociationFetchError`` `untrusted` when a file cannot be read.
    public init(
        extraRootFiles: [String] = [],
        resolve: [ResolveRule] = [],
        connectTimeout: Duration = .seconds(5),
        totalTimeout: Duration = .seconds(10)
    ) throws {
        client = try HTTPSClient(
            extraRootFiles: extraRootFiles,
            connectTimeout: connectTimeout,
            totalTimeout: totalTimeout,
            maximumSize: SignedAssociationVerifier.maximumSize
        )
        self.resolve = resolve
        self.extraRootFiles = extraRootFiles
    }

    /// The PEM files named by `BATON_CACERT`: one file, or several separated by colons.
    public static func rootFiles(environment: [String: String]) -> [String] {
        (environment["BATON_CACERT"] ?? "").split(separator: ":").map(String.init)
    }

    /// Fetches, verifies and parses `domain`'s file.
    /// - Throws: ``AssociationFetchError`` with a code for each kind of failure.
    public func fetch(_ domain: String, now: Date = Date()) async throws -> Fetched {
        let domain = domain.lowercased()
        let rule = resolve.first { $0.domain == domain }
        if rule == nil, let tld = Self.reservedTLD(of: domain) {
            throw AssociationFetchError(
                .reservedName,
                "\(domain) is under .\(tld), reserved by RFC 6761: it names no real site and is never looked up; to fetch it from a test server, name it with --resolve \(domain):PORT:ADDRESS"
            )
        }
        var firstFailure: AssociationFetchError?
        for path in Self.paths {
            let request = HTTPSClient.Request(host: domain, path: path, connectTo: rule.map { ($0.address, $0.port) })
            let response = try await client.get(request)
            switch response.status {
            case 200..<300:
                return try await verify(response, url: request.url, domain: domain, now: now)
            case 300..<400:
                let location = response.headers.first(name: "location").map { " to \($0)" } ?? ""
                throw AssociationFetchError(
                    .redirected,
                    "\(request.url) redirects\(location) (HTTP \(response.status)); association files are never redirected (Apple's rule): serve the file at this URL itself"
                )
            default:
                let failure = AssociationFetchError(.httpStatus, "\(request.url) answered HTTP \(response.status)")
                guard let first = firstFailure else {
                    firstFailure = failure
                    continue
                }
                throw AssociationFetchError(.httpStatus, "\(first.message), and \(failure.message); serve the file at \(Self.paths[0])")
            }
        }
        throw firstFailure ?? AssociationFetchError(.httpStatus, "no file at https://\(domain)")
    }

    func verify(_ response: HTTPSClient.Response, url: String, domain: String, now: Date) async throws -> Fetched {
        var json = Data(response.body.readableBytesView)
        let signed = SignedAssociationVerifier.isSigned(json)
        if signed {
            do {
                json = try await SignedAssociationVerifier(trustRootsPEM: try trustRootsPEM()).verify(json, domain: domain, now: now)
            } catch let error as BatonRegistryError {
                throw AssociationFetchError(.badSignature, "\(url) is CMS-signed, and the signature does not verify: \(error)")
            }
        }
        let association: AppSiteAssociation
        do {
            association = try AppSiteAssociation(json: json)
        } catch let error as BatonRegistryError {
            let code: AssociationFetchError.Code = error.code == .associationTooLarge ? .tooLarge : .malformed
            throw AssociationFetchError(code, "\(url) is not a usable association file: \(error)")
        }
        return Fetched(url: url, json: json, association: association, signed: signed, maxAge: Self.maxAge(response.headers))
    }

    /// The top-level domains RFC 6761 reserves: names under them are made up (documentation, tests, the local
    /// host), so no resolver should be asked for them (SEMANTICS E4 fetches real sites only).
    public static let reservedTLDs: Set<String> = ["example", "test", "invalid", "localhost"]

    /// The reserved TLD `domain` is under (or is), or nil; a trailing dot is the same name.
    public static func reservedTLD(of domain: String) -> String? {
        var name = Substring(domain.lowercased())
        if name.hasSuffix(".") { name = name.dropLast() }
        guard let last = name.split(separator: ".", omittingEmptySubsequences: false).last, reservedTLDs.contains(String(last)) else { return nil }
        return String(last)
    }

    /// The system's CA bundle and the extra roots, as one PEM text.
    func trustRootsPEM() throws -> String {
        var pem = ""
        if let bundle = Self.systemBundles.lazy.compactMap({ FileManager.default.contents(atPath: $0) }).first {
            pem += String(decoding: bundle, as: UTF8.self)
        }
        for file in extraRootFiles {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw AssociationFetchError(.untrusted, "\(file): cannot read the extra trust roots")
            }
            pem += "\n" + String(decoding: data, as: UTF8.self)
        }
        return pem
    }

    /// `Cache-Control: max-age=N` in seconds; 0 for `no-cache` or `no-store`; nil without either.
    static func maxAge(_ headers: HTTPHeaders) -> Int? {
        var found: Int?
        for directive in headers[canonicalForm: "cache-control"] {
            let text = String(directive.lowercased().drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
            if text == "no-cache" || text == "no-store" { return 0 }
            if text.hasPrefix("max-age="), let seconds = Int(text.dropFirst("max-age=".count)), seconds >= 0 { found = seconds }
        }
        return found
    }
}
