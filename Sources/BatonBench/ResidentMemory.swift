import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// This process's resident memory, from /proc (Linux): what the embedded agents and apps of a bench hold, since they
/// share the process. Sampled on a thread of its own so a short peak between samples of the caller is still seen,
/// and read from the kernel's own high-water mark (`VmHWM`) when it can be reset for the run.
final class ResidentMemory: Sendable {
    /// Bytes resident now (`/proc/self/statm`'s second field, in pages), or nil when /proc cannot be read.
    static func current() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The kernel's peak resident bytes for this process (`VmHWM` in /proc/self/status), or nil.
    static func peak() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            // "VmHWM:     12345 kB"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 2, let kilobytes = Int(fields[1]) { return kilobytes * 1024 }
        }
        return nil
    }

    /// Resets the kernel's peak to what is resident now (`5` to /proc/self/clear_refs, Linux 4.0 and later); false when
    /// it cannot be.
    static func resetPeak() -> Bool {
        let descriptor = open("/proc/self/clear_refs", O_WRONLY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return write(descriptor, "5", 1) == 1
    }

    struct State {
        var highest = 0
        var running = true
    }

    let state = Mutex(State())
    let stopped = Mutex<Bool>(false)
    let interval: useconds_t

    private init(intervalMicroseconds: UInt32) {
        interval = intervalMicroseconds
    }

    /// A sampler that has started; ``stop()`` returns the highest resident bytes it saw.
    static func sampling(everyMicroseconds interval: UInt32 = 1_000) -> ResidentMemory {
        let sampler = ResidentMemory(intervalMicroseconds: interval)
        Thread.detachNewThread { sampler.sample() }
        return sampler
    }

    private func sample() {
        while true {
            let resident = Self.current() ?? 0
            let running = state.withLock { state in
                state.highest = max(state.highest, resident)
                return state.running
            }
            guard running else { break }
            usleep(interval)
        }
        stopped.withLock { $0 = true }
    }

    /// Stops sampling; the highest resident bytes seen, the sampling thread having finished.
    func stop() -> Int {
        state.withLock { $0.running = false }
        while !stopped.withLock({ $0 }) { usleep(100) }
        return state.withLock { $0.highest }
    }
}
