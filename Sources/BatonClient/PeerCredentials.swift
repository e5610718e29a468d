#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Who is at the other end of a Unix socket, as the kernel says (`SO_PEERCRED`): not what the process claims.
public struct PeerCredentials: Sendable, Hashable {
    /// `struct ucred` from `<sys/socket.h>`, which Swift's Glibc module leaves out (it needs `_GNU_SOURCE`).
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    /// Credentials.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The credentials of the process connected to `channel`.
    package static func of(_ channel: Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(BatonClientError(.protocolViolation, "the connection has no socket to ask for peer credentials"))
        }
        // SOL_SOCKET = 1 and SO_PEERCRED = 17 on Linux.
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(1), name: SocketOptionName(17))
    }

    /// When process `pid` started (clock ticks after boot, field 22 of `/proc/PID/stat`): with the pid, it names one
    /// process for its whole life, which a recycled pid does not. Nil when the process is gone.
    public static func startTime(of pid: Int32) -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After the command name (which may hold spaces and parentheses): field 3 (state) onwards.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    /// The executable the process runs, with symbolic links resolved: `/proc/PID/exe`. Nil when the process is gone
    /// or not ours to inspect.
    public static func executable(of pid: Int32) -> String? {
        let link = "/proc/\(pid)/exe"
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(link, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // A replaced binary reads "/path (deleted)": that is not the registered executable any more.
        return path.hasSuffix(" (deleted)") ? nil : path
    }
}
