@testable import Baton
import BatonEmbedded
import BatonTestSupport
import Foundation
import Synchronization
import Testing

/// The originating app's side of F3: for each stream, reads the request to its end, then writes back a reply of
/// `replySize` patterned bytes and finishes.
@MainActor
final class StreamServer: UserActivityDelegate {
    var requests: [Tally] = []
    var failures: [String] = []
    var replySize: Int
    var open: [ContinuationStreams] = []

    init(replySize: Int) {
        self.replySize = replySize
    }

    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {
        let size = replySize
        Task {
            do {
                var tally = Tally()
                for try await chunk in streams.input { tally.add(chunk) }
                requests.append(tally)
                // The reply names the request's seed byte, so concurrent streams' replies differ.
                try await streams.output.write(Data(patterned(size, seed: UInt8(truncatingIfNeeded: tally.count))))
                try await streams.output.finish()
            } catch {
                failures.append("\(error)")
            }
        }
    }
}

/// Where a stream runs in a test, each a path of issue 30's.
enum StreamRoute: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// Agents in memory (issue 26 item 3): no socket, virtual time; relayed (nothing to pass).
    case memory
    /// Agents on TLS over loopback, apps on Unix sockets: the apps hold the stream's TLS connection themselves.
    case direct
    /// The same, with the agents set to relay (``AgentConfiguration/streamPath``): the path of an older peer.
    case relayed
    /// Only the originating device's agent relays (as one from before issue 30): the continuing side's offer of the
    /// direct path goes unanswered, and the stream is relayed.
    case originRelays
    /// Only the continuing device's agent relays: it offers nothing, and the originating side relays too.
    case continuingRelays

    var testDescription: String { rawValue }

    /// The path a stream opened here takes.
    var path: StreamPath { self == .direct ? .direct : .relayed }
}

/// On every path (issue 30): in memory, where the agents' sessions, the apps' connections and the streams' own
/// connections carry no socket and time is virtual; and over real sockets and TLS, direct and relayed. What is tested
/// is what the library and the agents do with a stream; the socket and TLS under the relayed path are also
/// StreamSpliceTests' (and StreamEndTests' socket suite).
@Suite("Continuation streams through two agents, with the library (F1–F3)", .serialized)
@MainActor
struct ContinuationStreamsTests {
    static let type = "com.example.notes.edit"

    /// Two devices wholly in memory, on virtual time; or on loopback, direct or relayed.
    static func world(_ route: StreamRoute = .memory) async throws -> TwoDevices {
        switch route {
        case .memory: try await TwoDevices(transport: .memory)
        case .direct: try await TwoDevices(transport: .network)
        case .relayed: try await TwoDevices(transport: .network, streamPath: .relayed)
        case .originRelays: try await TwoDevices(transport: .network, relaying: ["laptop"])
        case .continuingRelays: try await TwoDevices(transport: .network, relaying: ["desktop"])
        }
    }

    /// Two devices; the laptop's activity (streams or not, with `delegate` or none) is continued on the desktop.
    static func continued(
        streams: Bool,
        delegate: UserActivityDelegate?,
        route: StreamRoute = .memory
    ) async throws -> (TwoDevices, UserActivity, UserActivity) {
        // A generous save deadline: these tests are about streams, and beside the whole suite on two cores the app's
        // answer can take longer than the usual second.
        let world = try await Self.world(route)
        let activity = try UserActivity(activityType: type, application: world.laptop)
        activity.title = "Draft"
        activity.supportsContinuationStreams = streams
        activity.delegate = delegate
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        let events = await world.continueOnDesktop()
        guard case .continued(let continued) = events.last else {
            await world.stop()
            throw ContinuationError(.other, "not continued: \(events)")
        }
        return (world, activity, continued)
    }

    @Test(
        "F1-F3: a request and its reply, checksummed both ways; each reader ends cleanly on the other's finish",
        arguments: StreamRoute.allCases, [1, 100_000, 2_000_000]
    )
    func requestReply(route: StreamRoute, size: Int) async throws {
        let server = StreamServer(replySize: size)
        let (world, origin, continued) = try await Self.continued(streams: true, delegate: server, route: route)
        let streams = try await continued.continuationStreams()
        #expect(streams.path == route.path)
        let request = patterned(size, seed: 3)
        try await streams.output.write(Data(request))
        try await streams.output.finish()
        var reply = Tally()
        for try await chunk in streams.input { reply.add(chunk) }
        #expect(reply == Tally(patterned(size, seed: UInt8(truncatingIfNeeded: size))))
        #expect(server.requests == [Tally(request)], "\(server.failures)")
        _ = origin
        await world.stop()
    }

    @Test("F3: a live two-way exchange: each side writes while the other still writes back", arguments: StreamRoute.allCases)
    func twoWay(route: StreamRoute) async throws {
        let echo = EchoServer()
        let (world, origin, continued) = try await Self.continued(streams: true, delegate: echo, route: route)
        let streams = try await continued.continuationStreams()
        var iterator = streams.input.makeAsyncIterator()
        for round in 0..<20 {
            let line = Data("line \(round)".utf8)
            try await streams.output.write(line)
            var echoed = Data()
            while echoed.count < line.count, let chunk = try await iterator.next(isolation: #isolation) { echoed.append(chunk) }
            #expect(echoed == line)
        }
        try await streams.output.finish()
        #expect(try await iterator.next(isolation: #isolation) == nil, "the echo finishes once this side has")
        _ = (origin, echo)
        await world.stop()
    }

    @Test("F1: streams for an activity made here are notContinued, checked locally")
    func notContinued() async throws {
        let activity = try UserActivity(activityType: Self.type, application: BatonApplication())
        activity.supportsContinuationStreams = true
        await #expect { try await activity.continuationStreams() } throws: { ($0 as? ContinuationError)?.code == .notContinued }
    }

    @Test("F1: streams for an activity whose origin did not set supportsContinuationStreams are noStreams, checked locally")
    func noStreams() async throws {
        let server = StreamServer(replySize: 1)
        let (world, origin, continued) = try await Self.continued(streams: false, delegate: server)
        #expect(!continued.supportsContinuationStreams)
        continued.supportsContinuationStreams = true  // what the payload said decides, not a later change here
        await #expect { try await continued.continuationStreams() } throws: { ($0 as? ContinuationError)?.code == .noStreams }
        _ = (origin, server)
        await world.stop()
    }

    @Test("F1, F3: an originating activity with streams but no delegate declines: noStreams from the other device", arguments: StreamRoute.allCases)
    func declined(route: StreamRoute) async throws {
        let (world, origin, continued) = try await Self.continued(streams: true, delegate: nil, route: route)
        await #expect { try await continued.continuationStreams() } throws: { ($0 as? ContinuationError)?.code == .noStreams }
        _ = origin
        await world.stop()
    }

    @Test("F3: four streams at once to one activity, each its own bytes", arguments: StreamRoute.allCases)
    func concurrent(route: StreamRoute) async throws {
        let server = StreamServer(replySize: 300_000)
        let (world, origin, continued) = try await Self.continued(streams: true, delegate: server, route: route)
        let sizes = [10_001, 200_002, 3_000_003, 1_000_004]
        var all: [ContinuationStreams] = []
        for _ in sizes { all.append(try await continued.continuationStreams()) }
        let replies = try await withThrowingTaskGroup(of: (Int, Tally).self) { group in
            for (streams, size) in zip(all, sizes) {
                group.addTask {
                    try await streams.output.write(Data(patterned(size, seed: 9)))
                    try await streams.output.finish()
                    var tally = Tally()
                    for try await chunk in streams.input { tally.add(chunk) }
                    return (size, tally)
                }
            }
            var replies: [Int: Tally] = [:]
            for try await (size, tally) in group { replies[size] = tally }
            return replies
        }
        for size in sizes {
            #expect(replies[size] == Tally(patterned(300_000, seed: UInt8(truncatingIfNeeded: size))), "stream of \(size)")
        }
        #expect(Set(server.requests.map(\.count)) == Set(sizes), "\(server.failures)")
        _ = origin
        await world.stop()
    }

    @Test("F3: the originating app closing its end fails the continuing side's reader and writer with appGone", arguments: StreamRoute.allCases)
    func originCloses(route: StreamRoute) async throws {
        let closer = Closer()
        let (world, origin, continued) = try await Self.continued(streams: true, delegate: closer, route: route)
        let streams = try await continued.continuationStreams()
        await #expect { try await streams.input.readAll() } throws: { ($0 as? ContinuationError)?.code == .appGone }
        _ = (origin, closer)
        await world.stop()
    }
}

extension ContinuationStreamsTests {
    /// Offers `activity` (already given its delegates), continues it on the desktop and opens a stream to it; returns
    /// once the stream is over.
    static func openStream(to activity: UserActivity, in world: TwoDevices) async throws {
        activity.supportsContinuationStreams = true
        activity.becomeCurrent()
        try await world.waitUntilNearby()
        guard case .continued(let continued) = await world.continueOnDesktop().last else {
            throw ContinuationError(.other, "not continued")
        }
        let streams = try await continued.continuationStreams()
        _ = try? await streams.input.readAll()
    }

    @Test("F3: with both delegates, the NSUserActivityDelegate gets the stream while an NSUserActivity holds the activity")
    func appleDelegatePreferred() async throws {
        let world = try await Self.world()
        let (baton, apple) = (BatonReceiver(), AppleReceiver())
        let wrapper = NSUserActivity(activityType: Self.type, application: world.laptop)
        wrapper.activity.delegate = baton
        wrapper.delegate = apple
        try await Self.openStream(to: wrapper.activity, in: world)
        #expect(apple.received == 1 && baton.received == 0)
        await world.stop()
    }

    @Test("F3: with both delegates and no NSUserActivity alive, the UserActivityDelegate gets the stream")
    func batonDelegateOtherwise() async throws {
        let world = try await Self.world()
        let (baton, apple) = (BatonReceiver(), AppleReceiver())
        let activity = try UserActivity(activityType: Self.type, application: world.laptop)
        activity.delegate = baton
        activity.nsUserActivity.delegate = apple  // through a wrapper that is gone after this line
        try await Self.openStream(to: activity, in: world)
        #expect(baton.received == 1 && apple.received == 0)
        await world.stop()
    }
}

extension ContinuationStreamsTests {
    @Test("issue 30: Apple's streams say their path under Stream.PropertyKey.batonStreamPath, on every path", arguments: StreamRoute.allCases)
    func foundationStreamsSayTheirPath(route: StreamRoute) async throws {
        let world = try await Self.world(route)
        let apple = AppleReceiver()
        let wrapper = NSUserActivity(activityType: Self.type, application: world.laptop)
        wrapper.delegate = apple
        try await Self.openStream(to: wrapper.activity, in: world)
        #expect(apple.paths == [route.path.rawValue])
        await world.stop()
    }
}

/// Records receiving a stream in Baton's shape, and closes it.
@MainActor
final class BatonReceiver: UserActivityDelegate {
    var received = 0

    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {
        received += 1
        streams.close()
    }
}

/// Records receiving a stream in Apple's shape (on a thread of its own), and closes it.
final class AppleReceiver: NSUserActivityDelegate, Sendable {
    private let count = Mutex(0)
    var received: Int { count.withLock { $0 } }

    /// What each stream's input said its path was (issue 30).
    var paths: [String] { seenPaths.withLock { $0 } }
    private let seenPaths = Mutex<[String]>([])

    func userActivity(_ userActivity: NSUserActivity, didReceive inputStream: InputStream, outputStream: OutputStream) {
        #expect(!Thread.isMainThread)
        let path = inputStream.property(forKey: .batonStreamPath) as? String ?? "none"
        seenPaths.withLock { $0.append(path) }
        count.withLock { $0 += 1 }
        inputStream.close()
        outputStream.close()
    }
}

/// Writes back what it reads, until the other side finishes; then finishes too.
@MainActor
final class EchoServer: UserActivityDelegate {
    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {
        Task.detached {
            for try await chunk in streams.input { try await streams.output.write(chunk) }
            try await streams.output.finish()
        }
    }
}

/// Takes the stream and closes it at once.
@MainActor
final class Closer: UserActivityDelegate {
    func userActivity(_ userActivity: UserActivity, didReceive streams: ContinuationStreams) {
        streams.close()
    }
}
