import ArgumentParser
import BatonAgent
import BatonAssociations
import BatonAgentCommand
import BatonRegistry
import Foundation

/// `baton aasa fetch` and `baton aasa status` (issue 14 part 2): the agent's association files, by hand.
extension AasaCommand {
    struct Fetch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch a domain's apple-app-site-association file over HTTPS, verify it, cache it, and say what it approves.",
            discussion: """
                Tries https://DOMAIN/.well-known/apple-app-site-association, then https://DOMAIN/apple-app-site-association \
                when the first answers 404 (or another status that is not 2xx). Redirects are refused (Apple's rule), the \
                file may be at most 128 KiB (192 KiB signed), and the server's certificate must be valid for DOMAIN and \
                chain to the system's roots or a --cacert. A CMS-signed file (the 2014 form) is verified too. The result \
                goes to the cache in the state folder, which a running agent picks up at once. Exits 1 with the error's \
                code (connectFailed, untrusted, tlsFailed, timedOut, redirected, tooLarge, httpStatus, badSignature, \
                malformed, reservedName) when the file cannot be had. Names under the TLDs RFC 6761 reserves (.example, \
                .test, .invalid, .localhost) are never looked up: reach a test server for one with --resolve.
                """
        )

        @Argument(help: "The domain, as an app's associated domain names it (example.com).")
        var domain: String

        @Option(
            name: .customLong("resolve"),
            help: ArgumentHelp("Connect to ADDRESS:PORT for DOMAIN, the certificate still checked for DOMAIN (curl's --connect-to); repeatable.", valueName: "domain:port:address")
        )
        var resolve: [ResolveRule] = []

        @Option(name: .customLong("cacert"), help: ArgumentHelp("A PEM file of CA certificates trusted beside the system's; repeatable. BATON_CACERT adds more.", valueName: "file"))
        var caCertificates: [String] = []

        @Option(help: "Seconds the whole fetch may take.")
        var timeout = 10.0

        @OptionGroup var state: StateOptions

        @Flag(help: "Print JSON.")
        var json = false

        func validate() throws {
            guard AssociationCache.isStorable(domain.lowercased()) else { throw ValidationError("\"\(domain)\" is not a domain name.") }
            guard (0.1...300).contains(timeout) else { throw ValidationError("--timeout must be between 0.1 and 300 seconds.") }
        }

        func run() async throws {
            let domain = domain.lowercased()
            let policy = AssociationPolicy()
            let cache = AssociationCache(stateFolder: state.store.folder)
            let result: Result<AssociationFetcher.Fetched, AssociationFetchError>
            do {
                let fetcher = try AssociationFetcher(
                    extraRootFiles: caCertificates + AssociationFetcher.rootFiles(environment: ProcessInfo.processInfo.environment),
                    resolve: resolve,
                    connectTimeout: .milliseconds(Int64(min(timeout, 5) * 1000)),
                    totalTimeout: .milliseconds(Int64(timeout * 1000))
                )
                result = .success(try await fetcher.fetch(domain))
            } catch let error as AssociationFetchError {
                result = .failure(error)
            }
            let record: AssociationRecord
            do {
                record = try cache.record(domain, result, policy: policy, now: Date())
            } catch {
                throw CommandLineError("cannot write the cache in \(cache.folder.path): \(error)")
            }
            switch result {
            case .failure(let error):
                if json {
                    printJSON(["domain": domain, "error": ["code": error.code.name, "message": error.message]])
                } else {
                    FileHandle.standardError.write(Data("baton: \(domain): \(error)\n".utf8))
                }
                throw ExitCode(1)
            case .success(let fetched):
                if json {
                    var summary = associationSummary(record)
                    summary["signed"] = fetched.signed
                    printJSON(summary)
                    return
                }
                print("\(domain): \(fetched.signed ? "signed" : "plain JSON") file from \(fetched.url), \(fetched.json.count) bytes; counts until \(isoTime(record.expiresAt))")
                printApprovals(fetched.association)
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every cached apple-app-site-association file: the apps it approves, when it was fetched, when it expires, the last error.",
            discussion: """
                Reads the cache in the state folder, which the agent and `baton aasa fetch` write. An expired file no \
                longer approves anything: web pages of its domain go to the browser until a fetch succeeds.
                """
        )

        @OptionGroup var state: StateOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() throws {
            let cache = AssociationCache(stateFolder: state.store.folder)
            let (records, problems) = cache.readAll()
            if json {
                printJSON([
                    "domains": records.map(associationSummary),
                    "problems": problems.map { ["code": $0.code.name, "message": $0.message] },
                ])
                return
            }
            if records.isEmpty && problems.isEmpty { print("No association files cached in \(cache.folder.path).") }
            let now = Date()
            for record in records {
                let state = record.isValid(at: now) ? "valid until \(isoTime(record.expiresAt))" : record.json == nil ? "never fetched" : "expired at \(isoTime(record.expiresAt))"
                let fetched = record.fetchedAt.map { "; fetched \(isoTime($0))" } ?? ""
                print("\(record.domain): \(state)\(fetched)\(record.lastError.map { "; last error \($0) (\(record.failures) in a row)" } ?? "")")
                if let association = try? record.association() { printApprovals(association, indent: "  ") }
            }
            for problem in problems { print("damaged: \(problem)") }
        }
    }
}

/// The apps a file names, per service.
func approvedApps(_ association: AppSiteAssociation) -> [String: [String]] {
    [
        "activitycontinuation": association.activityContinuationApps,
        "applinks": Array(Set(association.appLinks.flatMap(\.appIDs))).sorted(),
        "webcredentials": association.webCredentialsApps,
        "appclips": association.appClipsApps,
    ]
}

func printApprovals(_ association: AppSiteAssociation, indent: String = "") {
    let apps = approvedApps(association)
    for service in ["activitycontinuation", "applinks", "webcredentials", "appclips"] {
        let list = apps[service] ?? []
        print("\(indent)\(service): \(list.isEmpty ? "(none)" : list.joined(separator: " "))")
    }
    if !association.appLinks.isEmpty { print("\(indent)(applinks approve only the paths their entry covers: baton aasa check FILE --url URL)") }
}

func associationSummary(_ record: AssociationRecord) -> [String: Any] {
    var summary: [String: Any] = [
        "domain": record.domain,
        "valid": record.isValid(at: Date()),
        "failures": record.failures,
        "signed": record.signed,
    ]
    summary["url"] = record.url
    summary["fetchedAt"] = record.fetchedAt.map { isoTime($0) }
    summary["expiresAt"] = record.expiresAt.map { isoTime($0) }
    summary["lastAttempt"] = record.lastAttempt.map { isoTime($0) }
    summary["lastError"] = record.lastError.map { ["code": $0.code.name, "message": $0.message] }
    summary["approves"] = (try? record.association()).flatMap { $0 }.map(approvedApps) ?? [:]
    return summary
}

func isoTime(_ date: Date?) -> String {
    date.map { $0.formatted(.iso8601) } ?? "never"
}
