import ArgumentParser
import Baton
import BatonAgentCommand
import BatonTestKit
import Foundation

extension DebugCommand {
    /// One large continuation stream, checked end to end (issue 30's two-host test of a 100 MB stream, and its test
    /// that no device key reaches an app): `offer` makes an app's activity current with streams, reads each stream it
    /// is given to the end and writes back the digest of what it read; `continue` waits for the app's continuation,
    /// opens a stream, sends `--bytes` pseudo-random bytes and reads the digest back. Both are apps whose bundle's
    /// executable is this binary, as for ``StreamApps``.
    struct StreamCopy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stream-copy",
            abstract: "Copy bytes over one continuation stream and check them (for DirectStreamNamespaceTests).",
            discussion: """
                Prints one line per step, each as it happens. First `pid PID` and `marker HEX`: 32 random bytes this \
                process keeps in memory, so a test scanning its memory can show that the scan finds what is there. \
                offer: `offering BUNDLE`, then for each stream `received N DIGEST path P`, after which it writes \
                `DIGEST` and a newline back and finishes; it stays until stopped. continue: `waiting BUNDLE`, `path P` \
                once the stream is open, `sent N DIGEST seconds S` once it finished writing, `reply DIGEST seconds S` \
                (seconds from the first byte written to the reply), then `holding` and stays with --hold, else exits. \
                DIGEST is 64-bit FNV-1a in hex (baton-debug does not depend on swift-crypto; both ends compute it over \
                the same bytes, which is what the test compares).
                """
        )

        @Argument(help: "offer (the originating app: digest every stream) or continue (open a stream and send).")
        var role: StreamApps.Role

        @Option(help: ArgumentHelp("The app: its bundle identifier and its agent's socket.", valueName: "bundle=socket"))
        var app: String

        @Option(help: "Bytes to send (continue).")
        var bytes = 100_000_000

        @Flag(help: "Stay alive after the reply, the stream still held (continue).")
        var hold = false

        @Option(help: "Milliseconds the reader pauses after each chunk it reads: a slow reader (offer).")
        var pauseMs = 0

        /// The size of each write: what the brief of the 100 MB test asks (256 KiB).
        static let writeSize = 256 << 10

        func validate() throws {
            guard app.split(separator: "=", maxSplits: 1).count == 2 else { throw ValidationError("--app takes bundle=socket") }
            guard bytes >= 0 else { throw ValidationError("--bytes must not be negative") }
            guard (0...10_000).contains(pauseMs) else { throw ValidationError("--pause-ms must be 0 to 10000") }
        }

        @MainActor
        func run() async throws {
            signal(SIGPIPE, SIG_IGN)
            let say = StreamApps.say
            let parts = app.split(separator: "=", maxSplits: 1).map(String.init)
            let (bundle, socket) = (parts[0], parts[1])
            say("pid \(getpid())")
            // Never freed: the marker stays in this process's heap for as long as it runs.
            let marker = UnsafeMutableRawBufferPointer.allocate(byteCount: 32, alignment: 16)
            var random = SystemRandomNumberGenerator()
            for index in 0..<marker.count { marker[index] = random.next() }
            say("marker \(marker.map { String(format: "%02x", $0) }.joined())")

            let harness = StreamAppsHarness(say: say)
            switch role {
            case .offer:
                let digester = StreamDigester(say: say, pause: .milliseconds(pauseMs))
                try await offer(bundle, socket, harness: harness, delegate: digester)
                try await Self.stay()
                withExtendedLifetime(digester) {}
            case .continue:
                let streams = try await continueAndSend(bundle, socket, harness: harness)
                if hold {
                    say("holding")
                    try await Self.stay()
                }
                withExtendedLifetime(streams) {}
            }
            withExtendedLifetime(harness) {}
        }

        /// Connects the app and makes its activity (type BUNDLE.stream, as ``StreamAppsHarness`` names them) current.
        @MainActor
        func offer(_ bundle: String, _ socket: String, harness: StreamAppsHarness, delegate: StreamDigester) async throws {
            let application = BatonApplication()
            try await harness.connect(application, bundle, socket)
            let activity = try UserActivity(activityType: "\(bundle).stream", application: application)
            activity.title = "Copy for \(bundle)"
            activity.supportsContinuationStreams = true
            activity.delegate = delegate
            activity.becomeCurrent()
            harness.applications.append(application)
            harness.activities.append(activity)
            harness.say("offering \(bundle)")
        }

        /// Connects the app, waits for its continuation, opens a stream, sends `bytes` and reads the reply.
        @MainActor
        func continueAndSend(_ bundle: String, _ socket: String, harness: StreamAppsHarness) async throws -> ContinuationStreams {
            let application = BatonApplication()
            try await harness.connect(application, bundle, socket)
            harness.applications.append(application)
            harness.say("waiting \(bundle)")
            var continued: UserActivity?
            events: for await event in application.events {
                switch event {
                case .continued(let activity):
                    continued = activity
                    break events
                case .failed(_, let error):
                    throw CommandLineError("\(bundle) was not continued: \(error)")
                case .willContinue:
                    continue
                }
            }
            guard let activity = continued else { throw CommandLineError("\(bundle)'s agent went away before a continuation") }
            let streams = try await activity.continuationStreams()
            harness.say("path \(streams.path.rawValue)")

            let began = ContinuousClock.now
            var sent = Tally()
            var generator = PseudoRandomBytes()
            while sent.count < bytes {
                let chunk = generator.next(min(Self.writeSize, bytes - sent.count))
                sent.add(chunk)
                try await streams.output.write(chunk)
            }
            try await streams.output.finish()
            harness.say("sent \(sent.count) \(sent.hex) seconds \(Self.seconds(since: began))")
            let reply = try await streams.input.readAll(limit: 1 << 10)
            let digest = String(decoding: reply, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            harness.say("reply \(digest) seconds \(Self.seconds(since: began))")
            return streams
        }

        static func seconds(since start: ContinuousClock.Instant) -> String {
            String(format: "%.3f", StreamTraffic.inSeconds(ContinuousClock.now - start))
        }

        /// Until the process is stopped.
        static func stay() async throws {
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
    }
}

/// The originating app's side of `stream-copy`: every stream read to its end, its digest said and written back.
final class StreamDigester: UserActivityDelegate, Sendable {
    let say: @Sendable (String) -> Void
    /// How long the reader pauses after each chunk (zero: it reads at full speed).
    let pause: Duration

    init(say: @escaping @Sendable (String) -> Void, pause: Duration = .zero) {
        self.say = say
        self.pause = pause
    }

    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {
        Task.detached { [say, pause] in
            var digest = Tally()
            do {
                for try await chunk in streams.input {
                    digest.add(chunk)
                    if pause > .zero { try await Task.sleep(for: pause) }
                }
                say("received \(digest.count) \(digest.hex) path \(streams.path.rawValue)")
                try await streams.output.write(Data("\(digest.hex)\n".utf8))
                try await streams.output.finish()
            } catch {
                say("failed after \(digest.count) bytes: \(error)")
            }
        }
    }
}

/// The same bytes on every run: SplitMix64 from a fixed seed, each word's eight bytes little-endian.
struct PseudoRandomBytes {
    var generator = SplitMix64(state: 0x6261_746f_6e33_3021)

    mutating func next(_ count: Int) -> Data {
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < count {
                let word = generator.next()
                if count - offset >= 8 {
                    buffer.storeBytes(of: word.littleEndian, toByteOffset: offset, as: UInt64.self)
                    offset += 8
                } else {
                    for shift in stride(from: 0, to: (count - offset) * 8, by: 8) {
                        buffer[offset] = UInt8(truncatingIfNeeded: word >> UInt64(shift))
                        offset += 1
                    }
                }
            }
        }
        return data
    }
}
