import ArgumentParser
import Baton
import BatonAgentCommand
import Foundation
import Synchronization

extension DebugCommand {
    /// Synthetic apps for `scripts/load.py streams` (issue 25 item 10): one process speaking as many apps, each a
    /// bundle whose executable is this `baton-debug` binary. `offer` makes each app's activity current with streams and
    /// echoes every stream it is given; `continue` waits for each app's continuation, opens its streams and, once all
    /// are open, sends through every one at once and checks what comes back.
    struct StreamApps: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stream-apps",
            abstract: "Apps that hold many continuation streams at once (for scripts/load.py).",
            discussion: """
                Prints one line per step to standard output: `offering BUNDLE`, `waiting BUNDLE`, `streams BUNDLE N`, \
                `open N` once every stream is open, then `result JSON` after the traffic and `closed N` once every \
                stream ended cleanly. It then stays connected until it is stopped, so the agents can be measured with \
                their apps still there.
                """
        )

        enum Role: String, ExpressibleByArgument {
            case offer
            case `continue`
        }

        @Argument(help: "offer (originating apps: echo every stream) or continue (open streams and send).")
        var role: Role

        @Option(name: .customLong("app"), help: ArgumentHelp("An app: its bundle identifier and its agent's socket.", valueName: "bundle=socket"))
        var apps: [String] = []

        @Option(help: "Streams in all (continue): each app opens up to --per-app of them, in the order given.")
        var total = 100

        @Option(help: "Streams each app opens at most (continue).")
        var perApp = 8

        @Option(help: "Seconds of traffic once every stream is open (continue).")
        var seconds: Double = 30

        @Option(help: "Bytes each stream sends before waiting for their echo (continue).")
        var chunk = 64 << 10

        func validate() throws {
            guard !apps.isEmpty else { throw ValidationError("name at least one --app bundle=socket") }
            guard apps.allSatisfy({ $0.split(separator: "=", maxSplits: 1).count == 2 }) else {
                throw ValidationError("--app takes bundle=socket")
            }
            guard total > 0, perApp > 0, chunk > 0, seconds > 0 else { throw ValidationError("--total, --per-app, --chunk and --seconds must be positive") }
            guard role == .offer || total <= apps.count * perApp else {
                throw ValidationError("\(apps.count) apps of \(perApp) streams cannot open \(total)")
            }
        }

        @MainActor
        func run() async throws {
            signal(SIGPIPE, SIG_IGN)
            let named = apps.map { entry -> (bundle: String, socket: String) in
                let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
                return (parts[0], parts[1])
            }
            let harness = StreamAppsHarness(say: Self.say)
            switch role {
            case .offer:
                try await harness.offer(named)
            case .continue:
                var plan: [(bundle: String, socket: String, streams: Int)] = []
                var left = total
                for app in named where left > 0 {
                    plan.append((app.bundle, app.socket, min(perApp, left)))
                    left -= min(perApp, left)
                }
                try await harness.continueAndSend(plan, seconds: seconds, chunk: chunk)
            }
            // Stay connected (and keep every activity alive) until stopped.
            while true { try await Task.sleep(for: .seconds(3600)) }
        }

        static func say(_ line: String) {
            FileHandle.standardOutput.write(Data("\(line)\n".utf8))
        }
    }
}

/// The apps of `baton-debug stream-apps`, on the main actor, and their streams' traffic, off it.
@MainActor
final class StreamAppsHarness {
    let say: @Sendable (String) -> Void
    var applications: [BatonApplication] = []
    var activities: [UserActivity] = []
    let echo: StreamEcho

    init(say: @escaping @Sendable (String) -> Void) {
        self.say = say
        echo = StreamEcho(say: say)
    }

    /// Connects each app and makes its activity (type BUNDLE.stream) current, with streams echoed.
    func offer(_ apps: [(bundle: String, socket: String)]) async throws {
        for app in apps {
            let application = BatonApplication()
            try await connect(application, app.bundle, app.socket)
            let activity = try UserActivity(activityType: "\(app.bundle).stream", application: application)
            activity.title = "Load for \(app.bundle)"
            activity.supportsContinuationStreams = true
            activity.delegate = echo
            activity.becomeCurrent()
            applications.append(application)
            activities.append(activity)
            say("offering \(app.bundle)")
        }
    }

    /// Connects each app, waits for its continuation, opens its streams, then sends through all of them at once.
    func continueAndSend(_ plan: [(bundle: String, socket: String, streams: Int)], seconds: Double, chunk: Int) async throws {
        var opening: [Task<[ContinuationStreams], Never>] = []
        for app in plan {
            let application = BatonApplication()
            try await connect(application, app.bundle, app.socket)
            applications.append(application)
            say("waiting \(app.bundle)")
            let (say, bundle, count) = (say, app.bundle, app.streams)
            opening.append(Task { @MainActor in
                for await event in application.events {
                    switch event {
                    case .continued(let activity):
                        var streams: [ContinuationStreams] = []
                        for _ in 0..<count {
                            do {
                                streams.append(try await activity.continuationStreams())
                            } catch {
                                say("failed \(bundle): \(error)")
                            }
                        }
                        say("streams \(bundle) \(streams.count)")
                        return streams
                    case .failed(_, let error):
                        say("failed \(bundle): \(error)")
                        return []
                    case .willContinue:
                        continue
                    }
                }
                return []
            })
        }
        var all: [ContinuationStreams] = []
        for task in opening { all += await task.value }
        say("open \(all.count)")
        let result = await StreamTraffic.run(all, seconds: seconds, chunk: chunk)
        say("result \(result.json)")
        let closed = await StreamTraffic.finish(all, say: say)
        say("closed \(closed)")
    }

    func connect(_ application: BatonApplication, _ bundle: String, _ socket: String) async throws {
        do {
            try await application.connect(bundleIdentifier: bundle, socketPath: socket)
        } catch {
            throw CommandLineError("\(bundle) cannot connect to \(socket): \(error)")
        }
    }
}

/// The originating apps' side: every stream's input written straight back to it, until the other side finishes.
final class StreamEcho: UserActivityDelegate, Sendable {
    let say: @Sendable (String) -> Void
    /// How many streams have ended, for the `echo ended N` lines the load script follows.
    let ended = Mutex(0)

    init(say: @escaping @Sendable (String) -> Void) {
        self.say = say
    }

    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {
        Task.detached { [self] in
            var echoed = 0
            do {
                for try await chunk in streams.input {
                    try await streams.output.write(chunk)
                    echoed += chunk.count
                }
                try await streams.output.finish()
            } catch {
                say("echo failed after \(echoed) bytes: \(error)")
            }
            let ended = self.ended.withLock { count in
                count += 1
                return count
            }
            say("echo ended \(ended): \(echoed) bytes")
        }
    }
}

/// The continuing side's traffic: every stream at once, each writing a chunk and reading its echo back, over and over.
enum StreamTraffic {
    struct Result {
        var streams = 0
        var roundTrips: [Int] = []
        var bytes = 0
        var mismatches = 0
        var failures: [String] = []
        var latencies: [Double] = []
        var seconds = 0.0

        var json: String {
            let sorted = latencies.sorted()
            func percentile(_ share: Double) -> Double {
                sorted.isEmpty ? 0 : (sorted[min(sorted.count - 1, Int(Double(sorted.count) * share))] * 1e5).rounded() / 100
            }
            let object: [String: Any] = [
                "streams": streams, "bytes": bytes, "seconds": seconds, "mismatches": mismatches, "failures": failures,
                "roundTripsPerStream": roundTrips, "roundTripMedianMs": percentile(0.5), "roundTripP99Ms": percentile(0.99),
            ]
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
            return String(decoding: data, as: UTF8.self)
        }
    }

    struct StreamOutcome: Sendable {
        var roundTrips = 0
        var bytes = 0
        var mismatches = 0
        var failure: String?
        var latencies: [Double] = []
    }

    static func run(_ all: [ContinuationStreams], seconds: Double, chunk: Int) async -> Result {
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(seconds * 1000))
        let outcomes = await withTaskGroup(of: StreamOutcome.self) { group in
            for (index, streams) in all.enumerated() {
                group.addTask { await pingPong(streams, index: index, until: deadline, chunk: chunk) }
            }
            var outcomes: [StreamOutcome] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        var result = Result()
        result.streams = all.count
        result.seconds = (inSeconds(ContinuousClock.now - start) * 100).rounded() / 100
        for outcome in outcomes {
            result.roundTrips.append(outcome.roundTrips)
            result.bytes += outcome.bytes
            result.mismatches += outcome.mismatches
            result.latencies += outcome.latencies
            if let failure = outcome.failure { result.failures.append(failure) }
        }
        return result
    }

    /// One stream: a chunk of one byte value (the round's) out, the same back, checked, until the deadline.
    static func pingPong(_ streams: ContinuationStreams, index: Int, until deadline: ContinuousClock.Instant, chunk: Int) async -> StreamOutcome {
        var outcome = StreamOutcome()
        var input = streams.input.makeAsyncIterator()
        var pending = Data()
        do {
            while ContinuousClock.now < deadline {
                let sent = Data(repeating: UInt8(truncatingIfNeeded: index &* 31 &+ outcome.roundTrips), count: chunk)
                let began = ContinuousClock.now
                try await streams.output.write(sent)
                while pending.count < chunk {
                    guard let more = try await input.next() else { throw CommandLineError("the echo ended early") }
                    pending.append(more)
                }
                let back = pending.prefix(chunk)
                if back != sent { outcome.mismatches += 1 }
                pending = Data(pending.dropFirst(chunk))
                outcome.latencies.append(inSeconds(ContinuousClock.now - began))
                outcome.roundTrips += 1
                outcome.bytes += 2 * chunk
            }
        } catch {
            outcome.failure = "stream \(index): \(error)"
        }
        return outcome
    }

    static func inSeconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Finishes every stream's output and reads its input to the end; returns how many ended cleanly, saying why of
    /// each that did not (its path, the step and the error).
    static func finish(_ all: [ContinuationStreams], say: @escaping @Sendable (String) -> Void) async -> Int {
        await withTaskGroup(of: Bool.self) { group in
            for (index, streams) in all.enumerated() {
                group.addTask {
                    var step = "finishing its output"
                    do {
                        try await streams.output.finish()
                        step = "reading its input to the end"
                        for try await _ in streams.input {}
                        return true
                    } catch {
                        say("not ended \(index) (\(streams.path)) \(step): \(error)")
                        return false
                    }
                }
            }
            var clean = 0
            for await ended in group where ended { clean += 1 }
            return clean
        }
    }
}
