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
            abstract: "Handoff latency on loopback: advert to nearby, and continue to delivery, cold and warm.",
            discussion: """
                Two devices of one account run embedded agents on loopback, with ShopSnap-style apps on both. \
                Measures (p50 and p99): becomeCurrent until the other agent's nearby table has it; continue until the \
                continuing app's delegate has the activity with a 3 KB userInfo, on a reused session (warm) and on a \
                new one (cold: TCP, TLS 1.3 handshake, fetch). Baselines from the same run: one 88-byte UDP datagram \
                between two sockets, and a 3 KB request/response over plain TCP (kept open, and newly connected). \
                Targets: visible p50 < 5 ms; warm p50 < 2 ms and p99 < 10 ms; cold p50 < 15 ms. Apple's design \
                waits at least 500 ms between adverts and up to 1 s for the app's state.
                """
        )

        @Option(help: "Measurements of each kind (cold ones: a quarter of this).")
        var count = 200

        @Flag(help: "Print the results as JSON.")
        var json = false

        func validate() throws {
            guard (8...100_000).contains(count) else { throw ValidationError("--count must be between 8 and 100000.") }
        }

        func run() async throws {
            #if DEBUG
            if !json { print("note: this is a debug build; for real figures run `swift run -c release baton bench handoff`\n") }
            #endif
            let results = try await HandoffBench(count: count).run()
            if json {
                let objects = results.map { row -> [String: Any] in
                    [
                        "measure": row.name, "p50Microseconds": row.p50 * 1e6, "p99Microseconds": row.p99 * 1e6,
                        "baselineP50Microseconds": row.baselineP50 * 1e6, "target": row.target, "met": row.met,
                    ]
                }
                let data = try JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .prettyPrinted])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            print("measure".padding(40) + "p50".padding(11) + "p99".padding(11) + "baseline p50".padding(14) + "ratio".padding(8) + "target")
            for row in results {
                let ratio = String(format: "%.1fx", row.p50 / max(row.baselineP50, 1e-9))
                print(
                    row.name.padding(40) + formatMicroseconds(row.p50).padding(11) + formatMicroseconds(row.p99).padding(11)
                        + formatMicroseconds(row.baselineP50).padding(14) + ratio.padding(8) + "\(row.target) \(row.met ? "met" : "MISSED")"
                )
            }
            print("\nbaselines: \(results.map { "\($0.name): \($0.baseline)" }.joined(separator: "; "))")
        }
    }
}

struct HandoffRow {
    let name: String
    let p50: Double
    let p99: Double
    let baseline: String
    let baselineP50: Double
    let target: String
    let met: Bool
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

    func run() async throws -> [HandoffRow] {
        let apps = FileManager.default.temporaryDirectory.appendingPathComponent("baton-bench-apps-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: apps) }
        try writeShopSnapBundle(in: apps)
        let devices = try await LocalDevices.start(names: ["laptop", "desktop"], apps: AppRegistry.load(searchPaths: [apps])) { configuration in
            // Re-adverts would only add noise; each becomeCurrent advertises at once anyway.
            configuration.advertInterval = 30
            configuration.nearbyTimeToLive = 300
        }
        defer { Task { await devices.shutdown() } }
        let (laptopAgent, desktopAgent) = (devices.agents[0], devices.agents[1])
        let changes = NIOLockedValueBox<[UInt64]>([])
        desktopAgent.observeNearby { _, change in
            if change == .added || change == .replaced { changes.withLockedValue { $0.append(DispatchTime.now().uptimeNanoseconds) } }
        }
        let laptop = BatonApplication()
        let desktop = BatonApplication()
        try await laptop.connect(bundleIdentifier: shopSnapBundleIdentifier, socketPath: laptopAgent.socketPath)
        try await desktop.connect(bundleIdentifier: shopSnapBundleIdentifier, socketPath: desktopAgent.socketPath)
        var events = desktop.events.makeAsyncIterator()

        // becomeCurrent → visible in the desktop's nearby table.
        var visible: [Double] = []
        var activity = try UserActivity(activityType: activityTypeView, application: laptop)
        for index in 0..<count + 10 {
            activity = try UserActivity(activityType: index % 2 == 0 ? activityTypeView : activityTypeEdit, application: laptop)
            activity.userInfo = BenchmarkData.userInfo(encodedSize: 3 * 1024).dictionaryValue ?? [:]
            let before = changes.withLockedValue { $0.count }
            let start = DispatchTime.now().uptimeNanoseconds
            activity.becomeCurrent()
            var arrived: UInt64?
            while arrived == nil, seconds(since: start) < 1 {
                arrived = changes.withLockedValue { $0.count > before ? $0[before] : nil }
                await Task.yield()
            }
            guard let arrived else { throw CommandLineError("an advert never arrived within 1 s (iteration \(index))") }
            if index >= 10 { visible.append(Double(arrived - start) / 1e9) }
            // Receivers allow a device 50 adverts a second (AdvertReceiver.Limits); stay under it.
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
        var warm: [Double] = []
        for index in 0..<count + 10 {
            activity.needsSave = true
            let elapsed = try await continueOnce()
            if index >= 10 { warm.append(elapsed) }
        }
        var cold: [Double] = []
        for _ in 0..<max(count / 4, 8) {
            laptopAgent.closeLinks()
            desktopAgent.closeLinks()
            try await Task.sleep(for: .milliseconds(2))
            activity.needsSave = true
            cold.append(try await continueOnce())
        }
        laptop.disconnect()
        desktop.disconnect()

        let baselines = try await LoopbackBaselines(count: count).run()
        let (visible50, visible99) = percentiles(visible)
        let (warm50, warm99) = percentiles(warm)
        let (cold50, cold99) = percentiles(cold)
        return [
            HandoffRow(
                name: "becomeCurrent → visible in nearby", p50: visible50, p99: visible99, baseline: "UDP datagram", baselineP50: baselines.udp,
                target: "p50 < 5 ms", met: visible50 < 0.005
            ),
            HandoffRow(
                name: "continue → delivered, warm session", p50: warm50, p99: warm99, baseline: "3 KB TCP round trip", baselineP50: baselines.tcpWarm,
                target: "p50 < 2 ms, p99 < 10 ms", met: warm50 < 0.002 && warm99 < 0.010
            ),
            HandoffRow(
                name: "continue → delivered, cold session", p50: cold50, p99: cold99, baseline: "TCP connect + 3 KB round trip",
                baselineP50: baselines.tcpCold, target: "p50 < 15 ms", met: cold50 < 0.015
            ),
        ]
    }
}

/// The floor Baton is compared with, measured in the same run on the same loopback: what a bare socket costs.
struct LoopbackBaselines {
    let count: Int

    /// One-way 88-byte UDP datagram; 3 KB request/response over a kept TCP connection; the same on a new one.
    func run() async throws -> (udp: Double, tcpWarm: Double, tcpCold: Double) {
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
            while arrivals.withLockedValue({ $0.count }) == before { await Task.yield() }
            udp.append(Double(arrivals.withLockedValue { $0[before] } - start) / 1e9)
        }
        try await sender.close()
        try await receiver.close()

        let server = try await ServerBootstrap(group: group)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Echo()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = server.localAddress?.port ?? 0
        let request = ByteBuffer(repeating: 1, count: 3 * 1024)
        func connect() async throws -> (Channel, RoundTrip) {
            let trip = RoundTrip()
            let channel = try await ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(trip) }
                }
                .connect(host: "127.0.0.1", port: port).get()
            return (channel, trip)
        }
        func exchange(_ channel: Channel, _ trip: RoundTrip) async throws {
            let done = channel.eventLoop.makePromise(of: Void.self)
            try await channel.eventLoop.submit { trip.expect(request.readableBytes, done) }.get()
            channel.writeAndFlush(request, promise: nil)
            try await done.futureResult.get()
        }
        var warm: [Double] = []
        let (kept, keptTrip) = try await connect()
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            try await exchange(kept, keptTrip)
            warm.append(seconds(since: start))
        }
        try await kept.close()
        var cold: [Double] = []
        for _ in 0..<max(count / 4, 8) {
            let start = DispatchTime.now().uptimeNanoseconds
            let (channel, trip) = try await connect()
            try await exchange(channel, trip)
            cold.append(seconds(since: start))
            try await channel.close()
        }
        try await server.close()
        return (percentiles(udp).0, percentiles(warm).0, percentiles(cold).0)
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

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        remaining -= unwrapInboundIn(data).readableBytes
        if remaining <= 0 {
            promise?.succeed()
            promise = nil
        }
    }
}
