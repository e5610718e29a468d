@testable import BatonAgent
import BatonClient
import BatonCore
import BatonEmbedded
import BatonProtocol
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Bus apps' continuation streams through two real agents (issue 28 item 1; F1–F3): the entry points the D-Bus
/// adapter calls (``Agent/openBusStream(bundle:credentials:process:continuation:)``, ``Agent/prepareBusStream(bundle:credentials:process:token:)``
/// and ``Agent/acceptBusStream(_:)``), each app holding its two pipe ends as it would after the `h` arrived; no bus.
/// The apps' main connections are the socket's (``StreamSpliceTests/continued(streams:streamRelease:)``).
@Suite("Bus apps' continuation streams through two agents, as pipes (issue 28 item 1; F1–F3)", .serialized)
struct DBusStreamAgentTests {
    static let bundle = "com.example.Notes"

    static var credentials: PeerCredentials { PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()) }

    /// An app's two ends as it holds them once `h` arrived: duplicates (sd-bus sends duplicates), the agent's copies
    /// closed, as the adapter does after sending.
    struct AppEnds {
        var input: Int32
        var output: Int32

        init(_ stream: DBusStream) {
            input = fcntl(stream.appInput, F_DUPFD_CLOEXEC, 0)
            output = fcntl(stream.appOutput, F_DUPFD_CLOEXEC, 0)
            stream.closeAppEnds()
        }
    }

    /// The desktop's app opens a stream to the laptop's, which takes it: both open, both apps' ends.
    static func openPair(_ devices: LocalDevices, laptop: AgentClient, continuation: UInt64) async throws -> (opened: DBusStream, accepted: DBusStream) {
        let opening = devices.agents[1].openBusStream(bundle: bundle, credentials: credentials, continuation: continuation)
        let (activity, token) = try #require(await announcement(to: laptop))
        #expect(activity == 1)
        // AcceptStream(activity, stream, input, output) would go to the app here; it answers, and the stream opens.
        let accepted = try await devices.agents[0].prepareBusStream(bundle: bundle, credentials: credentials, token: token).get()
        try await devices.agents[0].acceptBusStream(accepted).get()
        let opened = try await opening.get()
        #expect(opened.number != accepted.number || opened.connection !== accepted.connection)
        return (opened, accepted)
    }

    @Test("F2, F3: a megabyte each way between two bus apps' pipes, checksummed; each app's eof is the other's end of file")
    func megabyteEachWay() async throws {
        let (devices, laptop, _, continuation) = try await StreamSpliceTests.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let (opened, accepted) = try await Self.openPair(devices, laptop: laptop, continuation: continuation)
        let desktopApp = AppEnds(opened)
        let laptopApp = AppEnds(accepted)
        let up = Array(RawStreamEnd.pattern(1 << 20, seed: 11).readableBytesView)
        let down = Array(RawStreamEnd.pattern(1 << 20, seed: 13).readableBytesView)
        async let atLaptop = AppPipeEnd.readToEnd(laptopApp.input)
        async let atDesktop = AppPipeEnd.readToEnd(desktopApp.input)
        async let upWritten = AppPipeEnd.write(desktopApp.output, up)
        async let downWritten = AppPipeEnd.write(laptopApp.output, down)
        let (upOK, downOK) = await (upWritten, downWritten)
        #expect(upOK && downOK)
        close(desktopApp.output)
        close(laptopApp.output)
        let (laptopGot, desktopGot) = await (atLaptop, atDesktop)
        close(desktopApp.input)
        close(laptopApp.input)
        #expect(laptopGot.count == up.count && desktopGot.count == down.count)
        #expect(Self.checksum(laptopGot) == Self.checksum(up), "the laptop's app read other bytes than the desktop's wrote")
        #expect(Self.checksum(desktopGot) == Self.checksum(down))
        // Ended cleanly both ways: neither app heard a reset, and both agents let go of the stream's ends.
        let resets = NIOLockedValueBox<[DBusStreamReset]>([])
        for stream in [opened, accepted] { stream.whenReset { reset in resets.withLockedValue { $0.append(reset) } } }
        try await opened.conduit.closeFuture.get()
        try await accepted.conduit.closeFuture.get()
        #expect(resets.withLockedValue { $0 }.isEmpty)
        for _ in 0..<500 where devices.agents[0].handoff.heldStreamEnds(of: Self.bundle) + devices.agents[1].handoff.heldStreamEnds(of: Self.bundle) > 0 {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(devices.agents[0].handoff.heldStreamEnds(of: Self.bundle) == 0 && devices.agents[1].handoff.heldStreamEnds(of: Self.bundle) == 0)
    }

    /// The `incomingStream` the originating app's main connection is told: its activity and token.
    static func announcement(to app: AgentClient) async -> (activity: UInt64, token: Data)? {
        for await message in app.messages {
            if case .incomingStream(let activity, let token) = message { return (activity, token) }
        }
        return nil
    }

    /// Why `opening` failed; nil (and an issue recorded) if it opened.
    static func refusal(_ opening: EventLoopFuture<DBusStream>) async -> DBusStreamRefusal? {
        do {
            _ = try await opening.get()
            Issue.record("the stream opened")
        } catch let refusal as DBusStreamRefusal {
            return refusal
        } catch {
            Issue.record("not a DBusStreamRefusal: \(error)")
        }
        return nil
    }

    /// FNV-1a 64 of `bytes`.
    static func checksum(_ bytes: [UInt8]) -> UInt64 {
        bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    @Test("F3: an app that closes both its ends mid-stream has gone: the other app's StreamReset says AppGone, and its pipes close")
    func appGoneResets() async throws {
        let (devices, laptop, _, continuation) = try await StreamSpliceTests.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let (opened, accepted) = try await Self.openPair(devices, laptop: laptop, continuation: continuation)
        let desktopApp = AppEnds(opened)
        let laptopApp = AppEnds(accepted)
        defer {
            close(desktopApp.input)
            close(desktopApp.output)
        }
        let reset = NIOLockedValueBox<DBusStreamReset?>(nil)
        opened.whenReset { heard in reset.withLockedValue { $0 = heard } }
        // The laptop's app quits with the stream open (its writes not ended, nothing read).
        close(laptopApp.input)
        close(laptopApp.output)
        // The desktop's app reads its end of file once StreamReset has been called.
        #expect(await AppPipeEnd.readToEnd(desktopApp.input).isEmpty)
        try await opened.conduit.closeFuture.get()
        #expect(reset.withLockedValue { $0?.errorName } == "org.baton.Error.AppGone", "\(String(describing: reset.withLockedValue { $0 }))")
    }

    @Test("F1: OpenStream for a continuation not delivered to the app fails NotContinued")
    func notContinued() async throws {
        let (devices, _, _, continuation) = try await StreamSpliceTests.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let opening = devices.agents[1].openBusStream(bundle: Self.bundle, credentials: Self.credentials, continuation: continuation + 100)
        #expect(await Self.refusal(opening)?.errorName == "org.baton.Error.NotContinued")
    }

    @Test("F1: OpenStream for an activity without supportsContinuationStreams fails NoStreams")
    func noStreams() async throws {
        let (devices, _, _, continuation) = try await StreamSpliceTests.continued(streams: false)
        defer { Task { await devices.shutdown() } }
        let refusal = await Self.refusal(devices.agents[1].openBusStream(bundle: Self.bundle, credentials: Self.credentials, continuation: continuation))
        #expect(refusal?.code == .stream(.noStreams))
        #expect(refusal?.errorName == "org.baton.Error.NoStreams")
    }

    @Test("F3: an originating app that declines (an error reply to AcceptStream) fails the other's OpenStream with NoStreams")
    func declined() async throws {
        let (devices, laptop, _, continuation) = try await StreamSpliceTests.continued(streams: true)
        defer { Task { await devices.shutdown() } }
        let opening = devices.agents[1].openBusStream(bundle: Self.bundle, credentials: Self.credentials, continuation: continuation)
        let token = try #require(await Self.announcement(to: laptop)).token
        let offered = try await devices.agents[0].prepareBusStream(bundle: Self.bundle, credentials: Self.credentials, token: token).get()
        devices.agents[0].declineBusStream(offered, message: "org.example.Error.NotNow: busy")
        let refusal = await Self.refusal(opening)
        #expect(refusal?.code == .stream(.noStreams))
        #expect(refusal?.message.contains("busy") == true)
        try await offered.conduit.closeFuture.get()
    }
}
