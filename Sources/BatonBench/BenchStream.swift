import ArgumentParser
import Foundation

extension BenchCommand {
    struct Stream: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Continuation stream throughput and memory against bare TCP and TLS 1.3 copies.",
            discussion: """
                Throughput (MB/s, 10^6 bytes a second), each figure the median of --rounds, every kind measured once \
                per round, interleaved, and timed from the first write to the last byte read:
                  • Baseline: --bytes over one loopback connection with swift-nio and swift-nio-ssl, mutual TLS 1.3 \
                between two device identities in the agent's own configuration, one way, each end on its own event \
                loop (the two processes a real copy has), 256 KiB buffers written while the channel is writable, the \
                handshake over before the clock starts; and the same over plain TCP, to show what TLS costs. Also \
                the TLS copy both ways at once (--bytes each way).
                  • Baton: two devices of one account run embedded agents on loopback, with a ShopSnap app on each in \
                this process. The laptop's activity supports continuation streams; the desktop continues it and asks \
                for streams, so the bytes go app → agent (Unix socket) → TLS 1.3 session → agent → app. --bytes from \
                the continuing app to the originating one, then back, then both ways at once, through the library's \
                stream reader and writer with 256 KiB writes. Target: each way at least 0.8x the TLS copy.
                  • CPU time per GiB moved (user and system, every thread of this process) for the stream each way and \
                the copies: with every part of the path on the same few cores, a path that costs more CPU per byte \
                cannot keep up, so this tells how much of a throughput ratio is CPU.
                Memory: before the rounds, the originating app writes --slow-bytes while the continuing app's reader \
                pauses 10 ms after each chunk for --slow-seconds, then reads the rest at full speed. Reported: how far \
                this process's resident memory rose over its level just before (the peak from the kernel's VmHWM, \
                reset for the run, and a 1 ms sampler); the agents and the apps share the process, so the target is \
                what the design lets all four hold for one stream: one 512 KiB window for the two agents (the \
                receiving agent credits only what its app's socket took), the sending agent's last reads past the \
                credit (256 KiB), and each app library's own buffers (the reader's 1 MiB read ahead, a read turn and \
                the chunk in hand; the writer's 1 MiB of writes and a frame): 4.25 MiB in all; a writer that did not \
                wait would show the whole --slow-bytes. Also how many bytes \
                were written but not yet read at most while the reader was slow (the kernel's socket buffers between \
                apps and agents come on top of the bound there).
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

        @Flag(help: "Print the results as JSON: {\"figures\": [...]}.")
        var json = false

        func validate() throws {
            guard (1 << 20...1 << 40).contains(bytes) else { throw ValidationError("--bytes must be between 1 MiB and 1 TiB.") }
            guard (1...100).contains(rounds) else { throw ValidationError("--rounds must be between 1 and 100.") }
            guard (1 << 20...1 << 40).contains(slowBytes) else { throw ValidationError("--slow-bytes must be between 1 MiB and 1 TiB.") }
            guard (0.1...600).contains(slowSeconds) else { throw ValidationError("--slow-seconds must be between 0.1 and 600.") }
        }

        func run() async throws {
            #if DEBUG
            if !json { print("note: this is a debug build; for real figures run `swift run -c release baton bench stream`\n") }
            #endif
            let bench = StreamBench(bytes: bytes, rounds: rounds, slowBytes: min(slowBytes, bytes), slowSeconds: slowSeconds)
            try await bench.run().print(json: json)
        }
    }
}

/// `baton bench stream`: continuation streams between two embedded agents against bare copies, same run.
@MainActor
struct StreamBench {
    let bytes: Int
    let rounds: Int
    let slowBytes: Int
    let slowSeconds: Double

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

    /// Copies, by what was copied.
    struct Samples {
        var tcp: [Copy] = []
        var tls: [Copy] = []
        var tlsBothWays: [Copy] = []
        var toOriginating: [Copy] = []
        var toContinuing: [Copy] = []
        var bothWays: [Copy] = []
    }

    func run() async throws -> BenchReport {
        var report = BenchReport()
        var samples = Samples()
        let tcp = BulkCopy(security: .tcp)
        let tls = BulkCopy(security: try .agentTLS())
        let pair = try await BatonStreamPair.open()
        do {
            try await pair.warmUp(bytes: min(bytes, 16 << 20))
            let slow = try await pair.slowReader(bytes: slowBytes, seconds: slowSeconds)
            report.notes += slow.notes
            for _ in 0..<rounds {
                try await measureBaselines(tcp: tcp, tls: tls, into: &samples)
                samples.toOriginating.append(try await measure { try await pair.copy(bytes, .toOriginating) })
                samples.toContinuing.append(try await measure { try await pair.copy(bytes, .toContinuing) })
                samples.bothWays.append(try await measure { try await pair.copy(bytes, .bothWays) })
            }
            await pair.close()
            report.figures = figures(samples) + slow.figures
        } catch {
            await pair.close()
            throw error
        }
        return report
    }

    func measureBaselines(tcp: BulkCopy, tls: BulkCopy, into samples: inout Samples) async throws {
        samples.tcp.append(try await measure { try await tcp.run(bytes: bytes, direction: .clientToServer) })
        samples.tls.append(try await measure { try await tls.run(bytes: bytes, direction: .clientToServer) })
        samples.tlsBothWays.append(try await measure { try await tls.run(bytes: bytes, direction: .both) })
    }

    func figures(_ samples: Samples) -> [BenchFigure] {
        let size = Self.sizeText(bytes)
        let (tcp, tls, tlsBoth) = (median(samples.tcp, \.seconds), median(samples.tls, \.seconds), median(samples.tlsBothWays, \.seconds))
        let toOriginating = median(samples.toOriginating, \.seconds)
        let toContinuing = median(samples.toContinuing, \.seconds)
        let tlsText = "\(size) one way over bare mutual TLS 1.3 (swift-nio-ssl, agent's config)"
        let tlsBothText = "\(size) each way at once over bare mutual TLS 1.3"
        // CPU seconds per GiB moved: on a machine with few cores a path that costs more CPU per byte cannot keep up,
        // whatever its latency; this says how much of a throughput ratio is that.
        func cpu(_ copies: [Copy], bytes moved: Int) -> Double { median(copies, \.cpuSeconds) * Double(1 << 30) / Double(moved) }
        let tlsCPU = cpu(samples.tls, bytes: bytes)
        func cpuFigure(_ name: String, _ seconds: Double, baseline: String, _ baselineSeconds: Double) -> BenchFigure {
            BenchFigure(
                name: name, value: seconds, unit: "s/GiB", baseline: baseline, baselineValue: baselineSeconds,
                target: BenchFigure.reportOnly, met: true
            )
        }
        return [
            .throughput(
                "stream: continuing app → originating app, \(size)", bytes: bytes, seconds: toOriginating,
                baseline: tlsText, baselineSeconds: tls, target: "≥ 0.8x", met: tls / toOriginating >= 0.8
            ),
            .throughput(
                "stream: originating app → continuing app, \(size)", bytes: bytes, seconds: toContinuing,
                baseline: tlsText, baselineSeconds: tls, target: "≥ 0.8x", met: tls / toContinuing >= 0.8
            ),
            .throughput(
                "stream: both ways at once, \(size) each way (per way)", bytes: bytes, seconds: median(samples.bothWays, \.seconds),
                baseline: tlsBothText, baselineSeconds: tlsBoth
            ),
            .throughput("bare TLS 1.3 copy, \(size) one way", bytes: bytes, seconds: tls, baseline: "\(size) one way over plain TCP", baselineSeconds: tcp),
            .throughput("bare TLS 1.3 copy, \(size) each way at once (per way)", bytes: bytes, seconds: tlsBoth, baseline: tlsText, baselineSeconds: tls),
            cpuFigure("CPU time per GiB: stream, continuing app → originating app", cpu(samples.toOriginating, bytes: bytes), baseline: tlsText, tlsCPU),
            cpuFigure("CPU time per GiB: stream, originating app → continuing app", cpu(samples.toContinuing, bytes: bytes), baseline: tlsText, tlsCPU),
            cpuFigure("CPU time per GiB: bare TLS 1.3 copy, one way", tlsCPU, baseline: "\(size) one way over plain TCP", cpu(samples.tcp, bytes: bytes)),
        ]
    }

    func median(_ copies: [Copy], _ measure: KeyPath<Copy, Double>) -> Double {
        let sorted = copies.map { $0[keyPath: measure] }.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
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
