import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The installed apps: every `*.app` bundle in the search paths and every desktop file there with `X-Baton-*` keys
/// (issue 28 item 2), and those that could not be loaded, each with its path and why.
public struct AppRegistry: Sendable {
    /// The apps: the bundles in search-path order (earlier paths first), then by folder name; then the desktop-file
    /// apps, in search-path order, then by desktop file id. The router breaks ties in this order (D1).
    public let apps: [AppRecord]
    /// Bundles and desktop files that did not load, or that an app with the same identifier shadows.
    public let problems: [BundleProblem]

    /// A bundle or desktop file that is not in the registry, and why.
    public struct BundleProblem: Sendable, Hashable, CustomStringConvertible {
        /// The bundle folder or desktop file.
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
    /// `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`), as the XDG base-directory specification orders them;
    /// then the XDG applications folders, `$XDG_DATA_HOME/applications` and `applications` in each of
    /// `$XDG_DATA_DIRS`, for desktop files (issue 28 item 2). Every folder may hold both bundles and desktop files.
    public static func searchPaths(environment: [String: String] = ProcessInfo.processInfo.environment) -> [URL] {
        func folders(_ list: String?) -> [String] {
            (list ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        }
        var paths = folders(environment["BATON_APPS_PATH"])
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? environment["HOME"].map { $0 + "/.local/share" }
        let dataDirs = folders(environment["XDG_DATA_DIRS"])
        let dataFolders = (dataHome.map { [$0] } ?? []) + (dataDirs.isEmpty ? ["/usr/local/share", "/usr/share"] : dataDirs)
        paths += dataFolders.map { $0 + "/baton/apps" }
        paths += dataFolders.map { $0 + "/applications" }
        return paths.map { URL(fileURLWithPath: $0) }
    }

    /// Loads every bundle in `searchPaths`, then every desktop file there that declares `X-Baton-*` keys (issue 28
    /// item 2; programs looked for on `programSearchPath`). A folder that does not exist is skipped; a bundle or
    /// desktop file that fails to load is a problem and the rest still load; a second app with an identifier already
    /// seen is shadowed, so a bundle wins over a desktop file with the same identifier, wherever each is.
    ///
    /// Desktop files go by the Desktop Entry specification: the first file with a desktop file id, in search-path
    /// order, is the only one read for that id, whatever it holds. A copy in `~/.local/share/applications` with
    /// `Hidden=true` (or without `X-Baton-` keys) thus removes the system's app of that id, silently, as desktops do.
    public static func load(searchPaths: [URL], programSearchPath: [String] = DesktopAppLoader.programSearchPath()) -> AppRegistry {
        var apps: [AppRecord] = []
        var problems: [BundleProblem] = []
        var seen: [String: String] = [:]
        func add(_ record: AppRecord, from path: String) {
            if let first = seen[record.bundleIdentifier] {
                problems.append(
                    BundleProblem(path: path, reason: "shadowed by \(first), which has the same bundle identifier \(BatonCoreError.quoted(record.bundleIdentifier))")
                )
                return
            }
            seen[record.bundleIdentifier] = path
            apps.append(record)
        }
        func failed(_ path: String, _ error: any Error) {
            problems.append(BundleProblem(path: path, reason: (error as? BatonRegistryError)?.description ?? "\(error)"))
        }
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
                    add(try AppBundleLoader.load(bundle), from: bundle.path)
                } catch {
                    failed(bundle.path, error)
                }
            }
        }
        var desktopIDs: Set<String> = []
        for folder in searchPaths where folder.pathExtension != "app" {
            for file in ApplicationsFolder(folder).files where desktopIDs.insert(file.id).inserted {
                do {
                    if let record = try DesktopAppLoader.load(file.url, id: file.id, programSearchPath: programSearchPath) {
                        add(record, from: file.url.path)
                    }
                } catch {
                    failed(file.url.path, error)
                }
            }
        }
        return AppRegistry(apps: apps, problems: problems)
    }

    /// The folders to watch to follow installs in `searchPaths` (issue 11 part 7; issue 28 item 2): each that exists,
    /// each bundle in those (an edited Info.plist), and each subfolder desktop files are read from; for each that does
    /// not exist yet, the nearest folder above it, so that making it is seen (a new account's
    /// `~/.local/share/applications`, made by the first app installed there).
    public static func watchedFolders(searchPaths: [URL]) -> Set<String> {
        var folders: Set<String> = []
        for folder in searchPaths {
            let path = folder.standardizedFileURL.path
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else {
                folders.insert(FileStatus.nearestFolder(path))
                continue
            }
            folders.insert(path)
            for name in names where name.hasSuffix(".app") { folders.insert(path + "/" + name) }
            if folder.pathExtension != "app" { folders.formUnion(ApplicationsFolder(folder).folders) }
        }
        return folders
    }

    /// The app with this bundle identifier, if installed.
    public func app(bundleIdentifier: String) -> AppRecord? {
        apps.first { $0.bundleIdentifier == bundleIdentifier }
    }
}
