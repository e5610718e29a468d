#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where the recent-documents source reads and how it opens documents (issue 27 item 2): the XDG folders, from the
/// environment by default, each one injectable so tests use folders of their own.
public struct RecentDocumentsSettings: Sendable, Hashable {
    /// Whether recent documents in synced folders are offered, and continued here (on by default; agents embedded in
    /// tests and the demo have it off unless a test turns it on).
    public var isEnabled = true
    /// `$XDG_DATA_HOME` (default `~/.local/share`): `recently-used.xbel` and `RecentDocuments/` are there.
    public var dataHome: String
    /// The user's home folder, for `$HOME` in KDE's recent documents.
    public var home: String
    /// Where desktop files are looked for by id, first first: `$XDG_DATA_HOME/applications`, then each of
    /// `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`) + `/applications`.
    public var applicationFolders: [String]
    /// The `mimeapps.list` files, first first: `$XDG_CONFIG_HOME`, `$XDG_CONFIG_DIRS`, then the applications folders'.
    public var mimeAppsFiles: [String]
    /// shared-mime-info's `globs2` files, first first: `$XDG_DATA_HOME/mime`, then each of `$XDG_DATA_DIRS` + `/mime`:
    /// a media file's type by its name, for the default player when the one that played it is not installed here.
    public var mimeGlobFiles: [String]
    /// The search path for a program a desktop file names without a folder (`PATH`).
    public var searchPath: [String]
    /// The environment programs opened for a document get.
    public var environment: [String: String]
    /// How recently a document must have been used for an agent starting to offer it (seconds).
    public var freshness: Double = 600

    /// The settings the environment `environment` gives.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "/"
        func absolute(_ name: String, _ fallback: String) -> String {
            guard let value = environment[name], value.hasPrefix("/") else { return fallback }
            return value
        }
        func list(_ name: String, _ fallback: [String]) -> [String] {
            let values = (environment[name] ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
            return values.isEmpty ? fallback : values
        }
        let dataHome = absolute("XDG_DATA_HOME", home + "/.local/share")
        let configHome = absolute("XDG_CONFIG_HOME", home + "/.config")
        let dataDirs = list("XDG_DATA_DIRS", ["/usr/local/share", "/usr/share"])
        let configDirs = list("XDG_CONFIG_DIRS", ["/etc/xdg"])
        self.dataHome = dataHome
        self.home = home
        applicationFolders = ([dataHome] + dataDirs).map { $0 + "/applications" }
        mimeAppsFiles = ([configHome] + configDirs).map { $0 + "/mimeapps.list" } + applicationFolders.map { $0 + "/mimeapps.list" }
        mimeGlobFiles = ([dataHome] + dataDirs).map { $0 + "/mime/globs2" }
        searchPath = list("PATH", ["/usr/local/bin", "/usr/bin", "/bin"])
        self.environment = environment
    }

    /// GTK's list of recently used files.
    public var recentlyUsedFile: String { dataHome + "/recently-used.xbel" }
    /// KDE's folder of recent documents, one desktop file each.
    public var kdeRecentFolder: String { dataHome + "/RecentDocuments" }
}
