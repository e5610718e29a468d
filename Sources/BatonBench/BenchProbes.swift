import BatonCore
import BatonEmbedded
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import ShopSnapKit

#if canImport(Glibc)
import Glibc
#endif

/// The floor of a cold continuation: what the same libraries (swift-nio, swift-nio-ssl) cost for a new mutual TLS 1.3
/// connection between two self-signed device identities, configured exactly as the agent's (``TLSPipeline``), and
/// one 3 KB round trip on it; and, on a connection kept open, the 3 KB round trip alone (the TLS record hop of a warm
/// continuation).
struct TLSBaseline {
    let count: Int

    /// Samples in seconds.
    struct Results {
        /// Connect, handshake both ways, 3 KB there and back.
        var cold: [Double]
        /// 3 KB there and back on an open connection.
        var warm: [Double]
    }

    func run() async throws -> Results {
        let server = try DeviceIdentity.generate(name: "server")
        let client = try DeviceIdentity.generate(name: "client")
        let echo = try await LoopbackEcho.start(
            tls: (
                client: try NIOSSLContext(configuration: TLSPipeline.configuration(identity: client, role: .client)),
                server: try NIOSSLContext(configuration: TLSPipeline.configuration(identity: server, role: .server))
            )
        )
        let request = ByteBuffer(repeating: 1, count: 3 * 1024)
        var cold: [Double] = []
        for index in 0..<max(count / 4, 8) + 2 {
            let start = DispatchTime.now().uptimeNanoseconds
            let (channel, trip) = try await echo.connect()
            try await trip.exchange(request, on: channel)
            if index >= 2 { cold.append(seconds(since: start)) }
            try await channel.close()
        }
        let (kept, keptTrip) = try await echo.connect()
        var warm: [Double] = []
        for index in 0..<count + 10 {
            let start = DispatchTime.now().uptimeNanoseconds
            try await keptTrip.exchange(request, on: kept)
            if index >= 10 { warm.append(seconds(since: start)) }
        }
        try await kept.close()
        try await echo.server.close()
        return Results(cold: cold, warm: warm)
    }
}

/// An echo server on loopback and connections to it (TCP_NODELAY both ways, as the agent's links): plain TCP, or
/// mutual TLS with the given contexts and the agent's verification callback.
struct LoopbackEcho {
    let server: Channel
    let tls: (client: NIOSSLContext, server: NIOSSLContext)?

    static func start(tls: (client: NIOSSLContext, server: NIOSSLContext)?) async throws -> LoopbackEcho {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context = tls?.server {
                        let verify = TLSPipeline.verifier(.anyDevice, presented: NIOLockedValueBox(nil))
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context, customVerificationCallback: verify))
                    }
                    try channel.pipeline.syncOperations.addHandler(Echo())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return LoopbackEcho(server: server, tls: tls)
    }

    /// A new connection, with the handler that times round trips on it.
    func connect() async throws -> (Channel, RoundTrip) {
        let trip = RoundTrip()
        let context = tls?.client
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context {
                        let verify = TLSPipeline.verifier(.anyDevice, presented: NIOLockedValueBox(nil))
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: context, serverHostname: nil, customVerificationCallback: verify)
                        )
                    }
                    try channel.pipeline.syncOperations.addHandler(trip)
                }
            }
            .connect(host: "127.0.0.1", port: server.localAddress?.port ?? 0).get()
        return (channel, trip)
    }
}

/// Single hops of the handoff paths that need no network, each timed alone (median seconds per operation).
struct HopProbes {
    /// Sealing an advert and opening it again.
    var sealOpen: Double
    /// The broker's becomeCurrent.
    var becomeCurrent: Double
    /// Every broker transition of one warm continuation, on the continuing and the originating device.
    var continuation: Double
    /// Encoding a 3 KB userInfo to a binary property list and decoding it.
    var codec: Double

    static func run(device: DeviceID) throws -> HopProbes {
        let timer = InterleavedTimer(samples: 9, sampleNanoseconds: 5_000_000)
        let keys = AdvertKeys(AccountKey(epoch: 1, key: Array(repeating: 7, count: 32), excludes: []))
        let advert = Advert(
            device: device, sequence: 1, typeHash: keys.typeHash(team: "RAZEWARE01", activityType: ActivityTypeView),
            flags: [.isCurrent], sessionPort: 47810, timestamp: 1
        )
        let sealOpen = try timer.measure {
            guard keys.open(try keys.seal(advert)) != nil else { throw CommandLineError("an advert sealed here did not open") }
        }

        let notice = ActivityNotice(activityType: ActivityTypeView, title: "Groceries for the weekend")
        var origin = HandoffBroker(deviceName: "laptop")
        var target = HandoffBroker(deviceName: "desktop")
        let (originApp, targetApp) = (HandoffBroker.AppID(1), HandoffBroker.AppID(2))
        var next: UInt64 = 1
        let becomeCurrent = try timer.measure {
            next += 1
            _ = origin.becomeCurrent(app: originApp, bundle: shopSnapBundleIdentifier, team: "RAZEWARE01", activity: next, notice: notice, now: next)
        }
        let sequence = origin.current?.sequence ?? 0
        let payload = try ActivityPayload(activityType: ActivityTypeView).encoded()
        let continuation = try timer.measure {
            next += 1
            let id = HandoffBroker.ContinuationID(next)
            _ = target.continueAsked(id, route: .app(bundle: shopSnapBundleIdentifier, activityType: ActivityTypeView, running: targetApp))
            var save: UInt64?
            for case .askSave(_, let asked, _, _) in origin.fetchAsked(HandoffBroker.FetchID(next), sequence: sequence, deadlineMilliseconds: 1000, now: next) {
                save = asked
            }
            guard let save else { throw CommandLineError("the broker asked the app for no save") }
            _ = origin.saveAnswered(save: save, from: originApp, payload: payload)
            _ = target.fetchReplied(id, payload: payload)
        }

        let userInfo = BenchmarkData.userInfo(encodedSize: 3 * 1024)
        let codec = try timer.measure {
            _ = try BinaryPropertyListDecoder.decode(try BinaryPropertyListEncoder.encode(userInfo))
        }
        return HopProbes(sealOpen: sealOpen, becomeCurrent: becomeCurrent, continuation: continuation, codec: codec)
    }
}

/// Continuations into an app that is not running: finds the `shopsnap` built beside this executable, measures its
/// bare start (no agent: it exits at once), and kills what the agent launched, so each launch is a cold one.
@MainActor
struct LaunchProbe {
    /// The shopsnap executable, symlinks resolved (as `/proc/PID/exe` shows it).
    let executable: URL

    /// The `shopsnap` built next to this executable, if there is one.
    static func shopSnapExecutable() -> URL? {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let candidate = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("shopsnap")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else { return nil }
        return candidate.resolvingSymlinksInPath()
    }

    /// Runs `body` with standard input and output on /dev/null: launched apps inherit them, and their lines must not
    /// mix with the figures (JSON above all).
    func withQuietStandardStreams(_ body: () async throws -> Void) async throws {
        fflush(nil)  // what is buffered for standard output goes there, not to /dev/null
        let (savedInput, savedOutput) = (dup(0), dup(1))
        let null = open("/dev/null", O_RDWR)
        guard savedInput >= 0, savedOutput >= 0, null >= 0 else {
            for descriptor in [savedInput, savedOutput, null] where descriptor >= 0 { close(descriptor) }
            throw CommandLineError("cannot redirect standard streams: \(String(cString: strerror(errno)))")
        }
        dup2(null, 0)
        dup2(null, 1)
        defer {
            dup2(savedInput, 0)
            dup2(savedOutput, 1)
            for descriptor in [savedInput, savedOutput, null] { close(descriptor) }
        }
        try await body()
    }

    /// Seconds from starting shopsnap with no agent to connect to until it has exited: the process-start floor.
    func runWithoutAgent() throws -> Double {
        var environment = ProcessInfo.processInfo.environment
        environment["BATON_AGENT_SOCKET"] = "/nonexistent/baton-bench/agent.sock"
        environment["BATON_BUNDLE_IDENTIFIER"] = shopSnapBundleIdentifier
        environment["BATON_LAUNCHED"] = "1"
        let argv = [strdup(executable.path)]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") }
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        let start = DispatchTime.now().uptimeNanoseconds
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable.path, nil, nil, argv + [nil], envp + [nil])
        guard result == 0 else { throw CommandLineError("cannot start \(executable.path): \(String(cString: strerror(result)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        return seconds(since: start)
    }

    /// Kills the shopsnap processes this process started (the agent's launches), waits until they are gone, and
    /// gives the agent a moment to see the app's connection close.
    func killLaunched() async throws {
        let children = launchedChildren()
        for pid in children { kill(pid, SIGKILL) }
        let start = DispatchTime.now().uptimeNanoseconds
        while !launchedChildren().isEmpty {
            guard seconds(since: start) < 2 else { throw CommandLineError("a launched shopsnap did not exit within 2 s of SIGKILL") }
            try await Task.sleep(for: .milliseconds(1))
        }
        try await Task.sleep(for: .milliseconds(30))
    }

    /// Live children of this process running shopsnap (a zombie has no executable any more).
    func launchedChildren() -> [pid_t] {
        let me = getpid()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let end = stat.lastIndex(of: ")") else {
                return false
            }
            // After "(name)": state, then the parent's pid.
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            guard fields.count > 1, pid_t(fields[1]) == me else { return false }
            return (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == executable.path
        }
    }
}
