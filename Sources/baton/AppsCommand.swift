import ArgumentParser
import BatonAgent
import BatonRegistry
import Foundation

/// Options shared by the commands that read the installed apps.
struct AppSearchOptions: ParsableArguments {
    @Option(
        name: .customLong("apps-path"),
        help: ArgumentHelp("A folder of .app bundles and .desktop files (or one bundle) to search before the usual places; repeatable.", valueName: "dir")
    )
    var appsPaths: [String] = []

    var searchPaths: [URL] {
        appsPaths.map { URL(fileURLWithPath: $0) } + AppRegistry.searchPaths()
    }

    func registry() -> AppRegistry {
        AppRegistry.load(searchPaths: searchPaths)
    }
}

/// `baton apps`: the apps Baton can launch to continue activities.
struct AppsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps",
        abstract: "List, inspect and route to the installed apps.",
        discussion: """
            Apps are folders named Name.app holding an Info.plist, the executable it names, and optionally \
            Name.entitlements; or desktop files (ID.desktop) with X-Baton-TeamIdentifier and X-Baton-ActivityTypes \
            keys, the app then known by its desktop file id. Baton looks in each folder of BATON_APPS_PATH, then \
            $XDG_DATA_HOME/baton/apps (~/.local/share/baton/apps), then baton/apps in each of $XDG_DATA_DIRS \
            (/usr/local/share, /usr/share), then the applications folder of each of those data folders. A bundle \
            wins over a desktop file with the same identifier.
            """,
        subcommands: [List.self, Inspect.self, Route.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the installed apps, and the bundles that could not be loaded with why.",
            discussion: """
                With --agent, asks this device's running agent what it sees now (it follows installs: a bundle \
                added, changed or removed shows at once, without a restart); otherwise reads the folders itself.
                """
        )

        @OptionGroup var search: AppSearchOptions

        @Flag(help: "Ask the running agent (of --state) which apps it sees, rather than reading the folders.")
        var agent = false

        @OptionGroup var state: StateOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            guard !agent else { return try await listFromAgent() }
            let registry = search.registry()
            if json {
                printJSON([
                    "apps": registry.apps.map(appSummary),
                    "problems": registry.problems.map { ["path": $0.path, "reason": $0.reason] },
                    "searchPaths": search.searchPaths.map(\.path),
                ])
                return
            }
            if registry.apps.isEmpty {
                print("No apps found. Searched: \(search.searchPaths.map(\.path).joined(separator: ", "))")
            }
            for app in registry.apps {
                let types = app.claimedActivityTypes.count
                let notes = app.warnings.isEmpty ? "" : ", \(app.warnings.count) warning\(app.warnings.count == 1 ? "" : "s")"
                print("\(app.bundleIdentifier)  team \(app.teamIdentifier ?? "none")  \(types) activity type\(types == 1 ? "" : "s")\(notes)  \(app.kind)  \(app.bundleURL.path)")
            }
            for problem in registry.problems {
                print("not loaded: \(problem)")
            }
        }

        func listFromAgent() async throws {
            let client = try await controlClient(state)
            defer { client.close() }
            client.send(.listApps(request: 1))
            let apps = try await awaitReply(client) { if case .apps(1, let apps) = $0 { apps } else { nil } }
            if json {
                printJSON([
                    "apps": apps.filter { !$0.bundle.isEmpty }.map { app -> [String: Any] in
                        var object: [String: Any] = ["bundleIdentifier": app.bundle, "name": app.name, "activityTypes": app.activityTypes, "kind": app.kind]
                        if let team = app.team { object["team"] = team }
                        if !app.problem.isEmpty { object["problem"] = app.problem }
                        return object
                    },
                    "problems": apps.filter(\.bundle.isEmpty).map(\.problem),
                ])
                return
            }
            if apps.isEmpty { print("The agent sees no apps.") }
            for app in apps where !app.bundle.isEmpty {
                let types = app.activityTypes.count
                let problem = app.problem.isEmpty ? "" : "  (\(app.problem))"
                let kind = app.kind.isEmpty ? "" : "  \(app.kind)"
                print("\(app.bundle)  team \(app.team ?? "none")  \(types) activity type\(types == 1 ? "" : "s")\(kind)\(problem)")
            }
            for app in apps where app.bundle.isEmpty {
                print("not loaded: \(app.problem)")
            }
        }
    }

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what Baton reads from one app bundle or desktop file: identity, activity types, domains, warnings."
        )

        @Argument(help: "The .app bundle folder, or the app's .desktop file.", completion: .file())
        var path: String

        @Option(name: .customLong("build-setting"), help: ArgumentHelp("NAME=VALUE for an Xcode build variable; repeatable.", valueName: "name=value"))
        var buildSettings: [String] = []

        @Flag(help: "Print JSON.")
        var json = false

        func run() throws {
            var settings: [String: String] = [:]
            for setting in buildSettings {
                guard let equals = setting.firstIndex(of: "=") else {
                    throw ValidationError("--build-setting takes NAME=VALUE, got \"\(setting)\".")
                }
                settings[String(setting[..<equals])] = String(setting[setting.index(after: equals)...])
            }
            let app: AppRecord
            do {
                let url = URL(fileURLWithPath: path)
                if url.pathExtension == "desktop" {
                    // Issue 28 item 2: a desktop file, known by its file name as its desktop file id.
                    guard let desktopApp = try DesktopAppLoader.load(url, id: url.lastPathComponent) else {
                        throw CommandLineError("\(path): not a Baton app (no X-Baton- key in its [Desktop Entry], Hidden=true, or no such file)")
                    }
                    app = desktopApp
                } else {
                    app = try AppBundleLoader.load(url, buildSettings: settings)
                }
            } catch let error as BatonRegistryError {
                throw CommandLineError(error.description)
            }
            if json {
                printJSON(appDetails(app))
                return
            }
            print("bundle identifier  \(app.bundleIdentifier)\(app.isIdentityResolved ? "" : "  (unresolved: this app continues nothing)")")
            print("name               \(app.name)")
            print("kind               \(app.kind)")
            print("team               \(app.teamIdentifier ?? "none")")
            print("executable         \(app.executableURL?.path ?? "none")")
            print("activity types     \(app.activityTypes.isEmpty ? "none" : app.activityTypes.joined(separator: ", "))")
            print("document types     \(app.documentActivityTypes.isEmpty ? "none" : app.documentActivityTypes.joined(separator: ", "))")
            print("associated domains \(app.associatedDomains.isEmpty ? "none" : app.associatedDomains.map(\.description).joined(separator: ", "))")
            if app.isBrowser { print("browser            yes (claims \(AppRecord.browsingWebActivityType))") }
            for warning in app.warnings { print("warning: \(warning)") }
        }
    }

    struct Route: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say which app would continue an activity, and why.",
            discussion: """
                Association files for web-to-app routing (E3, E4) are given with --association DOMAIN=FILE, as the \
                agent would have them cached. Example:
                  baton apps route --type NSUserActivityTypeBrowsingWeb \\
                    --url https://wwdc.io/x --association wwdc.io=apple-app-site-association
                """
        )

        @OptionGroup var search: AppSearchOptions

        @Option(name: .long, help: "The activity type.")
        var type: String

        @Option(help: "The team of the app that created the activity.")
        var team: String?

        @Option(help: "The activity's webpage URL.")
        var url: String?

        @Option(help: "The bundle identifier of the app that created the activity.")
        var origin: String?

        @Option(help: "The bundle identifier of the default browser app, if it is a registered app.")
        var defaultBrowser: String?

        @Option(help: ArgumentHelp("DOMAIN=FILE: an apple-app-site-association file for DOMAIN; repeatable.", valueName: "domain=file"))
        var association: [String] = []

        @Flag(help: "Print JSON.")
        var json = false

        func run() throws {
            var webpage: URL?
            if let url {
                guard let parsed = URL(string: url), parsed.scheme != nil else { throw ValidationError("--url \"\(url)\" is not a URL.") }
                webpage = parsed
            }
            var files: [String: AppSiteAssociation] = [:]
            for entry in association {
                guard let equals = entry.firstIndex(of: "=") else { throw ValidationError("--association takes DOMAIN=FILE, got \"\(entry)\".") }
                let domain = String(entry[..<equals])
                let path = String(entry[entry.index(after: equals)...])
                files[domain] = try readAssociation(path)
            }
            let router = ActivityRouter(registry: search.registry(), approvals: DomainApprovals(files), defaultBrowser: defaultBrowser)
            let decision = router.route(
                RouteRequest(activityType: type, teamIdentifier: team, webpageURL: webpage, originBundleIdentifier: origin)
            )
            if json {
                var object: [String: Any] = ["reason": decision.reason, "emptiesUserInfo": decision.emptiesUserInfo]
                switch decision.target {
                case .app(let identifier): object["target"] = ["kind": "app", "bundleIdentifier": identifier]
                case .browser(let identifier, let url):
                    object["target"] = ["kind": "browser", "bundleIdentifier": identifier ?? NSNull(), "url": url.absoluteString] as [String: Any]
                case .nothing: object["target"] = ["kind": "nothing"]
                }
                object["deliveredActivityType"] = decision.deliveredActivityType ?? NSNull()
                printJSON(object)
            } else {
                print(decision.description)
            }
        }
    }
}

/// `baton aasa`: associated-domain files.
struct AasaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aasa",
        abstract: "Check, fetch and list apple-app-site-association files.",
        subcommands: [Check.self, Fetch.self, Status.self]
    )

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say which apps a file approves for a URL, per service, and why.",
            discussion: """
                Without --app, every app the file names is checked. A CMS-signed file (the 2014 form, \
                application/pkcs7-mime) is verified first: its certificate must chain to a trusted root and be valid \
                for the URL's host (or --domain).
                """
        )

        @Argument(help: "The apple-app-site-association file (JSON).", completion: .file())
        var file: String

        @Option(help: "The URL to check (its path, query and fragment matter for applinks).")
        var url: String

        @Option(help: "Check only this app, as TEAM.bundle.identifier.")
        var app: String?

        @Option(help: "For a signed file: the domain it was fetched from (default: the URL's host).")
        var domain: String?

        @Option(help: "For a signed file: a PEM bundle of trusted roots.")
        var trustRoots = "/etc/ssl/certs/ca-certificates.crt"

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            guard let target = URL(string: url), let host = target.host else { throw ValidationError("--url \"\(url)\" is not a URL with a host.") }
            guard let raw = FileManager.default.contents(atPath: file) else { throw CommandLineError("\(file): no such file, or it cannot be read") }
            var json = raw
            if SignedAssociationVerifier.isSigned(raw) {
                guard let pem = try? String(contentsOfFile: trustRoots, encoding: .utf8) else {
                    throw CommandLineError("\(trustRoots): cannot read the trust roots needed to verify a signed file")
                }
                do {
                    json = try await SignedAssociationVerifier(trustRootsPEM: pem).verify(raw, domain: domain ?? host)
                } catch let error as BatonRegistryError {
                    throw CommandLineError("\(file): \(error)")
                }
                if !self.json { print("signature: valid, signed for \(domain ?? host)") }
            }
            let association: AppSiteAssociation
            do {
                association = try AppSiteAssociation(json: json)
            } catch let error as BatonRegistryError {
                throw CommandLineError("\(file): \(error)")
            }
            let apps = app.map { [$0] } ?? association.mentionedAppIDs
            let services: [AssociatedDomain.Service] = [.activityContinuation, .appLinks, .webCredentials, .appClips]
            var results: [[String: Any]] = []
            for appID in apps {
                for service in services {
                    let approval = association.approval(of: appID, for: service, url: target)
                    results.append(["app": appID, "service": service.description, "approved": approval.isApproved, "reason": approval.reason])
                }
            }
            if self.json {
                printJSON(["url": target.absoluteString, "results": results, "notes": association.notes])
                return
            }
            if apps.isEmpty { print("The file names no apps.") }
            for result in results {
                let approved = result["approved"] as? Bool ?? false
                print("\(result["app"] ?? "")  \(result["service"] ?? "")  \(approved ? "approved" : "not approved")  (\(result["reason"] ?? ""))")
            }
            for note in association.notes { print("note: \(note)") }
        }
    }
}

func readAssociation(_ path: String) throws -> AppSiteAssociation {
    guard let data = FileManager.default.contents(atPath: path) else { throw CommandLineError("\(path): no such file, or it cannot be read") }
    do {
        return try AppSiteAssociation(json: data)
    } catch let error as BatonRegistryError {
        throw CommandLineError("\(path): \(error)")
    }
}

func appSummary(_ app: AppRecord) -> [String: Any] {
    [
        "bundleIdentifier": app.bundleIdentifier, "team": app.teamIdentifier ?? NSNull(), "path": app.bundleURL.path,
        "activityTypes": app.claimedActivityTypes.sorted(), "warnings": app.warnings.count, "kind": app.kind.rawValue,
    ]
}

func appDetails(_ app: AppRecord) -> [String: Any] {
    [
        "bundleIdentifier": app.bundleIdentifier, "identityResolved": app.isIdentityResolved, "name": app.name, "kind": app.kind.rawValue,
        "team": app.teamIdentifier ?? NSNull(), "executable": app.executableURL?.path ?? NSNull(),
        "activityTypes": app.activityTypes, "documentActivityTypes": app.documentActivityTypes,
        "associatedDomains": app.associatedDomains.map(\.description), "isBrowser": app.isBrowser,
        "warnings": app.warnings.map { ["key": $0.key ?? NSNull(), "message": $0.message] as [String: Any] },
    ]
}

func printJSON(_ object: Any) {
    guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]) else {
        print("{}")
        return
    }
    print(String(decoding: data, as: UTF8.self))
}
