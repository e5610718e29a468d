import ArgumentParser
import BatonEmbedded
import BatonRegistry
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ShopSnapKit

extension BenchCommand {
    struct Handoff: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Handoff latency on loopback against bare-socket baselines, with where the time goes.",
            discussion: """
                Two devices of one account run embedded agents on loopback, with ShopSnap-style apps on both. \
                Measures (p50 and p99): becomeCurrent until the other agent's nearby table has it; continue until the \
                continuing app's delegate has the activity with a 3 KB userInfo, on a reused session (warm) and on a \
                new one (cold: TCP, TLS 1.3 handshake, fetch); and continue into a ShopSnap that is not running (the \
                agent launches the `shopsnap` built next to this executable; skipped with a note when there is none). \
                Baselines from the same run: one 88-byte UDP datagram; a 3 KB request/response over an open TCP \
                connection; a new mutual TLS 1.3 connection (swift-nio-ssl, the agent's TLS configuration) and one 3 KB \
                round trip on it; shopsnap started with no agent to connect to, until it exits. Targets: visible \
                within 5x the datagram, warm within 5x the TCP round trip, cold within 1.5x the TLS connection, \
                launched p50 under 50 ms. Then each hop of the visible and warm paths measured alone (app IPC, \
                broker, seal/open, TLS record, plist codec), as a share of the whole.

                Against the floor (issue 26 item 5): the same processes and hops written without Baton, plain \
                swift-nio in two `baton bench floor-node` processes, measured in the same run with samples \
                interleaved. Visible: becomeCurrent until B's watching control client has it, against app → Unix \
                socket → A → one UDP datagram → B → Unix socket → watcher (target ≤ 1.5x). Continue asked on B's \
                control socket until the app has the state, against control → Unix socket → B → fetch over an open \
                mutual TLS 1.3 link → A → Unix socket → app and its 3 KB back the same way (warm: ≤ 1.5x; cold: ≤ \
                1.3x the warm floor plus the floor's bare mutual TLS handshake). p50 judged, p99 shown; every floor \
                hop, and Baton's paths cut where the floor's are, as figures of their own.
                """
        )

        @Option(help: "Measurements of each kind (cold ones: a quarter of this).")
        var count = 200

        @Option(help: "Continuations into a launched app (each starts a process).")
        var launches = 20

        @Flag(help: "Print the results as JSON: {\"figures\": [...]}.")
        var json = false

        func validate() throws {
            guard (8...100_000).contains(count) else { throw ValidationError("--count must be between 8 and 100000.") }
            guard (0...10_000).contains(launches) else { throw ValidationError("--launches must be between 0 and 10000.") }
        }

        func run() async throws {
            #if DEBUG
            if !json { print("note: this is a debug build; for real figures run `swift run -c release baton bench handoff`\n") }
            #endif
            let report = try await HandoffBench(count: count, launches: launches).run()
            report.print(json: json)
        }
    }
}

/// p50 and p99 of samples in seconds.
func percentiles(_ samples: [Double]) -> (Double, Double) {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return (0, 0) }
    return (sorted[sorted.count / 2], sorted[Int(Double(sorted.count - 1) * 0.99)])
}

func seconds(since start: UInt64) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

@MainActor
struct HandoffBench {
    let count: Int
    let launches: Int

    /// Samples in seconds, by what was measured.
    struct Samples {
        var visible: [Double] = []
        var warm: [Double] = []
        var cold: [Double] = []
        var launched: [Double] = []
        var launchBaseline: [Double] = []
        var ipcRoundTrip: [Double] = []
        /// Against the floor (issue 26 item 5), hop by hop. Baton's visible path: becomeCurrent → B's nearby table →
        /// B's watching control client; its continue over B's control socket: asked → the origin app saving → the
        /// continuing app has the state.
        var watched: [HopSample] = []
        var warmOverSocket: [HopSample] = []
        var coldOverSocket: [HopSample] = []
        /// The warm one's leg "origin app asked → continuing app has the state" cut by stamps inside the processes
        /// (``HopStamps``), and the thread of each stamp.
        var warmLeg: [LegCut] = []
        /// The visible path's leg "becomeCurrent → B's nearby table" cut the same way.
        var visibleLeg: [LegCut] = []
        /// The floor pipeline's, in the same run, interleaved with Baton's (``HandoffFloor``).
        var floorVisible: [HopSample] = []
        var floorWarm: [HopSample] = []
        var floorCold: [HopSample] = []
    }

    func run() async throws -> BenchReport {
        var report = BenchReport()
        let apps = FileManager.default.temporaryDirectory.appendingPathComponent("baton-bench-apps-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: apps) }
        let shopsnap = LaunchProbe.shopSnapExecutable()
        if shopsnap == nil, launches > 0 {
            report.notes.append("no shopsnap next to this executable (build it: swift build -c release --product shopsnap): the launched-app figure is skipped")
        }
        try writeShopSnapBundle(in: apps, executable: shopsnap)
        let devices = try await LocalDevices.start(names: ["laptop", "desktop"], apps: AppRegistry.load(searchPaths: [apps])) { configuration in
            // Re-adverts would only add noise; each becomeCurrent advertises at once anyway.
            configuration.advertInterval = 30
            configuration.nearbyTimeToLive = 300
        }
        defer { Task { await devices.shutdown() } }
        var samples = Samples()
        let floor = try await HandoffFloor.start()
        do {
            try await measureAgents(devices, floor: floor, shopsnap: shopsnap, into: &samples, notes: &report.notes)
        } catch {
            await floor.stop()
            throw error
        }
        await floor.stop()

        let baselines = try await LoopbackBaselines(count: count).run()
        let tls = try await TLSBaseline(count: count).run()
        let probes = try HopProbes.run(device: devices.agents[0].identity.id)
        report.figures = figures(samples, baselines, tls, probes) + floorFigures(samples) + visibleHopFigures(samples) + legHopFigures(samples)
        report.notes += visibleThreadNotes(samples) + legThreadNotes(samples)
        return report
    }

    /// The handoff measurements proper, with both agents running, each kind interleaved with the floor's.
    func measureAgents(
        _ devices: LocalDevices, floor: HandoffFloor, shopsnap: URL?, into samples: inout Samples, notes: inout [String]
    ) async throws {
        let (laptopAgent, desktopAgent) = (devices.agents[0], devices.agents[1])
        let changes = NIOLockedValueBox<[UInt64]>([])
        desktopAgent.observeNearby { _, change in
            if change == .added || change == .replaced { changes.withLockedValue { $0.append(monotonicNanoseconds()) } }
        }
        // B's watcher, as `baton nearby --watch` is: a control client that asked for every change of the list.
        let watcher = try await AgentClient.connect(path: desktopAgent.socketPath, bundleIdentifier: nil)
        let watched = NIOLockedValueBox<[(arrived: UInt64, sequence: UInt64)]>([])
        let watching = Task.detached {
            for await message in watcher.messages {
                guard case .nearbyChanged(let items) = message, let item = items.first(where: { $0.deviceName == "laptop" }) else { continue }
                let arrived = monotonicNanoseconds()
                watched.withLockedValue { $0.append((arrived, item.sequence)) }
            }
        }
        defer {
            watching.cancel()
            watcher.close()
        }
        watcher.send(.watchNearby)
        let laptop = BatonApplication()
        let desktop = BatonApplication()
        // Each app is a process of its own beside its agent: its connection reads on a loop of its own, not on an
        // agent's (sharing one, the continuing app's read of `deliver` waited behind B's work after it; the floor's
        // apps and nodes share none). Closed after the apps' connections.
        let appLoops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { appLoops.shutdownGracefully { _ in } }
        laptop.connectionLoops = appLoops.next()
        desktop.connectionLoops = appLoops.next()
        try await laptop.connect(bundleIdentifier: shopSnapBundleIdentifier, socketPath: laptopAgent.socketPath)
        try await desktop.connect(bundleIdentifier: shopSnapBundleIdentifier, socketPath: desktopAgent.socketPath)
        defer { laptop.disconnect() }
        var events = desktop.events.makeAsyncIterator()

        // becomeCurrent → in the desktop's nearby table (the observer) → told to the desktop's watcher; then the
        // floor's, after as long a pause.
        var activity = try UserActivity(activityType: ActivityTypeView, application: laptop)
        var lastSequence: UInt64 = 0
        for index in 0..<count + 10 {
            activity = try UserActivity(activityType: index % 2 == 0 ? ActivityTypeView : ActivityTypeEdit, application: laptop)
            activity.userInfo = BenchmarkData.userInfo(encodedSize: 3 * 1024).dictionaryValue ?? [:]
            let before = changes.withLockedValue { $0.count }
            HopStamps.turn(on: true)
            let start = monotonicNanoseconds()
            activity.becomeCurrent()
            var arrived: UInt64?
            var told: (arrived: UInt64, sequence: UInt64)?
            while arrived == nil || told == nil, monotonicNanoseconds() - start < 1_000_000_000 {
                arrived = changes.withLockedValue { $0.count > before ? $0[before] : nil }
                told = watched.withLockedValue { $0.first { $0.sequence > lastSequence } }
                // The arrivals are stamped by the observer and the watching task; this loop only notices them.
                // Sleeping rather than spinning leaves both cores to the agents (a spinning main thread took one).
                try await Task.sleep(for: .microseconds(100))
            }
            let stamps = HopStamps.take()
            HopStamps.turn(on: false)
            guard let arrived, let told else {
                throw CommandLineError("an advert never reached the nearby table and its watcher within 1 s (iteration \(index))")
            }
            if index >= 10, let cut = Self.visibleSample(stamps, start: start, table: arrived) { samples.visibleLeg.append(cut) }
            lastSequence = told.sequence
            watched.withLockedValue { $0.removeAll { $0.sequence <= told.sequence } }
            if index >= 10 {
                samples.visible.append(Double(arrived &- start) / 1e9)
                samples.watched.append(HopSample(points: [start, arrived, max(told.arrived, arrived)]))
            }
            // Receivers allow a device 50 adverts a second (AdvertReceiver.Limits); stay under it.
            try await Task.sleep(for: .milliseconds(25))
            let floorSample = try await floor.visibleOnce()
            if index >= 10 { samples.floorVisible.append(floorSample) }
            try await Task.sleep(for: .milliseconds(25))
        }

        // continue → delivered to the desktop app's delegate, 3 KB userInfo.
        func continueOnce() async throws -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            let outcome = await desktopAgent.continueNearby(device: "laptop")
            if let failure = outcome.failure { throw CommandLineError("continue failed: \(outcome.message) [\(failure)]") }
            while let event = await events.next(isolation: #isolation) {
                if case .continued = event { return seconds(since: start) }
                if case .failed(_, let error) = event { throw CommandLineError("continue failed: \(error)") }
            }
            throw CommandLineError("the desktop app's event stream ended")
        }
        // The same asked over the desktop agent's control socket (as `baton continue` asks), with the moment the
        // origin app's delegate is asked for its state, against the floor's.
        let asker = try await AgentClient.connect(path: desktopAgent.socketPath, bundleIdentifier: nil)
        let results = Task.detached {
            var failures: [String] = []
            for await message in asker.messages {
                if case .continueResult(_, let outcome) = message, let failure = outcome.failure { failures.append("\(outcome.message) [\(failure)]") }
            }
            return failures
        }
        defer { asker.close() }
        let saving = SaveStamp()
        activity.delegate = saving
        var request: UInt64 = 0
        let continuing = ContinueStamp()
        desktop.delegate = continuing
        var leg: LegCut?
        func continueOverSocket(cut: Bool = false) async throws -> HopSample {
            saving.stamp = nil
            continuing.stamp = nil
            request += 1
            leg = nil
            HopStamps.turn(on: cut)
            defer { HopStamps.turn(on: false) }
            let start = monotonicNanoseconds()
            asker.send(.continueNearby(request: request, device: "laptop"))
            while let event = await events.next(isolation: #isolation) {
                if case .continued = event {
                    let end = monotonicNanoseconds()
                    guard let saved = saving.stamp else { throw CommandLineError("the origin app was not asked for its state") }
                    if cut { leg = Self.legSample(HopStamps.take(), start: saved, delegate: continuing.stamp, end: end) }
                    return HopSample(points: [start, saved, end])
                }
                if case .failed(_, let error) = event { throw CommandLineError("continue over the control socket failed: \(error)") }
            }
            throw CommandLineError("the desktop app's event stream ended")
        }
        for index in 0..<count + 10 {
            activity.needsSave = true
            let elapsed = try await continueOnce()
            activity.needsSave = true
            let overSocket = try await continueOverSocket(cut: true)
            let floorSample = try await floor.continueOnce(cold: false)
            if index >= 10 {
                samples.warm.append(elapsed)
                samples.warmOverSocket.append(overSocket)
                if var leg {
                    leg.asking = overSocket.hops[0]
                    samples.warmLeg.append(leg)
                }
                samples.floorWarm.append(floorSample)
            }
        }
        // A decodes a state to take the credentials out of its URLs only when its bytes hold an '@' (issue 25 item 7):
        // whether this one does says what A's hop holds.
        if let state = try? activity.payload().encoded() {
            let ats = state.filter { $0 == UInt8(ascii: "@") }.count
            notes.append("the warm state is \(state.count) bytes, \(ats) of them '@': A \(ats > 0 ? "decodes it" : "does not decode it") to take credentials out of its URLs")
        }
        for _ in 0..<max(count / 4, 8) {
            laptopAgent.closeLinks()
            desktopAgent.closeLinks()
            try await Task.sleep(for: .milliseconds(2))
            activity.needsSave = true
            samples.cold.append(try await continueOnce())
            laptopAgent.closeLinks()
            desktopAgent.closeLinks()
            try await Task.sleep(for: .milliseconds(2))
            activity.needsSave = true
            samples.coldOverSocket.append(try await continueOverSocket())
            samples.floorCold.append(try await floor.continueOnce(cold: true))
        }
        asker.close()
        let failures = await results.value
        if let failure = failures.first { throw CommandLineError("a continue over the control socket failed: \(failure)") }

        // One hop alone: a request and its answer over the desktop agent's Unix socket (a control client's listApps).
        let control = try await AgentClient.connect(path: desktopAgent.socketPath, bundleIdentifier: nil)
        var replies = control.messages.makeAsyncIterator()
        for index in 0..<count + 10 {
            let start = DispatchTime.now().uptimeNanoseconds
            control.send(.listApps(request: UInt64(index)))
            guard case .apps = await replies.next(isolation: #isolation) else { throw CommandLineError("the agent did not answer listApps") }
            if index >= 10 { samples.ipcRoundTrip.append(seconds(since: start)) }
        }
        control.close()

        // Continue into an app that is not running: the desktop agent launches shopsnap, which connects, and the state
        // is fetched and delivered to it. Killed after each, so each is a cold process start.
        desktop.disconnect()
        guard let shopsnap, launches > 0 else { return }
        try await Task.sleep(for: .milliseconds(50))
        let probe = LaunchProbe(executable: shopsnap)
        do {
            try await probe.withQuietStandardStreams {
                for _ in 0..<launches {
                    activity.needsSave = true
                    samples.launchBaseline.append(try probe.runWithoutAgent())
                    let outcome = await desktopAgent.continueNearby(device: "laptop")
                    try await probe.killLaunched()
                    guard outcome.failure == nil, outcome.app == shopSnapBundleIdentifier else {
                        throw CommandLineError("continue into a launched shopsnap failed: \(outcome.message) [\(outcome.failure?.rawValue ?? "")]")
                    }
                    samples.launched.append(Double(outcome.microseconds) / 1e6)
                }
            }
        } catch {
            notes.append("the launched-app figure is skipped: \(error)")
            samples.launched = []
        }
    }

    func figures(_ samples: Samples, _ baselines: LoopbackBaselines.Results, _ tls: TLSBaseline.Results, _ probes: HopProbes) -> [BenchFigure] {
        let (visible50, visible99) = percentiles(samples.visible)
        let (warm50, warm99) = percentiles(samples.warm)
        let (cold50, cold99) = percentiles(samples.cold)
        let (udp50, udp99) = percentiles(baselines.udp)
        let (tcp50, tcp99) = percentiles(baselines.tcpWarm)
        let (tls50, tls99) = percentiles(tls.cold)
        let udpText = "one 88-byte UDP datagram, one way"
        let tcpText = "3 KB request/response on an open TCP connection"
        let tlsText = "new mutual TLS 1.3 connection + one 3 KB round trip (swift-nio-ssl, agent's config)"
        var figures: [BenchFigure] = [
            .microseconds("becomeCurrent → visible in nearby", visible50, baseline: udpText, udp50, target: "≤ 5x", met: visible50 <= 5 * udp50),
            .microseconds("continue → delivered, warm session", warm50, baseline: tcpText, tcp50, target: "≤ 5x", met: warm50 <= 5 * tcp50),
            .microseconds("continue → delivered, cold session", cold50, baseline: tlsText, tls50, target: "≤ 1.5x", met: cold50 <= 1.5 * tls50),
            .microseconds("continue → delivered, cold session (vs TCP)", cold50, baseline: "TCP connect + one 3 KB round trip", percentiles(baselines.tcpCold).0),
        ]
        let launchText = "shopsnap started with no agent, until it exits"
        if !samples.launched.isEmpty {
            let (launched50, _) = percentiles(samples.launched)
            figures.append(
                .microseconds(
                    "continue → delivered, app launched", launched50, baseline: launchText, percentiles(samples.launchBaseline).0,
                    target: "p50 < 50 ms", met: launched50 < 0.050
                )
            )
        }
        figures += [
            .microseconds("becomeCurrent → visible in nearby (p99)", visible99, baseline: udpText + " (p99)", udp99),
            .microseconds("continue → delivered, warm session (p99)", warm99, baseline: tcpText + " (p99)", tcp99),
            .microseconds("continue → delivered, cold session (p99)", cold99, baseline: tlsText + " (p99)", tls99),
        ]
        if !samples.launched.isEmpty {
            figures.append(
                .microseconds(
                    "continue → delivered, app launched (p99)", percentiles(samples.launched).1, baseline: launchText + " (p99)",
                    percentiles(samples.launchBaseline).1
                )
            )
        }

        // Where the time goes: each hop measured alone, times how often the path takes it, as a share of the whole.
        let ipc = percentiles(samples.ipcRoundTrip).0
        let tlsRecord = percentiles(tls.warm).0
        let visibleWhole = "becomeCurrent → visible p50"
        let visibleHops: [(String, Double)] = [
            ("app → agent message (half an IPC round trip)", ipc / 2),
            ("broker: becomeCurrent", probes.becomeCurrent),
            ("advert seal + open (AdvertKeys)", probes.sealOpen),
            ("UDP datagram (the baseline)", udp50),
        ]
        let warmWhole = "warm continue p50"
        let warmHops: [(String, Double)] = [
            ("app IPC: save asked, saved, delivered (1.5 round trips)", 1.5 * ipc),
            ("fetch on the open TLS link (3 KB TLS round trip)", tlsRecord),
            ("3 KB userInfo plist encode + decode (save, delivery)", probes.codec),
            ("broker: one continuation on both devices", probes.continuation),
        ]
        for (path, whole, total, hops) in [("visible", visibleWhole, visible50, visibleHops), ("warm", warmWhole, warm50, warmHops)] {
            for (name, cost) in hops {
                figures.append(.microseconds("\(path) hop: " + name, cost, baseline: whole, total))
            }
            let rest = total - hops.map(\.1).reduce(0, +)
            figures.append(.microseconds("\(path) rest: thread and task hops, locks, waits", max(rest, 0), baseline: whole, total))
        }
        return figures
    }
}

/// The floor Baton is compared with, measured in the same run on the same loopback: what a bare socket costs.
struct LoopbackBaselines {
    let count: Int

    /// Samples in seconds.
    struct Results {
        /// One 88-byte UDP datagram, one way.
        var udp: [Double]
        /// A 3 KB request/response on an open TCP connection.
        var tcpWarm: [Double]
        /// The same on a new connection, connect included.
        var tcpCold: [Double]
    }

    /// One-way 88-byte UDP datagram; 3 KB request/response over a kept TCP connection; the same on a new one.
    func run() async throws -> Results {
        let group = MultiThreadedEventLoopGroup.singleton
        let arrivals = NIOLockedValueBox<[UInt64]>([])
        let receiver = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(StampingReceiver(arrivals: arrivals))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let sender = try await DatagramBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let target = try SocketAddress(ipAddress: "127.0.0.1", port: receiver.localAddress?.port ?? 0)
        var udp: [Double] = []
        for _ in 0..<count {
            let before = arrivals.withLockedValue { $0.count }
            let start = DispatchTime.now().uptimeNanoseconds
            try await sender.writeAndFlush(AddressedEnvelope(remoteAddress: target, data: ByteBuffer(repeating: 7, count: 88)))
            // Stamped on arrival by the receiver; polled without spinning, like the nearby table above.
            while arrivals.withLockedValue({ $0.count }) == before { try await Task.sleep(for: .microseconds(100)) }
            udp.append(Double(arrivals.withLockedValue { $0[before] } - start) / 1e9)
        }
        try await sender.close()
        try await receiver.close()

        let echo = try await LoopbackEcho.start(tls: nil)
        let request = ByteBuffer(repeating: 1, count: 3 * 1024)
        var warm: [Double] = []
        let (kept, keptTrip) = try await echo.connect()
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            try await keptTrip.exchange(request, on: kept)
            warm.append(seconds(since: start))
        }
        try await kept.close()
        var cold: [Double] = []
        for _ in 0..<max(count / 4, 8) {
            let start = DispatchTime.now().uptimeNanoseconds
            let (channel, trip) = try await echo.connect()
            try await trip.exchange(request, on: channel)
            cold.append(seconds(since: start))
            try await channel.close()
        }
        try await echo.server.close()
        return Results(udp: udp, tcpWarm: warm, tcpCold: cold)
    }
}

/// Records when each datagram arrives.
final class StampingReceiver: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let arrivals: NIOLockedValueBox<[UInt64]>

    init(arrivals: NIOLockedValueBox<[UInt64]>) {
        self.arrivals = arrivals
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let stamp = DispatchTime.now().uptimeNanoseconds
        arrivals.withLockedValue { $0.append(stamp) }
    }
}

/// Sends back whatever arrives.
final class Echo: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.writeAndFlush(data, promise: nil)
    }
}

/// Completes a promise once the expected number of bytes came back.
final class RoundTrip: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    var remaining = 0
    var promise: EventLoopPromise<Void>?

    func expect(_ bytes: Int, _ promise: EventLoopPromise<Void>) {
        remaining = bytes
        self.promise = promise
    }

    /// Sends `request` on `channel` (which has this handler) and waits until as many bytes came back.
    func exchange(_ request: ByteBuffer, on channel: Channel) async throws {
        let done = channel.eventLoop.makePromise(of: Void.self)
        try await channel.eventLoop.submit { self.expect(request.readableBytes, done) }.get()
        channel.writeAndFlush(request, promise: nil)
        try await done.futureResult.get()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        remaining -= unwrapInboundIn(data).readableBytes
        if remaining <= 0 {
            promise?.succeed()
            promise = nil
        }
    }
}
