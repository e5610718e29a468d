import Baton
import BatonEmbedded
import BatonProtocol
import BatonRegistry
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import ShopSnapKit
import Synchronization

/// Two ShopSnap apps on two embedded agents of one account (laptop and desktop) with a continuation stream between
/// them: the laptop's activity supports streams, the desktop continued it and asked for them (F1–F3), on the path
/// the agents were configured with (issue 30: `direct`, the apps' own TLS connection, or `relayed` through both
/// agents). Each app's input is read for the whole run by a ``StreamDrain``.
@MainActor
final class BatonStreamPair {
    /// Which way a copy goes.
    enum Direction {
        /// From the continuing (desktop) app to the originating (laptop) app.
        case toOriginating
        /// From the originating app to the continuing app.
        case toContinuing
        /// Both at once.
        case bothWays
    }

    /// What the slow-reader run found.
    struct SlowRun {
        var figures: [BenchFigure]
        var notes: [String]
    }

    /// What this process (two agents, two apps) may hold for one relayed stream whose reader is slow, by design
    /// (docs/ARCHITECTURE.md, "Continuation streams"). The agents: one window (StreamFlow.defaultWindow) between them,
    /// since the receiving agent credits bytes only once its app's socket took them, plus what the sending agent read
    /// from its app past the credit (one turn of NIO's reads: 4 × 64 KiB). The reading app's library: it stops reading
    /// its socket at 1 MiB buffered (plus that turn's reads), and hands over chunks of up to 1 MiB. The writing app's
    /// library: a write returns while less than its 1 MiB high-water mark waits, plus the 256 KiB frame in hand. The
    /// kernel's socket buffers are not the process's resident memory.
    static let relayedMemoryBound = StreamFlow.defaultWindow + (256 << 10) + ((1 << 20) + (256 << 10) + (1 << 20)) + ((1 << 20) + (256 << 10))
    static let relayedMemoryBoundText = "agents 768 KiB (512 KiB window + 256 KiB read past credit) + reading app 2.25 MiB (1 MiB buffered "
        + "+ 256 KiB read + 1 MiB chunk in hand) + writing app 1.25 MiB (1 MiB high water + 256 KiB frame)"

    /// What this process may hold for one direct stream whose reader is slow (issue 30). The agents hold nothing of
    /// it: they introduced the apps and are out of the byte path, and TCP's own backpressure stops the writer. The
    /// reading app's library reads one buffer of at most 256 KiB of ciphertext a turn (`maxMessagesPerRead` 1), which
    /// NIOSSL decrypts into at most 256 KiB of plaintext, and ``StreamFrameSplitter`` copies each data frame's bytes
    /// out of it at once (so NIOSSL's buffer is free again); reading stops at 1 MiB buffered, once the turn is over,
    /// and NIOSSL may read one turn more after a turn that ended mid-record. The reader is handed chunks of up to
    /// 1 MiB. The writing app's library: a write returns while less than its 1 MiB high-water mark waits, each byte
    /// held once (plaintext until NIOSSL encrypts it on flush, then ciphertext until the socket takes it), plus the
    /// 256 KiB frame in hand and its ciphertext. BoringSSL's record buffers under 72 KiB. The kernel's socket buffers
    /// are not the process's resident memory. Before the splitter (ByteToMessageHandler behind NIOSSL, four 1 MiB reads
    /// a turn) the same runs rose 8.7 to 13.0 MiB against 12.57; with it, 0.02 to 1.3 MiB (release, 11-27).
    static let directMemoryBound = ((1 << 20) + 2 * (256 << 10) + 2 * (256 << 10) + (1 << 20)) + ((1 << 20) + (256 << 10) + (256 << 10)) + (72 << 10)
    static let directMemoryBoundText = "agents nothing (out of the byte path) + reading app 3 MiB (1 MiB buffered + two read turns' "
        + "256 KiB of ciphertext and 256 KiB of plaintext + 1 MiB chunk in hand) + writing app 1.5 MiB (1 MiB high water + 256 KiB "
        + "frame + 256 KiB of its ciphertext) + TLS record buffers 72 KiB"

    /// The bound for a stream on `path`, and how it is made up.
    static func memoryBound(_ path: StreamPath) -> (bytes: Int, text: String) {
        switch path {
        case .direct: (directMemoryBound, directMemoryBoundText)
        case .relayed: (relayedMemoryBound, relayedMemoryBoundText)
        }
    }

    /// What one write hands the library.
    nonisolated static let chunk = Data(repeating: 0x5A, count: 256 << 10)
    /// How long the slow reader pauses after each chunk.
    static let pause = Duration.milliseconds(10)

    /// How the stream's bytes travel.
    let path: StreamPath
    let devices: LocalDevices
    let folder: URL
    let laptop: BatonApplication
    let desktop: BatonApplication
    /// The originating activity, kept so its (weak) delegate keeps its streams coming.
    let activity: UserActivity
    /// The desktop's continued activity, which opens more streams (``timeToFirstByte()``).
    let continued: UserActivity
    let acceptor: StreamAcceptor
    let continuing: ContinuationStreams
    let originating: ContinuationStreams
    let continuingInput: StreamDrain
    let originatingInput: StreamDrain
    let drains: [Task<Void, Never>]

    private init(
        path: StreamPath, devices: LocalDevices, folder: URL, laptop: BatonApplication, desktop: BatonApplication,
        activity: UserActivity, continued: UserActivity, acceptor: StreamAcceptor, continuing: ContinuationStreams,
        originating: ContinuationStreams
    ) {
        self.path = path
        self.devices = devices
        self.folder = folder
        self.laptop = laptop
        self.desktop = desktop
        self.activity = activity
        self.continued = continued
        self.acceptor = acceptor
        self.continuing = continuing
        self.originating = originating
        let continuingInput = StreamDrain(pause: Self.pause)
        let originatingInput = StreamDrain(pause: Self.pause)
        self.continuingInput = continuingInput
        self.originatingInput = originatingInput
        let (fromOriginating, fromContinuing) = (continuing.input, originating.input)
        drains = [
            Task.detached { await continuingInput.run(fromOriginating) },
            Task.detached { await originatingInput.run(fromContinuing) },
        ]
    }

    /// Starts the devices and apps, their agents set to `path`, continues the laptop's activity on the desktop and
    /// opens streams.
    /// - Throws: ``CommandLineError`` when the stream went another way than `path` (`BATON_STREAMS=relayed` set, or
    ///   the direct path could not be set up).
    static func open(path: StreamPath) async throws -> BatonStreamPair {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-bench-stream-\(UUID().uuidString)")
        try writeShopSnapBundle(in: folder)
        let devices: LocalDevices
        do {
            devices = try await LocalDevices.start(names: ["laptop", "desktop"], apps: AppRegistry.load(searchPaths: [folder])) { configuration in
                configuration.advertInterval = 30
                configuration.nearbyTimeToLive = 300
                configuration.streamPath = path
            }
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
        let laptop = BatonApplication()
        let desktop = BatonApplication()
        do {
            let (laptopAgent, desktopAgent) = (devices.agents[0], devices.agents[1])
            let seen = NIOLockedValueBox(false)
            desktopAgent.observeNearby { _, change in
                if change == .added || change == .replaced { seen.withLockedValue { $0 = true } }
            }
            try await laptop.connect(bundleIdentifier: shopSnapBundleIdentifier, socketPath: laptopAgent.socketPath)
            try await desktop.connect(bundleIdentifier: shopSnapBundleIdentifier, socketPath: desktopAgent.socketPath)
            var events = desktop.events.makeAsyncIterator()

            let acceptor = StreamAcceptor()
            let activity = try UserActivity(activityType: ActivityTypeView, application: laptop)
            activity.supportsContinuationStreams = true
            activity.delegate = acceptor
            activity.becomeCurrent()
            let start = DispatchTime.now().uptimeNanoseconds
            while !seen.withLockedValue({ $0 }) {
                guard seconds(since: start) < 5 else { throw CommandLineError("the laptop's activity never reached the desktop within 5 s") }
                try await Task.sleep(for: .milliseconds(1))
            }
            let outcome = await desktopAgent.continueNearby(device: "laptop")
            if let failure = outcome.failure { throw CommandLineError("continue failed: \(outcome.message) [\(failure)]") }
            var continued: UserActivity?
            while continued == nil, let event = await events.next(isolation: #isolation) {
                if case .continued(let activity) = event { continued = activity }
                if case .failed(_, let error) = event { throw CommandLineError("continue failed: \(error)") }
            }
            guard let continued else { throw CommandLineError("the desktop app's event stream ended") }
            let continuing = try await continued.continuationStreams()
            let originating = try await acceptor.next(within: .seconds(15))
            for (side, streams) in [("continuing", continuing), ("originating", originating)] where streams.path != path {
                continuing.close()
                originating.close()
                throw CommandLineError(
                    "the bench asked for a \(path.rawValue) stream, but the \(side) app's stream is \(streams.path.rawValue)"
                        + (ProcessInfo.processInfo.environment["BATON_STREAMS"].map { " (BATON_STREAMS=\($0) is set)" } ?? "")
                )
            }
            return BatonStreamPair(
                path: path, devices: devices, folder: folder, laptop: laptop, desktop: desktop, activity: activity,
                continued: continued, acceptor: acceptor, continuing: continuing, originating: originating
            )
        } catch {
            laptop.disconnect()
            desktop.disconnect()
            await devices.shutdown()
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    /// Copies `bytes` (each way, for ``Direction/bothWays``); seconds from the first write to the last byte read.
    func copy(_ bytes: Int, _ direction: Direction) async throws -> Double {
        let (continuingOutput, originatingOutput) = (continuing.output, originating.output)
        let (continuingInput, originatingInput) = (self.continuingInput, self.originatingInput)
        switch direction {
        case .toOriginating:
            return try await Self.copy(bytes, from: continuingOutput, to: originatingInput)
        case .toContinuing:
            return try await Self.copy(bytes, from: originatingOutput, to: continuingInput)
        case .bothWays:
            let there = (target: originatingInput.received + bytes, start: DispatchTime.now().uptimeNanoseconds)
            let back = continuingInput.received + bytes
            async let arrivedThere = originatingInput.waitUntil(received: there.target)
            async let arrivedBack = continuingInput.waitUntil(received: back)
            async let wroteThere: Void = Self.write(bytes, to: continuingOutput)
            async let wroteBack: Void = Self.write(bytes, to: originatingOutput)
            try await wroteThere
            try await wroteBack
            let end = max(try await arrivedThere, try await arrivedBack)
            return Double(end - there.start) / 1e9
        }
    }

    /// Seconds from the first of `bytes` written to `output` until `input` has them all; with `buffers`, written as
    /// `ByteBuffer`s (the library's package write, no copy in) rather than `Data`.
    nonisolated static func copy(_ bytes: Int, from output: ContinuationStreamWriter, to input: StreamDrain, buffers: Bool = false) async throws -> Double {
        let target = input.received + bytes
        async let arrived = input.waitUntil(received: target)
        let start = DispatchTime.now().uptimeNanoseconds
        if buffers {
            var left = bytes
            while left > 0 {
                let count = min(left, bufferChunk.readableBytes)
                try await output.write(count == bufferChunk.readableBytes ? bufferChunk : bufferChunk.getSlice(at: 0, length: count) ?? bufferChunk)
                left -= count
            }
        } else {
            try await write(bytes, to: output)
        }
        return Double(try await arrived - start) / 1e9
    }

    /// What one `ByteBuffer` write hands the library.
    nonisolated static let bufferChunk = ByteBuffer(repeating: 0x5A, count: 256 << 10)

    /// The continuing app writes `bytes` as `ByteBuffer`s to the originating app: the design change issue 30's floor
    /// points at, measured.
    func copyBuffers(_ bytes: Int) async throws -> Double {
        try await Self.copy(bytes, from: continuing.output, to: originatingInput, buffers: true)
    }

    /// Writes `bytes` in 256 KiB writes; `progress` counts what the library took.
    nonisolated static func write(_ bytes: Int, to output: ContinuationStreamWriter, progress: NIOLockedValueBox<Int>? = nil) async throws {
        var left = bytes
        while left > 0 {
            let count = min(left, chunk.count)
            try await output.write(count == chunk.count ? chunk : chunk.prefix(count))
            left -= count
            progress?.withLockedValue { $0 += count }
        }
    }

    /// Opens another stream and times its first byte: seconds from the continuing app calling
    /// `continuationStreams()` to the originating app having read the first byte the continuing app wrote on it.
    /// Both ends are closed after.
    func timeToFirstByte() async throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        let streams = try await continued.continuationStreams()
        defer { streams.close() }
        try await streams.output.write(Data([0x5A]))
        let other = try await acceptor.next(within: .seconds(15))
        defer { other.close() }
        var input = other.input.makeAsyncIterator()
        guard let first = try await input.next(isolation: #isolation), !first.isEmpty else {
            throw CommandLineError("a new \(path.rawValue) stream ended before its first byte")
        }
        let end = DispatchTime.now().uptimeNanoseconds
        guard streams.path == path, other.path == path else {
            throw CommandLineError("a new stream went \(streams.path.rawValue)/\(other.path.rawValue), not \(path.rawValue)")
        }
        return Double(end - start) / 1e9
    }

    /// Copies `bytes` both ways at full speed, so that what a copy allocates once is there before memory is measured.
    func warmUp(bytes: Int) async throws {
        _ = try await copy(bytes, .bothWays)
    }

    /// The originating app writes `bytes` while the continuing app's reader pauses after each chunk for `seconds`, then
    /// reads the rest at full speed; this process's resident memory is watched throughout.
    func slowReader(bytes: Int, seconds slowSeconds: Double) async throws -> SlowRun {
        let output = originating.output
        let input = continuingInput
        let peakWasReset = ResidentMemory.resetPeak()
        let before = ResidentMemory.current() ?? 0
        let sampler = ResidentMemory.sampling()
        let startReceived = input.received
        let written = NIOLockedValueBox(0)
        let slowNanoseconds = UInt64(slowSeconds * 1e9)
        let start = DispatchTime.now().uptimeNanoseconds
        input.slow(until: start + slowNanoseconds)
        async let arrived = input.waitUntil(received: startReceived + bytes)
        async let wrote: Void = Self.write(bytes, to: output, progress: written)
        // Bytes the writer handed over that the reader has not had, at most, while the reader is slow.
        var inFlight = 0
        while DispatchTime.now().uptimeNanoseconds - start < slowNanoseconds, input.received - startReceived < bytes {
            try await Task.sleep(for: .milliseconds(10))
            inFlight = max(inFlight, written.withLockedValue { $0 } - (input.received - startReceived))
        }
        let slowRead = input.received - startReceived
        let slowChunks = input.chunks
        try await wrote
        _ = try await arrived
        // The reader may have read everything before its slow time was up: it is slow no more, or the copies after
        // would be timed against its pauses.
        input.slow(until: 0)
        let sampled = sampler.stop()
        let peak = max(sampled, peakWasReset ? ResidentMemory.peak() ?? 0 : 0)
        let growth = max(peak - before, 0)

        let bound = Self.memoryBound(path)
        let size = StreamBench.sizeText(bytes)
        let slowText = "slow reader (\(size), 10 ms pauses), \(path.rawValue) stream"
        var notes = [
            "slow reader, \(path.rawValue) stream: \(slowRead) of \(bytes) bytes read while slow (\(slowChunks) chunks in all); resident memory "
                + "\(before / 1024) KiB before, \(peak / 1024) KiB at the peak"
        ]
        if !peakWasReset { notes.append("the kernel's peak (VmHWM) could not be reset: the peak is the 1 ms sampler's alone") }
        return SlowRun(
            figures: [
                .kibibytes(
                    "resident memory growth, \(slowText)", growth,
                    baseline: "the design's bound for one \(path.rawValue) stream: " + bound.text, bound.bytes,
                    target: "≤ \(bound.bytes / 1024) KiB", met: growth <= bound.bytes
                ),
                .kibibytes(
                    "written, not yet read (most), \(slowText)", inFlight,
                    baseline: "the design's bound (kernel socket buffers on the way come on top)", bound.bytes
                ),
            ],
            notes: notes
        )
    }

    /// Closes the streams, disconnects the apps and stops the devices.
    func close() async {
        continuing.close()
        originating.close()
        for drain in drains { drain.cancel() }
        laptop.disconnect()
        desktop.disconnect()
        await devices.shutdown()
        try? FileManager.default.removeItem(at: folder)
    }
}

/// The originating app's delegate: hands the streams it is given (F3) to whoever waits for them, in order.
@MainActor
final class StreamAcceptor: UserActivityDelegate {
    /// Streams received that no one has taken yet.
    private var received: [ContinuationStreams] = []
    /// Who waits for the next streams (nil: the wait timed out).
    private var waiter: (id: UInt64, continuation: CheckedContinuation<ContinuationStreams?, Never>)?
    private var nextID: UInt64 = 0

    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {
        guard let waiter else { return received.append(streams) }
        self.waiter = nil
        waiter.continuation.resume(returning: streams)
    }

    /// The next streams received: at once when they came already, else as soon as they come (no polling, so the
    /// time to a stream's first byte is not rounded up).
    /// - Throws: ``CommandLineError`` when none came within `limit`.
    func next(within limit: Duration) async throws -> ContinuationStreams {
        if !received.isEmpty { return received.removeFirst() }
        precondition(waiter == nil, "one wait at a time for the originating app's streams")
        nextID += 1
        let id = nextID
        let timer = Task { @MainActor [weak self] in
            try? await Task.sleep(for: limit)
            guard let self, let waiter = self.waiter, waiter.id == id else { return }
            self.waiter = nil
            waiter.continuation.resume(returning: nil)
        }
        defer { timer.cancel() }
        let streams = await withCheckedContinuation { waiter = (id, $0) }
        guard let streams else { throw CommandLineError("the originating app received no streams within \(limit)") }
        return streams
    }
}

/// Reads one stream's input for a bench's whole run, counting bytes and stamping when they arrive; callers wait for a
/// total, or make it pause after each chunk for a while (a slow app).
final class StreamDrain: Sendable {
    struct Waiter {
        let total: Int
        let continuation: CheckedContinuation<UInt64, Error>
    }

    struct State {
        var received = 0
        var chunks = 0
        /// When the latest chunk arrived (uptime nanoseconds).
        var latest: UInt64 = 0
        /// Until when (uptime nanoseconds) the reader pauses after each chunk.
        var slowUntil: UInt64 = 0
        var waiter: Waiter?
        /// Why the input ended, once it has.
        var ended: String?
    }

    let state = Mutex(State())
    let pause: Duration

    init(pause: Duration) {
        self.pause = pause
    }

    /// Bytes read so far.
    var received: Int { state.withLock { $0.received } }
    /// Chunks read so far.
    var chunks: Int { state.withLock { $0.chunks } }

    /// Pauses after each chunk until `deadline` (uptime nanoseconds).
    func slow(until deadline: UInt64) {
        state.withLock { $0.slowUntil = deadline }
    }

    /// Reads `input` until it ends.
    func run(_ input: ContinuationStreamReader) async {
        do {
            for try await chunk in input {
                let now = DispatchTime.now().uptimeNanoseconds
                let (reached, slow) = state.withLock { state -> (CheckedContinuation<UInt64, Error>?, Bool) in
                    state.received += chunk.count
                    state.chunks += 1
                    state.latest = now
                    guard let waiter = state.waiter, state.received >= waiter.total else { return (nil, now < state.slowUntil) }
                    state.waiter = nil
                    return (waiter.continuation, now < state.slowUntil)
                }
                reached?.resume(returning: now)
                if slow { try? await Task.sleep(for: pause) }
            }
            end("the stream ended")
        } catch {
            end("the stream failed: \(error)")
        }
    }

    func end(_ reason: String) {
        let waiter = state.withLock { state -> Waiter? in
            state.ended = reason
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.continuation.resume(throwing: CommandLineError("\(reason) before \(waiter?.total ?? 0) bytes had arrived"))
    }

    /// When (uptime nanoseconds) `total` bytes in all had arrived.
    func waitUntil(received total: Int) async throws -> UInt64 {
        try await withCheckedThrowingContinuation { continuation in
            let now: Result<UInt64, Error>? = state.withLock { state in
                if state.received >= total { return .success(state.latest) }
                if let ended = state.ended {
                    return .failure(CommandLineError("\(ended) after \(state.received) of \(total) bytes"))
                }
                precondition(state.waiter == nil, "one wait at a time on a stream's input")
                state.waiter = Waiter(total: total, continuation: continuation)
                return nil
            }
            if let now { continuation.resume(with: now) }
        }
    }
}
