import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension AppBundleLoader {
    /// The key whose value names the executable.
    static let executableKey = "CFBundleExecutable"

    /// Finds the executable `name` (the expanded `CFBundleExecutable`) inside the bundle at `bundle`: at
    /// `Name.app/<name>`, else at `Name.app/Contents/MacOS/<name>`.
    ///
    /// The executable must lie inside the bundle (issue 10 item 9), or a bundle could name `/bin/sh` and be launched
    /// and trusted as that shell. An absolute name or one with a `..` component is refused outright, and so is a
    /// name whose folders, with every symlink resolved, lead out of the bundle. The file itself may be a symbolic
    /// link placed in the bundle by the person who made it (how a development build is registered without copying
    /// it: `ShopSnap.app/shopsnap -> ../../.build/debug/shopsnap`); it must lead to a regular executable file. A
    /// refusal is a warning naming the key and the value, and no executable: the agent then neither launches the
    /// app nor accepts a process as it.
    static func executable(named name: String, in bundle: URL, warnings: inout [AppBundleWarning]) -> URL? {
        if name.isEmpty || name.hasPrefix("/") || name.split(separator: "/", omittingEmptySubsequences: false).contains("..") {
            warnings.append(
                AppBundleWarning(
                    key: executableKey,
                    "\(BatonCoreError.quoted(name)) leads outside the bundle (an absolute path or a \"..\" component); "
                        + "the app cannot be launched"
                )
            )
            return nil
        }
        if let bundlePath = realPath(bundle) {
            let inside = bundlePath.hasSuffix("/") ? bundlePath : bundlePath + "/"
            for candidate in [bundle.appendingPathComponent(name), bundle.appendingPathComponent("Contents/MacOS/\(name)")] {
                // Nothing there, or a dangling symlink: try the next layout.
                guard let target = realPath(candidate), let folder = realPath(candidate.deletingLastPathComponent()) else { continue }
                guard folder == bundlePath || folder.hasPrefix(inside) else {
                    warnings.append(
                        AppBundleWarning(
                            key: executableKey,
                            "\(BatonCoreError.quoted(name)) is in a folder that resolves to \(BatonCoreError.quoted(folder)), outside "
                                + "the bundle; the app cannot be launched"
                        )
                    )
                    return nil
                }
                if FileStatus(path: target)?.kind == .regular, FileManager.default.isExecutableFile(atPath: target) {
                    return candidate
                }
            }
        }
        warnings.append(
            AppBundleWarning(
                key: executableKey,
                "no executable \(BatonCoreError.quoted(name)) in the bundle; the app cannot be launched"
            )
        )
        return nil
    }

    /// `url`'s path with every symlink, `.` and `..` resolved, or nil when nothing is there.
    static func realPath(_ url: URL) -> String? {
        guard let resolved = realpath(url.path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
