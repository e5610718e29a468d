import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// One measurement of a path: the whole and its hops, in order (seconds).
struct HopSample: Sendable {
    var total: Double
    var hops: [Double]

    /// From the moments the path passed, in CLOCK_MONOTONIC nanoseconds: start, each stamp, end.
    init(points: [UInt64]) {
        total = Double((points.last ?? 0) &- (points.first ?? 0)) / 1e9
        hops = zip(points, points.dropFirst()).map { Double($1 &- $0) / 1e9 }
    }

    init(total: Double, hops: [Double]) {
        self.total = total
        self.hops = hops
    }

    /// The hops from `range` taken as one.
    func leg(_ range: Range<Int>) -> Double {
        hops[range.clamped(to: hops.indices)].reduce(0, +)
    }
}

/// The floor pipeline of `baton bench handoff` (issue 26 item 5): Baton's processes and hops with nothing of Baton in
/// them. Two child processes of the shipped binary (`baton bench floor-node`) play devices A and B; this process plays
/// the apps, the watcher and the control client, as it does for the embedded agents, and in the same style: each
/// Unix connection's frames come as an async sequence from the event loop, the apps answer on the main actor.
///   visible: app → Unix socket → A → one UDP datagram → B → Unix socket → watcher
///   continue: control → Unix socket → B → fetch over an open mutual TLS 1.3 link (cold: a new one) → A → Unix socket
///   → origin app, its 3 KB state back → A → TLS → B → Unix socket → continuing app
@MainActor
final class HandoffFloor {
    /// The 3 KB the origin app answers with (the size of the bench's userInfo).
    static let stateBytes = 3 * 1024

    let folder: URL
    let nodes: [Process]
    let inputs: [FileHandle]
    let appA: FloorClient
    let controlB: FloorClient
    let appB: FloorClient
    let watcherB: FloorClient
    /// What the watcher saw: when (read by the watching task) and the frame's stamps.
    let watched = NIOLockedValueBox<[(arrived: UInt64, stamps: [UInt64])]>([])
    var deliveries: AsyncStream<FloorFrame>.Iterator
    var tasks: [Task<Void, Never>] = []

    init(folder: URL, nodes: [Process], inputs: [FileHandle], clients: [FloorClient]) {
        self.folder = folder
        self.nodes = nodes
        self.inputs = inputs
        (appA, watcherB, controlB, appB) = (clients[0], clients[1], clients[2], clients[3])
        deliveries = appB.frames.makeAsyncIterator()
    }

    /// Starts A and B from this executable, introduces them, and connects the apps, the watcher and the control client.
    static func start() async throws -> HandoffFloor {
        let folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("baton-floor-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let me = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        var nodes: [Process] = []
        var inputs: [FileHandle] = []
        var ports: [String] = []
        do {
            for name in ["a", "b"] {
                let process = Process()
                process.executableURL = me
                process.arguments = ["bench", "floor-node", "--socket", folder.appendingPathComponent("\(name).sock").path]
                let (input, output) = (Pipe(), Pipe())
                process.standardInput = input
                process.standardOutput = output
                try process.run()
                nodes.append(process)
                inputs.append(input.fileHandleForWriting)
                let line = await Task.detached { readLine(output.fileHandleForReading) }.value
                guard line.hasPrefix("ports ") else {
                    throw CommandLineError("the floor's node \(name) did not start (`\(me.path) bench floor-node` printed \"\(line)\")")
                }
                ports.append(String(line.dropFirst("ports ".count)))
            }
            inputs[0].write(Data((ports[1] + "\n").utf8))
            inputs[1].write(Data((ports[0] + "\n").utf8))
            let a = folder.appendingPathComponent("a.sock").path
            let b = folder.appendingPathComponent("b.sock").path
            var clients: [FloorClient] = []
            for (path, role) in [(a, FloorFrame.Role.app), (b, .watcher), (b, .control), (b, .app)] {
                clients.append(try await FloorClient.connect(path: path, role: role))
            }
            let floor = HandoffFloor(folder: folder, nodes: nodes, inputs: inputs, clients: clients)
            floor.startApps()
            return floor
        } catch {
            for input in inputs { try? input.close() }
            for node in nodes { node.terminate() }
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    /// The origin app answers each save with its 3 KB on the main actor (as a `BatonApplication` runs its delegates);
    /// the watcher's frames are taken by a task of their own (as the bench's watching control client's are).
    func startApps() {
        let (appA, state) = (appA, ByteBuffer(repeating: 7, count: Self.stateBytes))
        tasks.append(
            Task { @MainActor in
                for await frame in appA.frames where frame.kind == .save {
                    appA.send(FloorFrame(.saved, stamps: frame.stamps + [monotonicNanoseconds()], payload: state))
                }
            }
        )
        let (frames, watched) = (watcherB.frames, watched)
        tasks.append(
            Task.detached {
                for await frame in frames {
                    let arrived = monotonicNanoseconds()
                    watched.withLockedValue { $0.append((arrived, frame.stamps)) }
                }
            }
        )
    }

    /// One activity made current on A until the watcher on B has it: hops app → A, A → B, B → watcher.
    func visibleOnce() async throws -> HopSample {
        let before = watched.withLockedValue { $0.count }
        let start = monotonicNanoseconds()
        appA.send(FloorFrame(.current))
        var seen: (arrived: UInt64, stamps: [UInt64])?
        while seen == nil, monotonicNanoseconds() - start < 1_000_000_000 {
            seen = watched.withLockedValue { $0.count > before ? $0[before] : nil }
            // As the agents' visible loop: the arrival is stamped by the watching task, this only notices it.
            if seen == nil { try await Task.sleep(for: .microseconds(100)) }
        }
        guard let seen, seen.stamps.count == 2 else { throw CommandLineError("the floor's watcher saw no activity within 1 s") }
        return HopSample(points: [start] + seen.stamps + [seen.arrived])
    }

    /// One continue asked of B until its app has A's 3 KB: six hops on the open link; cold (`drop` first, then 2 ms
    /// as the agents' cold loop waits after closing their links), seven, the second being the new link's connect
    /// and mutual TLS 1.3 handshake.
    func continueOnce(cold: Bool) async throws -> HopSample {
        if cold {
            controlB.send(FloorFrame(.drop))
            try await Task.sleep(for: .milliseconds(2))
        }
        let start = monotonicNanoseconds()
        controlB.send(FloorFrame(.continue))
        var iterator = deliveries
        let frame = await iterator.next(isolation: #isolation)
        let end = monotonicNanoseconds()
        deliveries = iterator
        guard let frame, frame.kind == .deliver, frame.payload.readableBytes == Self.stateBytes else {
            throw CommandLineError("the floor's continuing app got no state (a floor node ended?)")
        }
        return HopSample(points: [start] + frame.stamps + [end])
    }

    /// Closes the connections and ends both nodes (closing their standard input).
    func stop() async {
        for task in tasks { task.cancel() }
        for client in [appA, watcherB, controlB, appB] { client.channel.close(promise: nil) }
        for input in inputs { try? input.close() }
        let nodes = nodes
        await Task.detached {
            let deadline = Date().addingTimeInterval(3)
            for node in nodes {
                while node.isRunning, Date() < deadline { usleep(10_000) }
                if node.isRunning { node.terminate() }
            }
        }.value
        try? FileManager.default.removeItem(at: folder)
    }
}

/// A line from `handle` (without its newline; "" at end of file).
private func readLine(_ handle: FileHandle) -> String {
    var bytes: [UInt8] = []
    while true {
        let data = handle.readData(ofLength: 1)
        guard let byte = data.first, byte != UInt8(ascii: "\n") else { break }
        bytes.append(byte)
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The bench process's end of a floor node's Unix socket, as an app's `AgentClient` is: frames in as an async
/// sequence fed from the event loop, frames out.
final class FloorClient: Sendable {
    let channel: Channel
    let frames: AsyncStream<FloorFrame>

    init(channel: Channel, frames: AsyncStream<FloorFrame>) {
        self.channel = channel
        self.frames = frames
    }

    /// Connects and says which role it has; returns once the node has taken the hello.
    static func connect(path: String, role: FloorFrame.Role) async throws -> FloorClient {
        let (frames, continuation) = AsyncStream.makeStream(of: FloorFrame.self)
        let ready = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Void.self)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addFloorHandlers(FloorYield(continuation, ready: ready))
                }
            }
            .connect(unixDomainSocketPath: path).get()
        let client = FloorClient(channel: channel, frames: frames)
        client.send(FloorFrame(.hello, payload: ByteBuffer(bytes: [role.rawValue])))
        try await ready.futureResult.get()
        return client
    }

    func send(_ frame: FloorFrame) {
        channel.writeAndFlush(frame, promise: nil)
    }
}

/// Yields a connection's frames to its client's async sequence; the node's answer to the hello completes `ready`.
final class FloorYield: ChannelInboundHandler {
    typealias InboundIn = FloorFrame

    let continuation: AsyncStream<FloorFrame>.Continuation
    let ready: EventLoopPromise<Void>
    var greeted = false

    init(_ continuation: AsyncStream<FloorFrame>.Continuation, ready: EventLoopPromise<Void>) {
        self.continuation = continuation
        self.ready = ready
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if frame.kind == .hello, !greeted {
            greeted = true
            ready.succeed()
        } else {
            continuation.yield(frame)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
        if !greeted { ready.fail(CommandLineError("the floor node closed the connection before its hello")) }
        greeted = true
        context.fireChannelInactive()
    }
}
