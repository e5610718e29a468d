#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `stat(2)` says about a path, links followed; two are equal only when nothing about the file changed between
/// them (what ``ActiveMembers`` relies on). Used instead of `FileManager.attributesOfItem`, whose values are
/// `NSNumber`s in Foundation but plain integers in FoundationEssentials (which the agent links), so a cast such as
/// `attributes[.posixPermissions] as? Int` that works in one silently answers nil in the other.
package struct FileStatus: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        case regular, directory, other
    }

    package let kind: Kind
    /// The size in bytes.
    package let size: Int
    /// The permission bits (`0o600`), without the file type.
    package let permissions: Int
    /// The owner's user id.
    package let owner: UInt32
    /// Which file this is: the device and inode (a file replaced by a rename is another file).
    package let device: UInt64
    package let inode: UInt64
    /// When its contents and its status (permissions, links, owner) last changed, in nanoseconds since 1970.
    package let modified: Int64
    package let statusChanged: Int64

    /// The status of `path`, or nil when it cannot be had (no such file, no permission to look).
    package init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        default: kind = .other
        }
        size = Int(info.st_size)
        permissions = Int(info.st_mode & 0o7777)
        owner = info.st_uid
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        statusChanged = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }

    /// `path` if it is a folder, else the nearest folder above it ("/" at worst): what to watch until `path` is made
    /// (issue 27 item 2's data folder; issue 28 item 2's applications folders). Split at the byte `/`, as the kernel
    /// does (a `/` then a combining mark is one Character).
    package static func nearestFolder(_ path: String) -> String {
        var folder = path
        while folder != "/", FileStatus(path: folder)?.kind != .directory {
            guard let slash = folder.utf8.lastIndex(of: UInt8(ascii: "/")), slash != folder.utf8.startIndex else { return "/" }
            folder = String(Substring(folder.utf8[..<slash]))
        }
        return folder
    }
}
