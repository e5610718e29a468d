#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a process must run to be a registered app (issue 28 item 3; PROTOCOL §7 check 4, §11 "Identity").
///
/// A compiled app is its executable: `/proc/PID/exe`. A script is not: the kernel runs its `#!` interpreter, so
/// `/proc/PID/exe` of a Python app is `/usr/bin/python3.11`, which every Python program of the user runs. For a script
/// the process must run the script's interpreter *and* name the script as the program it runs (``ProcessImage``).
///
/// What this does not stop: any process of the same user can run the interpreter on the real script with code of its
/// own injected (`PYTHONSTARTUP`, `python3 -i`, a `sitecustomize` on its path), just as `LD_PRELOAD` injects code
/// into a compiled app's real executable. It tells the app's program from *another* program of the same user; a
/// user's processes are not isolated from each other on Linux, and nothing here pretends to make them so.
enum AppProgram: Sendable, Hashable {
    /// A compiled program (or anything without a `#!` line): `/proc/PID/exe` must be this real path.
    case executable(String)
    /// A script: the process runs `interpreter` (a real path) and its command line names `script` (a real path) as
    /// the program it runs.
    case script(interpreter: String, script: String)

    /// The most bytes of a file read for its `#!` line: the kernel's own bound (`BINPRM_BUF_SIZE`, 256 since Linux
    /// 5.1); a longer line is not a script the kernel would run as one.
    static let maximumShebangBytes = 256

    /// What runs as the registered executable `file`: a script's interpreter and the script when it starts with `#!`
    /// (`#!/usr/bin/env NAME` finds NAME on `searchPath`, as env would), else the file itself. Only the first line is
    /// read, at most ``maximumShebangBytes``.
    static func of(_ file: URL, searchPath: [String]) -> AppProgram {
        let path = resolvedPath(file)
        guard let line = shebang(of: path), let interpreter = interpreter(line, searchPath: searchPath) else { return .executable(path) }
        return .script(interpreter: interpreter, script: path)
    }

    /// The `#!` line of the file at `path` (without `#!` and the newline), or nil when it has none within the bound.
    static func shebang(of path: String) -> String? {
        // Non-blocking: a FIFO put in the executable's place must not hang the agent.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: maximumShebangBytes)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, maximumShebangBytes) }
        guard count > 2, bytes[0] == UInt8(ascii: "#"), bytes[1] == UInt8(ascii: "!"),
            let end = bytes[2..<count].firstIndex(of: UInt8(ascii: "\n"))
        else { return nil }
        return String(validating: bytes[2..<end], as: UTF8.self)
    }

    /// The real path of the interpreter a `#!` line names: its first word, or for `env` (plain or `env -S`) the program
    /// it runs, found on `searchPath`. Nil for a line naming nothing that exists.
    static func interpreter(_ line: String, searchPath: [String]) -> String? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let first = words.first, first.hasPrefix("/") else { return nil }
        guard first.hasSuffix("/env") else { return existing(first) }
        // The kernel passes everything after the interpreter as one argument: `env python3`, or `env -S python3 -u`.
        let rest = words.dropFirst().drop { $0 == "-S" }
        guard let name = rest.first, !name.hasPrefix("-") else { return nil }
        if name.hasPrefix("/") { return existing(name) }
        guard !name.contains("/") else { return nil }
        return searchPath.lazy.compactMap { existing($0 + "/" + name) }.first { access($0, X_OK) == 0 }
    }

    /// The real path of `path` when something is there.
    private static func existing(_ path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return resolvedPath(URL(fileURLWithPath: path))
    }

    /// What a person reads: the executable, or the interpreter running the script.
    var described: String {
        switch self {
        case .executable(let path): path
        case .script(let interpreter, let script): "\(interpreter) running \(script)"
        }
    }
}
