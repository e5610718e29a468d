import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The installed apps: every `*.app` bundle in the search paths, and the bundles that could not be loaded, each
/// with its path and why.
public struct AppRegistry: Sendable {
    /// The apps, in search-path order (earlier paths first), then by folder name.
    public let apps: [AppRecord]
    /// Bundles that did not load, or that another bundle with the same identifier shadows.
    public let problems: [BundleProblem]

    /// A bundle that is not in the registry, and why.
    public struct BundleProblem: Sendable, Hashable, CustomStringConvertible {
        /// The bundle folder.
        public let path: String
        /// Why it is left out.
        public let reason: String

        public var description: String { "\(path): \(reason)" }
    }

    /// A registry of the given apps (for tests and embedded use).
    public init(apps: [AppRecord], problems: [BundleProblem] = []) {
        self.apps = apps
        self.problems = problems
    }

    /// Where apps are looked for, in precedence order: each folder of `BATON_APPS_PATH` (colon-separated), then
    /// `$XDG_DATA_HOME/baton/apps` (default `~/.local/share/baton/apps`), then `baton/apps` in each of
    /// `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`), as the XDG base-directory specification orders them.
    public static func searchPaths(environment: [String: String] = ProcessInfo.processInfo.environment) -> [URL] {
        func folders(_ list: String?) -> [String] {
            (list ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        }
        var paths = folders(environment["BATON_APPS_PATH"])
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? environment["HOME"].map { $0 + "/.local/share" }
        if let dataHome { paths.append(dataHome + "/baton/apps") }
        let dataDirs = folders(environment["XDG_DATA_DIRS"])
        paths += (dataDirs.isEmpty ? ["/usr/local/share", "/usr/share"] : dataDirs).map { $0 + "/baton/apps" }
        return paths.map { URL(fileURLWithPath: $0) }
    }

    /// Loads every bundle in `searchPaths`. A folder that does not exist is skipped; a bundle that fails to load is
    /// a problem and the rest still load; a second bundle with an identifier already seen is shadowed.
    public static func load(searchPaths: [URL]) -> AppRegistry {
        var apps: [AppRecord] = []
        var problems: [BundleProblem] = []
        var seen: [String: String] = [:]
        for folder in searchPaths {
            let bundles: [URL]
            if folder.pathExtension == "app" {
                bundles = [folder]
            } else {
                guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { continue }
                bundles = names.filter { $0.hasSuffix(".app") }.sorted().map { folder.appendingPathComponent($0) }
            }
            for bundle in bundles {
                do {
                    let record = try AppBundleLoader.load(bundle)
                    if let first = seen[record.bundleIdentifier] {
                        problems.append(
                            BundleProblem(path: bundle.path, reason: "shadowed by \(first), which has the same bundle identifier \(BatonCoreError.quoted(record.bundleIdentifier))")
                        )
                        continue
                    }
                    seen[record.bundleIdentifier] = bundle.path
                    apps.append(record)
                } catch let error as BatonRegistryError {
                    problems.append(BundleProblem(path: bundle.path, reason: error.description))
                } catch {
                    problems.append(BundleProblem(path: bundle.path, reason: "\(error)"))
                }
            }
        }
        return AppRegistry(apps: apps, problems: problems)
    }

    /// The app with this bundle identifier, if installed.
    public func app(bundleIdentifier: String) -> AppRecord? {
        apps.first { $0.bundleIdentifier == bundleIdentifier }
    }
}
