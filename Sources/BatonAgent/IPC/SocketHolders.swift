#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Which processes hold the client's end of an app connection (issue 25 item 8).
///
/// `SO_PEERCRED` names the process that *connected*; it may hand the socket to a child and then exec the app's real
/// binary, so that `/proc/PID/exe` shows the app while the child speaks. The agent therefore asks the kernel which
/// socket is the client's end (`sock_diag`, found by this end's `SO_COOKIE`) and which processes hold it (their
/// `/proc/PID/fd`): the connecting process must hold it, and no other process may.
///
/// What this cannot see is written in docs/ARCHITECTURE.md ("Who may speak for an app"): a descriptor in flight in
/// an `SCM_RIGHTS` message, a thread that unshared its descriptor table, a process of the user that made itself
/// undumpable, and a same-user process that attaches to the app (ptrace, `LD_PRELOAD`). Processes of one user are
/// not a boundary on Linux; a sandbox is.
enum SocketHolders {
    /// What the kernel says about one connection's client end.
    enum Lookup: Sendable, Equatable {
        /// The processes (pids, ascending) whose descriptor tables hold the client's socket.
        case held(by: [Int32])
        /// The kernel could not say, and why: for good (`lasting`: this kernel has no `sock_diag` for Unix
        /// sockets), or this once (no descriptor left, the connection already gone).
        case unknown(String, lasting: Bool)
    }

    /// The processes that hold the other end of the connected Unix socket whose cookie (`SO_COOKIE`) is `cookie`.
    static func ofPeer(cookie: UInt64) -> Lookup {
        switch peerInode(cookie: cookie) {
        case .success(let inode): .held(by: processes(holding: inode))
        case .failure(let failure): .unknown(failure.reason, lasting: failure.lasting)
        }
    }

    struct Failure: Error {
        var reason: String
        var lasting = false
    }

    /// The inode of the socket connected to the one with cookie `cookie`, from a `sock_diag` dump of the connected
    /// Unix sockets with their peers (`UNIX_DIAG_PEER`).
    static func peerInode(cookie: UInt64) -> Result<UInt32, Failure> {
        // AF_NETLINK = 16, NETLINK_SOCK_DIAG = 4.
        let netlink = socket(16, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 4)
        guard netlink >= 0 else {
            let lasting = errno != EMFILE && errno != ENFILE && errno != ENOBUFS && errno != ENOMEM
            return .failure(Failure(reason: "no sock_diag socket: \(String(cString: strerror(errno)))", lasting: lasting))
        }
        defer { close(netlink) }
        var request = [UInt8]()
        // Netlink speaks the host's byte order.
        func append32(_ value: UInt32) { withUnsafeBytes(of: value) { request += $0 } }
        func append16(_ value: UInt16) { withUnsafeBytes(of: value) { request += $0 } }
        // struct nlmsghdr: length, SOCK_DIAG_BY_FAMILY (20), NLM_F_REQUEST | NLM_F_DUMP, sequence, port.
        append32(16 + 24)
        append16(20)
        append16(0x301)
        append32(1)
        append32(0)
        // struct unix_diag_req: AF_UNIX, protocol 0, padding, states (1 << TCP_ESTABLISHED), any inode,
        // UDIAG_SHOW_PEER (4), any cookie.
        request += [1, 0, 0, 0]
        append32(1 << 1)
        append32(0)
        append32(4)
        append32(UInt32.max)
        append32(UInt32.max)
        let sent = request.withUnsafeBytes { send(netlink, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else { return .failure(Failure(reason: "sock_diag request not sent: \(String(cString: strerror(errno)))")) }

        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(netlink, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return .failure(Failure(reason: "sock_diag answered nothing: \(String(cString: strerror(errno)))")) }
            var offset = 0
            while offset + 16 <= count {
                let length = Int(read32(buffer, offset))
                let type = read16(buffer, offset + 4)
                guard length >= 16, offset + length <= count else { return .failure(Failure(reason: "sock_diag sent a truncated message")) }
                switch type {
                case 3:  // NLMSG_DONE: the dump ended without this connection (it closed meanwhile).
                    return .failure(Failure(reason: "the connection is no longer in the kernel's list of Unix sockets"))
                case 2:  // NLMSG_ERROR
                    let code = length >= 20 ? -Int32(bitPattern: read32(buffer, offset + 16)) : EIO
                    return .failure(Failure(reason: "sock_diag refused: \(String(cString: strerror(code)))", lasting: true))
                default:
                    // struct unix_diag_msg (16 bytes), then attributes.
                    let message = offset + 16
                    guard length >= 32 else { break }
                    let found = UInt64(read32(buffer, message + 8)) | UInt64(read32(buffer, message + 12)) << 32
                    guard found == cookie else { break }
                    var attribute = message + 16
                    while attribute + 4 <= offset + length {
                        let size = Int(read16(buffer, attribute))
                        guard size >= 4 else { break }
                        // UNIX_DIAG_PEER (2): the inode of the connected socket.
                        if read16(buffer, attribute + 2) == 2, size >= 8 { return .success(read32(buffer, attribute + 4)) }
                        attribute += (size + 3) & ~3
                    }
                    return .failure(Failure(reason: "the kernel names no peer for the connection"))
                }
                offset += (length + 3) & ~3
            }
        }
    }

    /// The processes whose descriptor tables hold socket `inode`, as `/proc/PID/fd` shows them. Processes this
    /// one may not inspect (another user's, or undumpable ones) are not seen.
    ///
    /// It runs at every app hello, so it is written to cost what its system calls cost (one `openat` and
    /// `getdents` per process, one `fstatat` per descriptor) and nothing more: no strings, no copies per entry.
    static func processes(holding inode: UInt32) -> [Int32] {
        let proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard proc >= 0, let processes = fdopendir(proc) else {
            if proc >= 0 { close(proc) }
            return []
        }
        defer { closedir(processes) }
        var path = [CChar](repeating: 0, count: 32)
        var holders: [Int32] = []
        while let process = readdir(processes) {
            // Numeric names only: one per process (thread group).
            var pid: Int32 = 0
            var digits = 0
            let numeric = withUnsafeBytes(of: &process.pointee.d_name) { name -> Bool in
                for byte in name {
                    guard byte != 0 else { break }
                    guard byte >= 0x30, byte <= 0x39, digits < 10 else { return false }
                    pid = pid &* 10 &+ Int32(byte - 0x30)
                    digits += 1
                }
                return digits > 0
            }
            guard numeric else { continue }
            // "PID/fd", relative to /proc.
            var length = 0
            withUnsafeBytes(of: &process.pointee.d_name) { name in
                for byte in name {
                    guard byte != 0 else { break }
                    path[length] = CChar(bitPattern: byte)
                    length += 1
                }
            }
            for byte in "/fd".utf8 {
                path[length] = CChar(bitPattern: byte)
                length += 1
            }
            path[length] = 0
            let folder = openat(proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard folder >= 0, let descriptors = fdopendir(folder) else {
                if folder >= 0 { close(folder) }
                continue
            }
            defer { closedir(descriptors) }
            while let descriptor = readdir(descriptors) {
                // A socket's descriptor stats as the socket's own inode (cheaper than reading the link's text).
                var status = stat()
                let found = withUnsafeBytes(of: &descriptor.pointee.d_name) { name -> Bool in
                    guard let name = name.baseAddress?.assumingMemoryBound(to: CChar.self), name.pointee != 0x2E else { return false }
                    return fstatat(folder, name, &status, 0) == 0
                }
                if found, status.st_mode & S_IFMT == S_IFSOCK, status.st_ino == UInt(inode) {
                    holders.append(pid)
                    break
                }
            }
        }
        return holders.sorted()
    }

    private static func read32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) }
    }

    private static func read16(_ bytes: [UInt8], _ at: Int) -> UInt16 {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) }
    }
}
