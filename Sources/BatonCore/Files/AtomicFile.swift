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

/// Whole-file writes that a crash cannot tear: the bytes go to a temporary file beside the target (mode 0600),
/// which is flushed to disk and then renamed over the target, and the folder is flushed so the rename itself is
/// durable. A reader sees the old file or the new one, never a mixture.
///
/// In BatonCore (package access) so that the agent's state and the association cache (BatonAssociations) write the
/// same way; each throws its own error type, made by `failure` at the point of failure (errno still set).
package enum AtomicFile {
    /// A named point in a write, for crash tests: `BATON_CRASH_AT=<name>` makes the process exit there at once.
    package enum Step: String {
        case tempWritten = "temp-written"
        case renamed
    }

    static let crashPoint = ProcessInfo.processInfo.environment["BATON_CRASH_AT"]

    package static func store<Failure: Error>(_ data: Data, at url: URL, failure: (String) -> Failure) throws(Failure) {
        let folder = url.deletingLastPathComponent().path
        let temporary = "\(folder)/.\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure("cannot create \(temporary)") }
        var written = 0
        let result: Int = data.withUnsafeBytes { buffer in
            while written < buffer.count {
                let count = write(descriptor, buffer.baseAddress.map { $0 + written }, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    return -1
                }
                written += count
            }
            return 0
        }
        guard result == 0, fsync(descriptor) == 0 else {
            let error = failure("cannot write \(temporary)")
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        crash(at: .tempWritten)
        guard rename(temporary, url.path) == 0 else {
            let error = failure("cannot replace \(url.path)")
            unlink(temporary)
            throw error
        }
        crash(at: .renamed)
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            _ = fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }

    /// Removes temporary files an interrupted write left in `folder`.
    package static func removeLeftovers(in folder: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasPrefix(".") && name.contains(".tmp-") {
            unlink(folder.appendingPathComponent(name).path)
        }
    }

    package static func crash(at step: Step) {
        if crashPoint == step.rawValue { _exit(86) }
    }

    /// `what`, and the system's words for the last error (call it before anything else can set errno).
    package static func describe(_ what: String) -> String {
        "\(what): \(String(cString: strerror(errno)))"
    }
}
