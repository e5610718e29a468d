import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// Tells when files in some folders change, through the kernel (inotify), so nothing polls (issue 11 parts 7 and 8):
/// the state folder (a roster another `baton` command wrote) and the app folders (bundles installed, changed or
/// removed). Changes within ``settle`` of each other are reported once, after the last. Not recursive: each folder
/// to watch is named (``watch(_:)``), and ``replaceWatches(_:)`` follows a changing set (the bundles in an app folder).
///
/// `@unchecked Sendable`: `source` is a Dispatch source (its methods may be called from any thread), the descriptor
/// and callback are immutable, and the rest is in `state`, under its lock.
final class FolderWatcher: @unchecked Sendable {
    /// How long a burst of changes (an editor's save, a copied bundle) may last before it is reported.
    static let settle: DispatchTimeInterval = .milliseconds(150)

    private struct State {
        var watches: [Int32: String] = [:]
        var pending: Set<String> = []
        var flush: DispatchWorkItem?
        var closed = false
    }

    private let descriptor: Int32
    private let source: DispatchSourceRead
    private let queue = DispatchQueue(label: "baton.folder-watcher")
    private let state = NIOLockedValueBox(State())
    private let changed: @Sendable (Set<String>) -> Void
    private let ignoring: Set<String>
    /// Rung by the source's cancel handler, on `queue` after whatever of the watcher ran there (``untilClosed()``).
    private let ended = Doorbell()

    /// Nil when the kernel gives no inotify descriptor (too many watchers already): changes are then seen on restart.
    /// Changes to files named in `ignoring` are not reported (the state folder's lock file, which every reader of
    /// the state opens for writing: reporting it would make each report cause the next).
    init?(ignoring: Set<String> = [], changed: @escaping @Sendable (_ folders: Set<String>) -> Void) {
        self.ignoring = ignoring
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        self.changed = changed
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler { [weak self] in self?.drain() }
        source.setCancelHandler { [ended] in
            Glibc.close(descriptor)
            ended.ring()
        }
        source.resume()
    }

    /// The events that mean a file in the folder is new, rewritten, renamed or gone.
    private static let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF)

    /// Watches `folder` (its entries, not deeper). False when it cannot be watched (missing, not a folder).
    @discardableResult
    func watch(_ folder: String) -> Bool {
        let watch = inotify_add_watch(descriptor, folder, Self.mask | UInt32(IN_ONLYDIR))
        guard watch >= 0 else { return false }
        state.withLockedValue { $0.watches[watch] = folder }
        return true
    }

    /// Watches exactly `folders` from now on (those not named are no longer watched).
    func replaceWatches(_ folders: Set<String>) {
        let old = state.withLockedValue { $0.watches }
        for (watch, folder) in old where !folders.contains(folder) {
            inotify_rm_watch(descriptor, watch)
            state.withLockedValue { _ = $0.watches.removeValue(forKey: watch) }
        }
        let watched = Set(old.values)
        for folder in folders where !watched.contains(folder) { watch(folder) }
    }

    /// Stops watching; no report comes after this returns.
    func close() {
        let flush = state.withLockedValue { state -> DispatchWorkItem? in
            state.closed = true
            return state.flush
        }
        flush?.cancel()
        source.cancel()
    }

    /// Returns once ``close()`` has taken effect on the watcher's queue: its descriptor closed, no report running, and
    /// none can follow (Dispatch runs no event handler after the cancel handler; a pending report was cancelled, or
    /// finds it closed). What a test awaits, instead of a window in which nothing should come. One caller at a time.
    func untilClosed() async {
        await ended.wait()
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var folders: Set<String> = []
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= count {
                let (watch, length) = buffer.withUnsafeBytes { bytes in
                    let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (event.wd, Int(event.len))
                }
                let nameEnd = min(offset + header + length, count)
                let name = String(decoding: buffer[(offset + header)..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
                if !ignoring.contains(name), let folder = state.withLockedValue({ $0.watches[watch] }) { folders.insert(folder) }
                offset += header + length
            }
        }
        guard !folders.isEmpty else { return }
        state.withLockedValue { state in
            guard !state.closed else { return }
            state.pending.formUnion(folders)
            state.flush?.cancel()
            let flush = DispatchWorkItem { [weak self] in self?.report() }
            state.flush = flush
            queue.asyncAfter(deadline: .now() + Self.settle, execute: flush)
        }
    }

    private func report() {
        let folders = state.withLockedValue { state -> Set<String> in
            guard !state.closed else { return [] }
            defer { state.pending = [] }
            return state.pending
        }
        if !folders.isEmpty { changed(folders) }
    }
}
