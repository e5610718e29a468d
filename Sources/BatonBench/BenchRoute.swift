import ArgumentParser
import BatonRegistry
import Foundation

extension BenchCommand {
    struct Route: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Activity routing: 10,000 decisions against 500 installed apps.",
            discussion: """
                A mix of 80% typed activities of known teams, 10% unclaimed ones with a webpage URL and 10% web pages \
                for approved associated domains, routed with the indexed router and, as the baseline, with a linear scan \
                over every app. Target: under 2 µs per decision.
                """
        )

        @Option(help: "Installed apps.")
        var apps = 500

        @Option(help: "Decisions per sample.")
        var decisions = 10_000

        @Option(help: "Timed samples; the median is reported.")
        var samples = 9

        @Flag(help: "Print the results as JSON.")
        var json = false

        func validate() throws {
            guard apps >= 10, decisions >= 100, samples >= 3 else {
                throw ValidationError("Use at least 10 apps, 100 decisions and 3 samples.")
            }
        }

        func run() throws {
            #if DEBUG
            if !json { print("note: this is a debug build; for real figures run `swift run -c release baton bench route`\n") }
            #endif
            let (registry, approvals, requests) = try RoutingWorkload.make(apps: apps, decisions: decisions)
            let router = ActivityRouter(registry: registry, approvals: approvals)
            var checksum = 0
            let timer = InterleavedTimer(samples: samples, sampleNanoseconds: 20_000_000)
            let result = try timer.compare(
                baton: { for request in requests { checksum &+= router.route(request).reason.utf8.count } },
                baseline: { for request in requests { checksum &+= RoutingWorkload.linearScan(registry, request) } }
            )
            let perDecision = result.baton / Double(requests.count)
            let baseline = result.baseline / Double(requests.count)
            if json {
                let figure = BenchFigure.microseconds(
                    "route one activity (\(registry.apps.count) apps)", perDecision,
                    baseline: "linear scan over every app", baseline, target: "< 2 µs", met: perDecision < 2e-6
                )
                print(BenchFigure.json([figure]))
                if checksum == 42 { print("") }
                return
            }
            print("Routing \(requests.count) activities against \(registry.apps.count) apps (median of \(samples) samples)")
            print(String(format: "indexed router   %.3f µs per decision", perDecision * 1e6))
            print(String(format: "linear scan      %.3f µs per decision (baseline, same run)", baseline * 1e6))
            print(String(format: "speed-up         %.1fx; target under 2 µs: %@", result.ratio, perDecision < 2e-6 ? "met" : "NOT met"))
            if checksum == 42 { print("") }  // keeps the work observable to the optimiser
        }
    }
}

/// A deterministic routing workload: teams of apps with overlapping types and associated domains.
enum RoutingWorkload {
    static func make(apps count: Int, decisions: Int) throws -> (AppRegistry, DomainApprovals, [RouteRequest]) {
        var apps: [AppRecord] = []
        var files: [String: AppSiteAssociation] = [:]
        for index in 0..<count {
            let team = "TEAM\(index / 10)"
            let identifier = "com.team\(index / 10).app\(index)"
            let types = (0..<6).map { "com.team\(index / 10).app\(index).type\($0)" } + ["com.team\(index / 10).shared"]
            let domain = "app\(index).example.com"
            apps.append(
                AppRecord(
                    bundleURL: URL(fileURLWithPath: "/apps/\(identifier).app"), bundleIdentifier: identifier, name: identifier,
                    executableURL: nil, teamIdentifier: team, activityTypes: types, documentActivityTypes: [],
                    associatedDomains: [AssociatedDomain("activitycontinuation:\(domain)")].compactMap { $0 },
                    warnings: [], isIdentityResolved: true
                )
            )
            files[domain] = try AppSiteAssociation(json: Data(#"{"activitycontinuation": {"apps": ["\#(team).\#(identifier)"]}}"#.utf8))
        }
        var random = UInt64(0x5EED)
        func next(_ bound: Int) -> Int {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((random >> 33) % UInt64(bound))
        }
        let requests = (0..<decisions).map { _ -> RouteRequest in
            let app = next(count)
            switch next(10) {
            case 0:
                return RouteRequest(activityType: "com.unclaimed.type", teamIdentifier: "TEAM\(app / 10)", webpageURL: URL(string: "https://example.org/\(app)"))
            case 1:
                return RouteRequest(activityType: AppRecord.browsingWebActivityType, webpageURL: URL(string: "https://app\(app).example.com/page"))
            default:
                let type = next(7) == 6 ? "com.team\(app / 10).shared" : "com.team\(app / 10).app\(app).type\(next(6))"
                return RouteRequest(activityType: type, teamIdentifier: "TEAM\(app / 10)")
            }
        }
        return (AppRegistry(apps: apps), DomainApprovals(files), requests)
    }

    /// The baseline: what a router without an index does, a pass over every app per decision.
    static func linearScan(_ registry: AppRegistry, _ request: RouteRequest) -> Int {
        if request.activityType == AppRecord.browsingWebActivityType {
            let host = request.webpageURL?.host ?? ""
            return registry.apps.firstIndex { app in app.associatedDomains.contains { $0.matchLength(host: host) != nil } } ?? -1
        }
        return registry.apps.firstIndex { $0.teamIdentifier == request.teamIdentifier && $0.claimedActivityTypes.contains(request.activityType) } ?? -1
    }
}
