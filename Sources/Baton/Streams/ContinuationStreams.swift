import Foundation
import NIOCore

/// A continuation stream between the continuing app and the originating one (F1–F3): what one side writes to its
/// ``output``, the other reads from its ``input``, in order, checksummed by the sessions' TLS.
///
/// The continuing app asks for one with ``UserActivity/continuationStreams()`` after its activity arrived; the
/// originating app gets the other end in ``UserActivityDelegate/userActivity(_:didReceive:)``. Meant for a request
/// and a reply (write, ``ContinuationStreamWriter/finish()``, read to the end), but a live two-way channel works too.
///
/// - Backpressure: ``ContinuationStreamWriter/write(_:)`` returns only once the bytes fit in a bounded buffer; when
///   the reader on the other device is slow, the agents stop taking bytes and the writer waits.
/// - Half-close: ``ContinuationStreamWriter/finish()`` ends this side's writing; the other side's reader then ends
///   cleanly, and it may still write back.
/// - Ending abnormally: both ``input`` and ``output`` throw a ``ContinuationError`` with the reason (`appGone` when the
///   other app closed or quit, `peerGone` when the other device went away, `agentGone` when this device's agent did).
/// - Closing: once both sides have finished, and each has read the other's end, the stream is over and its
///   connection closes by itself. ``close()`` drops both directions at once; so does dropping every copy of the
///   streams before the stream is over (once what was written has left).
///
/// Limits (docs/PROTOCOL.md §8): 8 streams open at once per app (either end), 16 per pair of devices; past them the
/// request fails `tooManyStreams`.
public struct ContinuationStreams: Sendable {
    /// What the other side writes.
    public let input: ContinuationStreamReader
    /// What this side writes.
    public let output: ContinuationStreamWriter

    let holder: StreamHolder

    init(_ end: StreamEnd) {
        holder = StreamHolder(end)
        input = ContinuationStreamReader(holder: holder)
        output = ContinuationStreamWriter(holder: holder)
    }

    /// Aborts the stream, both directions, at once: bytes not yet sent are dropped; the other side's reader and
    /// writer fail with `appGone` (unless both sides had finished). Reads and writes here fail with `streamClosed`.
    public func close() {
        holder.end.close()
    }

    /// How the stream's bytes travel (issue 30): `direct` when the two apps hold a TLS connection of their own,
    /// `relayed` when they go through both agents (an agent or app from before direct streams, a bus app, an agent in
    /// memory, or `BATON_STREAMS=relayed`). Either way the stream behaves the same.
    public var path: StreamPath {
        holder.end.path
    }
}

/// The bytes the other side writes, as chunks of `Data` in order (F3). The sequence finishes when the other side
/// calls ``ContinuationStreamWriter/finish()``, and throws a ``ContinuationError`` when the stream ends abnormally
/// (after the bytes that arrived before). Iterate it from one task at a time; a second loop continues where the
/// first stopped.
public struct ContinuationStreamReader: AsyncSequence, Sendable {
    public typealias Element = Data

    let holder: StreamHolder

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(holder: holder)
    }

    /// Reads chunks as they arrive: each is what was waiting, at most 1 MiB.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let holder: StreamHolder

        /// The next chunk, or nil once the other side finished.
        /// - Throws: ``ContinuationError`` with the reason the stream ended (`appGone`, `peerGone`, `agentGone`,
        ///   `protocolViolation`, `streamClosed` after ``ContinuationStreams/close()``); `CancellationError` when the
        ///   task is cancelled while it waits.
        public mutating func next() async throws -> Data? {
            try await Self.chunk(from: holder.end)
        }

        /// ``next()`` for a caller on an actor (the main actor, say), which `for try await` uses: the wait itself
        /// happens off it.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> Data? {
            try await Self.chunk(from: holder.end)
        }

        private static func chunk(from end: StreamEnd) async throws -> Data? {
            switch try await end.read() {
            case .bytes(let buffers): return Data(buffers)
            case .end: return nil
            case .failed(let error): throw error
            }
        }
    }

    /// Everything until the other side finishes, for a request or a reply of bounded size.
    /// - Throws: as ``AsyncIterator/next()``, and ``ContinuationError`` `tooLarge` past `limit` bytes.
    public func readAll(limit: Int = 64 << 20) async throws -> Data {
        var all = Data()
        for try await chunk in self {
            guard all.count + chunk.count <= limit else {
                throw ContinuationError(.tooLarge, "the stream carried more than \(limit) bytes")
            }
            all.append(chunk)
        }
        return all
    }
}

/// Writes to the other side (F3).
public struct ContinuationStreamWriter: Sendable {
    let holder: StreamHolder

    /// Sends `data`, in frames of at most 256 KiB; returns once it is on its way and there is room for more, so a
    /// writer never gets ahead of a slow reader by more than a few MiB (backpressure).
    /// - Throws: ``ContinuationError``: why the stream ended (`appGone`, `peerGone`, `agentGone`, ...), or
    ///   `streamClosed` after ``finish()`` or ``ContinuationStreams/close()``; `CancellationError` when the task is
    ///   cancelled while it waits for room (part of `data` may have been sent).
    public func write(_ data: Data) async throws {
        try await holder.end.write(data)
    }

    /// ``write(_:)`` for bytes already in a `ByteBuffer`, sent as they are, with no copy (issue 30: the copy into
    /// the frame is most of what separates a direct stream from a bare TLS copy). `package` while it is measured
    /// (`baton bench stream`), not yet offered to apps.
    package func write(_ buffer: ByteBuffer) async throws {
        try await holder.end.write(buffer)
    }

    /// Ends this side's writing (a half-close): the other side's reader finishes after the bytes already sent, and
    /// this side can still read what the other writes back.
    /// - Throws: ``ContinuationError`` as ``write(_:)``; `streamClosed` when already finished.
    public func finish() async throws {
        try await holder.end.finish()
    }
}

/// Keeps a stream's connection open while any copy of its streams is alive; when the last one goes, a stream not
/// yet over is closed (``StreamEnd/release()``). Reader and writer share one, so a task may keep only the half it
/// uses.
final class StreamHolder: Sendable {
    let end: StreamEnd

    init(_ end: StreamEnd) {
        self.end = end
    }

    deinit {
        end.release()
    }
}

extension Data {
    /// The readable bytes of `buffers`, in order: a buffer that is most of its storage (a direct stream's piece,
    /// issue 30) without a copy, the `Data` keeping the storage alive (nothing writes to a buffer the stream handed
    /// on); a slice of a larger read, or several buffers, gathered with one copy, so a chunk never holds on to memory
    /// beyond its own bytes.
    init(_ buffers: [ByteBuffer]) {
        if buffers.count == 1, let only = buffers.first, only.storageCapacity <= 2 * only.readableBytes {
            self = only.withUnsafeReadableBytesWithStorageManagement { bytes, storage in
                guard let base = bytes.baseAddress, bytes.count > 0 else { return Data() }
                _ = storage.retain()
                return Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .custom { _, _ in storage.release() })
            }
            return
        }
        if buffers.count == 1, let only = buffers.first {
            self.init(only.readableBytesView)
            return
        }
        self.init(capacity: buffers.reduce(0) { $0 + $1.readableBytes })
        for buffer in buffers {
            buffer.withUnsafeReadableBytes { bytes in
                if let base = bytes.baseAddress { append(base.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
            }
        }
    }
}
