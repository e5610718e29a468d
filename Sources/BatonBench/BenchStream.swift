import ArgumentParser
import BatonCore
import Foundation

extension BenchCommand {
    struct Stream: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Continuation streams, direct and relayed, against bare TCP and TLS 1.3 copies: throughput, CPU, first byte, memory.",
            discussion: """
                Throughput (MB/s, 10^6 bytes a second), each figure the median of --rounds, every kind measured once \
                per round, interleaved, and timed from the first write to the last byte read:
                  • Baseline: --bytes over one loopback connection with swift-nio and swift-nio-ssl, mutual TLS 1.3 \
                between two device identities in the agent's own configuration, one way, each end on its own event \
                loop (the two processes a real copy has), 256 KiB buffers written while the channel is writable, the \
                handshake over before the clock starts; and the same over plain TCP, to show what TLS costs. Also \
                the TLS copy both ways at once (--bytes each way), and the TLS copy one way with one copy in and \
                one out (the writer copies each 256 KiB from a Data, the reader each read into a Data): the floor of \
                an app API of Data, which no stream library can go below, reported beside the direct stream.
                  • Baton: two pairs of devices (one account each) run embedded agents on loopback, with a ShopSnap \
                app on each in this process, one pair's agents set to each stream path (issue 30), both pairs open \
                for the whole run so each round measures both beside the same baselines. The laptop's activity \
                supports continuation streams; the desktop continues it and asks for streams. Direct: the agents \
                only introduce the apps, pass each the stream's TCP socket, and the apps speak mutual TLS 1.3 to each \
                other with the stream's own certificates (app → TLS → app). Relayed: app → agent (Unix socket) → \
                TLS 1.3 session → agent → app. On each path, --bytes from the continuing app to the originating one, \
                then back, then both ways at once, through the library's stream reader and writer with 256 KiB \
                writes. Targets, direct path: each way at least 0.9x the TLS copy, both ways at once at least 0.9x \
                the TLS copy both ways (per way). The relayed path's figures are reported beside them, not judged.
                  • CPU time per GiB moved (user and system, every thread of this process) for the stream each way and \
                the copies: with every part of the path on the same few cores, a path that costs more CPU per byte \
                cannot keep up, so this tells how much of a throughput ratio is CPU. Target, direct path: at most \
                1.2x the TLS copy's.
                Time to the first byte of a new stream: from the continuing app calling continuationStreams() to the \
                originating app having read the first byte the continuing app wrote on it, the median of --opens new \
                streams on each path (each closed after), direct against relayed; reported, not judged.
                Memory: before the rounds, on each path, the originating app writes --slow-bytes while the continuing \
                app's reader pauses 10 ms after each chunk for --slow-seconds, then reads the rest at full speed. \
                Reported: how far this process's resident memory rose over its level just before (the peak from the \
                kernel's VmHWM, reset for the run, and a 1 ms sampler), against what the design lets one stream hold; \
                the agents and the apps share the process. Relayed: one 512 KiB window for the two agents (the \
                receiving agent credits only what its app's socket took), the sending agent's last reads past the \
                credit (256 KiB), and each app library's own buffers (the reader's 1 MiB read ahead, a read turn and \
                the chunk in hand; the writer's 1 MiB of writes and a frame): 4.25 MiB in all. Direct: nothing in the \
                agents (they are out of the byte path; TCP's own backpressure stops the writer), the reading app's \
                1 MiB read ahead, two read turns of 256 KiB (ciphertext, and NIOSSL's plaintext of it, which the \
                frame splitter copies out at once), and the chunk in hand; the writing app's 1 MiB of writes \
                (plaintext or, once encrypted, ciphertext), a frame and its ciphertext; and BoringSSL's record \
                buffers: 4.57 MiB in all. A writer that did not wait would show the whole --slow-bytes. Also how many bytes were written but not yet read at most while the reader \
                was slow (the kernel's socket buffers on the way come on top of the bound there).
                """
        )

        @Option(help: "Bytes copied each way in each measurement.")
        var bytes = 1 << 30

        @Option(help: "Rounds of measurements; the median is reported.")
        var rounds = 3

        @Option(help: "Bytes written to the slow reader (at most --bytes).")
        var slowBytes = 64 << 20

        @Option(help: "Seconds the slow reader stays slow.")
        var slowSeconds = 3.0

        @Option(help: "New streams each path opens to time the first byte; the median is reported.")
        var opens = 20

        @Flag(help: "Print the results as JSON: {\"figures\": [...]}.")
        var json = false

        func validate() throws {
            guard (1 << 20...1 << 40).contains(bytes) else { throw ValidationError("--bytes must be between 1 MiB and 1 TiB.") }
            guard (1...100).contains(rounds) else { throw ValidationError("--rounds must be between 1 and 100.") }
            guard (1 << 20...1 << 40).contains(slowBytes) else { throw ValidationError("--slow-bytes must be between 1 MiB and 1 TiB.") }
            guard (0.1...600).contains(slowSeconds) else { throw ValidationError("--slow-seconds must be between 0.1 and 600.") }
            guard (1...1000).contains(opens) else { throw ValidationError("--opens must be between 1 and 1000.") }
        }

        func run() async throws {
            #if DEBUG
            if !json { print("note: this is a debug build; for real figures run `swift run -c release baton bench stream`\n") }
            #endif
            let bench = StreamBench(bytes: bytes, rounds: rounds, slowBytes: min(slowBytes, bytes), slowSeconds: slowSeconds, opens: opens)
            try await bench.run().print(json: json)
        }
    }
}

/// `baton bench stream`: continuation streams between two embedded agents, on each path, against bare copies, same
/// run.
@MainActor
struct StreamBench {
    let bytes: Int
    let rounds: Int
    let slowBytes: Int
    let slowSeconds: Double
    /// How many new streams each path opens for the time to the first byte.
    let opens: Int

    /// The direct path's targets against the bare TLS copy (issue 30): throughput at least this share of it...
    static let directThroughputTarget = 0.9
    /// ...and CPU time per byte at most this many times its.
    static let directCPUTarget = 1.2

    /// One copy: how long it took, and the CPU time this process spent meanwhile (every thread: agents, apps, the
    /// copy's two ends).
    struct Copy {
        var seconds: Double
        var cpuSeconds: Double
    }

    /// A copy `body` makes, returning the seconds it measured itself, with the CPU time spent meanwhile.
    func measure(_ body: () async throws -> Double) async throws -> Copy {
        let cpu = processCPUSeconds()
        let seconds = try await body()
        return Copy(seconds: seconds, cpuSeconds: processCPUSeconds() - cpu)
    }

    /// One path's copies and opens.
    struct PathSamples {
        var toOriginating: [Copy] = []
        var toContinuing: [Copy] = []
        var bothWays: [Copy] = []
        /// Seconds from asking for a new stream to its first byte read on the other side.
        var firstByte: [Double] = []
    }

    /// Copies, by what was copied.
    struct Samples {
        var tcp: [Copy] = []
        var tls: [Copy] = []
        var tlsBothWays: [Copy] = []
        /// The TLS copy with one copy in and out, as an API of `Data` must (issue 30's floor).
        var tlsCopying: [Copy] = []
        /// The direct stream written with `ByteBuffer`s (no copy in): the design change the floor points at.
        var directBuffers: [Copy] = []
        var paths: [StreamPath: PathSamples] = [:]
    }

    /// Both paths' pairs are open for the whole run, so that every round measures each of them beside the same
    /// baselines, interleaved: machine noise (another build, a thermal step) then falls on all alike, where pairs
    /// opened one after the other would each see only their own part of the run. The pair not copying is idle (its
    /// agents advertise every 30 s), and the slow-reader runs watch the whole process either way.
    func run() async throws -> BenchReport {
        var report = BenchReport()
        var samples = Samples()
        let tcp = BulkCopy(security: .tcp)
        let tls = BulkCopy(security: try .agentTLS())
        var tlsCopying = tls
        tlsCopying.copies = true
        var pairs: [BatonStreamPair] = []
        do {
            for path in [StreamPath.direct, .relayed] { pairs.append(try await BatonStreamPair.open(path: path)) }
            for pair in pairs { try await pair.warmUp(bytes: min(bytes, 16 << 20)) }
            var slowFigures: [BenchFigure] = []
            for pair in pairs {
                let slow = try await pair.slowReader(bytes: slowBytes, seconds: slowSeconds)
                report.notes += slow.notes
                slowFigures += slow.figures
            }
            for _ in 0..<opens {
                for pair in pairs { samples.paths[pair.path, default: PathSamples()].firstByte.append(try await pair.timeToFirstByte()) }
            }
            for _ in 0..<rounds {
                try await measureBaselines(tcp: tcp, tls: tls, into: &samples)
                samples.tlsCopying.append(try await measure { try await tlsCopying.run(bytes: bytes, direction: .clientToServer) })
                for pair in pairs {
                    var path = samples.paths[pair.path, default: PathSamples()]
                    path.toOriginating.append(try await measure { try await pair.copy(bytes, .toOriginating) })
                    path.toContinuing.append(try await measure { try await pair.copy(bytes, .toContinuing) })
                    path.bothWays.append(try await measure { try await pair.copy(bytes, .bothWays) })
                    if pair.path == .direct { samples.directBuffers.append(try await measure { try await pair.copyBuffers(bytes) }) }
                    samples.paths[pair.path] = path
                }
            }
            for pair in pairs { await pair.close() }
            report.figures = figures(samples) + slowFigures
        } catch {
            for pair in pairs { await pair.close() }
            throw error
        }
        return report
    }

    func measureBaselines(tcp: BulkCopy, tls: BulkCopy, into samples: inout Samples) async throws {
        samples.tcp.append(try await measure { try await tcp.run(bytes: bytes, direction: .clientToServer) })
        samples.tls.append(try await measure { try await tls.run(bytes: bytes, direction: .clientToServer) })
        samples.tlsBothWays.append(try await measure { try await tls.run(bytes: bytes, direction: .both) })
    }

    /// CPU seconds per GiB moved: on a machine with few cores a path that costs more CPU per byte cannot keep up,
    /// whatever its latency; this says how much of a throughput ratio is that.
    func cpuPerGiB(_ copies: [Copy]) -> Double {
        median(copies, \.cpuSeconds) * Double(1 << 30) / Double(bytes)
    }

    func figures(_ samples: Samples) -> [BenchFigure] {
        let size = Self.sizeText(bytes)
        let (tcp, tls, tlsBoth) = (median(samples.tcp, \.seconds), median(samples.tls, \.seconds), median(samples.tlsBothWays, \.seconds))
        let tlsText = "\(size) one way over bare mutual TLS 1.3 (swift-nio-ssl, agent's config)"
        let tlsCPU = cpuPerGiB(samples.tls)
        var figures: [BenchFigure] = []
        for path in [StreamPath.direct, .relayed] {
            figures += pathFigures(path, samples.paths[path] ?? PathSamples(), tlsText: tlsText, tls: tls, tlsBoth: tlsBoth, tlsCPU: tlsCPU)
        }
        let direct = median(samples.paths[.direct]?.firstByte ?? [])
        let relayed = median(samples.paths[.relayed]?.firstByte ?? [])
        figures.append(
            .microseconds(
                "time to the first byte of a new stream, direct (median of \(opens))", direct,
                baseline: "the same over the relayed path (continuationStreams() called to the first byte read by the other app)", relayed
            )
        )
        figures += [
            .throughput("bare TLS 1.3 copy, \(size) one way", bytes: bytes, seconds: tls, baseline: "\(size) one way over plain TCP", baselineSeconds: tcp),
            .throughput("bare TLS 1.3 copy, \(size) each way at once (per way)", bytes: bytes, seconds: tlsBoth, baseline: tlsText, baselineSeconds: tls),
            BenchFigure(
                name: "CPU time per GiB: bare TLS 1.3 copy, one way", value: tlsCPU, unit: "s/GiB", baseline: "\(size) one way over plain TCP",
                baselineValue: cpuPerGiB(samples.tcp), target: BenchFigure.reportOnly, met: true
            ),
            // Issue 30's floor: what the TLS copy does when, as the app library must with `Data`, the writer copies
            // its bytes into the buffer it writes and the reader copies what it read out.
            .throughput(
                "bare TLS 1.3 copy with one copy in and one out (an API of Data), \(size) one way", bytes: bytes,
                seconds: median(samples.tlsCopying, \.seconds), baseline: tlsText, baselineSeconds: tls
            ),
            BenchFigure(
                name: "CPU time per GiB: bare TLS 1.3 copy with one copy in and one out", value: cpuPerGiB(samples.tlsCopying), unit: "s/GiB",
                baseline: tlsText, baselineValue: tlsCPU, target: BenchFigure.reportOnly, met: true
            ),
            .throughput(
                "direct stream written with ByteBuffers (no copy in; package API): continuing app → originating app, \(size)", bytes: bytes,
                seconds: median(samples.directBuffers, \.seconds), baseline: tlsText, baselineSeconds: tls
            ),
            BenchFigure(
                name: "CPU time per GiB: direct stream written with ByteBuffers", value: cpuPerGiB(samples.directBuffers), unit: "s/GiB",
                baseline: tlsText, baselineValue: tlsCPU, target: BenchFigure.reportOnly, met: true
            ),
            .throughput(
                "direct stream against that floor: continuing app → originating app, \(size)", bytes: bytes,
                seconds: median(samples.paths[.direct]?.toOriginating ?? [], \.seconds),
                baseline: "\(size) one way over bare mutual TLS 1.3 with one copy in and one out", baselineSeconds: median(samples.tlsCopying, \.seconds)
            ),
        ]
        return figures
    }

    /// One path's throughput each way and both ways at once, and CPU per GiB each way, against the bare TLS copies:
    /// judged on the direct path (issue 30), reported on the relayed one, to compare.
    func pathFigures(_ path: StreamPath, _ samples: PathSamples, tlsText: String, tls: Double, tlsBoth: Double, tlsCPU: Double) -> [BenchFigure] {
        let size = Self.sizeText(bytes)
        func throughput(_ name: String, _ copies: [Copy], baseline: String, _ baselineSeconds: Double) -> BenchFigure {
            let figure = BenchFigure.throughput(
                "\(path.rawValue) stream: \(name)", bytes: bytes, seconds: median(copies, \.seconds), baseline: baseline, baselineSeconds: baselineSeconds
            )
            return path == .direct ? figure.judged(atLeast: Self.directThroughputTarget) : figure
        }
        func cpu(_ name: String, _ copies: [Copy]) -> BenchFigure {
            let figure = BenchFigure(
                name: "CPU time per GiB: \(path.rawValue) stream, \(name)", value: cpuPerGiB(copies), unit: "s/GiB", baseline: tlsText,
                baselineValue: tlsCPU, target: BenchFigure.reportOnly, met: true
            )
            return path == .direct ? figure.judged(atMost: Self.directCPUTarget) : figure
        }
        return [
            throughput("continuing app → originating app, \(size)", samples.toOriginating, baseline: tlsText, tls),
            throughput("originating app → continuing app, \(size)", samples.toContinuing, baseline: tlsText, tls),
            throughput(
                "both ways at once, \(size) each way (per way)", samples.bothWays,
                baseline: "\(size) each way at once over bare mutual TLS 1.3", tlsBoth
            ),
            cpu("continuing app → originating app", samples.toOriginating),
            cpu("originating app → continuing app", samples.toContinuing),
        ]
    }

    func median(_ copies: [Copy], _ measure: KeyPath<Copy, Double>) -> Double {
        median(copies.map { $0[keyPath: measure] })
    }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// "1 GiB", "16 MiB", or bytes.
    static func sizeText(_ bytes: Int) -> String {
        if bytes >= 1 << 30, bytes % (1 << 30) == 0 { return "\(bytes >> 30) GiB" }
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        return "\(bytes) bytes"
    }
}

/// CPU time this process has used, user and system, every thread (getrusage).
func processCPUSeconds() -> Double {
    var usage = rusage()
    guard getrusage(Int32(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
