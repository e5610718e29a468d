import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The desktop files of one folder the registry searches (an XDG `applications` folder, issue 28 item 2), by desktop
/// file id, as the Desktop Entry specification names them: the path below the folder with each `/` made a `-`
/// (`applications/kde4/okular.desktop` is `kde4-okular.desktop`).
struct ApplicationsFolder {
    /// How deep subfolders are read: real ones nest one level (`kde4/`), and a loop of symlinks must end.
    static let maximumDepth = 3

    /// Each desktop file id and its file, sorted by id.
    let files: [(id: String, url: URL)]
    /// The folder and each subfolder read: what the agent watches to follow installs.
    let folders: [String]

    /// Reads the names in `folder` (nothing else: files are read by ``DesktopAppLoader``). Hidden entries (a dot
    /// first) and `.app` bundles are skipped.
    init(_ folder: URL) {
        var files: [(id: String, url: URL)] = []
        var folders: [String] = []
        func scan(_ url: URL, prefix: String, depth: Int) {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: url.path) else { return }
            folders.append(url.standardizedFileURL.path)
            for name in names.sorted() where !name.hasPrefix(".") && !name.hasSuffix(".app") {
                let entry = url.appendingPathComponent(name)
                if name.hasSuffix(".desktop") {
                    files.append((prefix + name, entry))
                } else if depth < Self.maximumDepth, FileStatus(path: entry.path)?.kind == .directory {
                    scan(entry, prefix: prefix + name + "-", depth: depth + 1)
                }
            }
        }
        scan(folder, prefix: "", depth: 0)
        self.files = files.sorted { $0.id < $1.id }
        self.folders = folders
    }
}
