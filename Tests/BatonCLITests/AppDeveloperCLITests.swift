import Foundation
import Testing

/// What a new app developer met (issue 24 part 7): an agent started with `--apps FOLDER --no-multicast`, and the
/// command line asked without `--apps-path`, as the guide's first app is run. The commands report what that agent
/// sees and does, not what they would find with their own search paths.
@Suite("The app developer's door: doctor and search report the running agent's apps and multicast (issue 24)", .serialized)
struct AppDeveloperCLITests {
    @Test("doctor: the agent's app count and the apps check agree, and --no-multicast is said as such; search names the agent's app")
    func agentsViewWins() async throws {
        try await startingProcesses {
            let world = try HandoffWorld()
            try world.device("laptop")
            let apps = try world.apps("laptop")
            // HandoffWorld's agents run with --no-multicast and --apps FOLDER; the commands below get no --apps-path,
            // and BATON_APPS_PATH names an empty folder, so reading the folders themselves they would find no app.
            try world.agent("laptop", apps: apps)
            let empty = world.root.appendingPathComponent("no-apps")
            try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
            let environment = ["BATON_APPS_PATH": empty.path, "XDG_DATA_HOME": empty.path, "XDG_DATA_DIRS": empty.path]

            let doctor = try Baton.run(["doctor", "--json", "--state", world.state("laptop"), "--timeout", "2"], environment: environment)
            let checks = try DoctorCLITests.checks(doctor)
            #expect(checks["agent"]?["detail"]?.hasSuffix("sees 1 installed app") == true, "\(checks)")
            #expect(checks["apps"]?["detail"]?.hasPrefix("1 app installed") == true, "\(checks)")
            #expect(checks["apps"]?["detail"]?.contains(apps) == true, "the agent's folder is named: \(checks)")
            let multicast = checks["multicast"]?["detail"] ?? ""
            #expect(multicast.contains("the agent runs with --no-multicast: only unicast to known peers"), "\(checks)")
            #expect(!multicast.contains("adverts can go out"), "\(checks)")
            // Issue 30: how the agent's continuation streams go (direct by default).
            #expect(checks["streams"]?["detail"]?.contains("go direct between the two apps") == true, "\(checks)")

            // G1: ShopSnap saves its list for search; `baton search` names the app the agent has, not "not installed here".
            let list = try world.shopSnap(on: "laptop", ["list", "Milk"])
            defer { list.stop() }
            var found = Baton.Result(status: 1, stdout: "", stderr: "")
            let saved = eventually(timeout: 10) {
                found = (try? Baton.run(["search", "milk", "--state", world.state("laptop")], environment: environment)) ?? found
                return found.stdout.contains("1 result")
            }
            #expect(saved, "\(found.output)")
            #expect(found.stdout.contains("ShopSnap (com.razeware.ShopSnap)"), "\(found.output)")
            #expect(!found.stdout.contains("not installed here"), "\(found.output)")
        }
    }

    @Test("a misspelled delegate method, in an extension declaring the conformance as the guide writes them, is a compiler warning for each delegate protocol")
    func misspellingsWarn() throws {
        // The library against which apps compile: the products folder of this build, with its modules and C module maps.
        let products = Baton.executable.deletingLastPathComponent()
        let folder = try Baton.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("Misspelled.swift")
        try Data(
            """
            import Baton
            final class Screen {}
            extension Screen: UserActivityDelegate {
                func userActivityWasContinud(_ userActivity: UserActivity) {}
            }
            final class Helper {}
            extension Helper: NSUserActivityDelegate {
                func userActivityWillSav(_ userActivity: NSUserActivity) {}
            }
            final class Delegate {}
            extension Delegate: BatonApplicationDelegate {
                func application(_ application: BatonApplication, willContinueUserActivity userActivityType: String) -> Bool { true }
            }

            """.utf8
        ).write(to: source)
        var arguments = ["swiftc", "-typecheck", "-swift-version", "6", "-I", products.appendingPathComponent("Modules").path]
        let files = FileManager.default
        for name in try files.contentsOfDirectory(atPath: products.path) where name.hasSuffix(".build") {
            let map = products.appendingPathComponent(name).appendingPathComponent("module.modulemap").path
            if files.fileExists(atPath: map) { arguments += ["-Xcc", "-fmodule-map-file=\(map)"] }
        }
        let checkouts = products.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("checkouts")
        for case let path as String in files.enumerator(atPath: checkouts.path) ?? FileManager.DirectoryEnumerator() where path.hasSuffix("/include") {
            arguments += ["-Xcc", "-I" + checkouts.appendingPathComponent(path).path]
        }
        let result = try Baton.run(arguments + [source.path], executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(result.status == 0, "\(result.output)")
        for (method, requirement) in [
            ("userActivityWasContinud", "userActivityWasContinued' of protocol 'UserActivityDelegate'"),
            ("userActivityWillSav", "userActivityWillSave' of protocol 'NSUserActivityDelegate'"),
            ("application(_:willContinueUserActivity:)", "application(_:willContinueUserActivityWithType:)' of protocol 'BatonApplicationDelegate'"),
        ] {
            #expect(result.output.contains("warning: instance method '\(method)' nearly matches defaulted requirement '\(requirement)"), "\(result.output.prefix(2_000))")
        }
    }
}
