@testable import BatonAgent
@testable import BatonClient
import BatonCore
import BatonProtocol
import Foundation
import NIOCore
import NIOEmbedded
import Testing

/// The agent's side of the app socket, as a handler would see it: who it hears from, when it is closed.
final class RecordingIPCHandler: IPCHandler, @unchecked Sendable {
    // Touched only on the EmbeddedChannel's loop, which is the test's own thread.
    var received: [IPCMessage] = []
    var closedCount = 0

    func ipcReceived(_ message: IPCMessage, on connection: IPCConnection) { received.append(message) }
    func ipcClosed(_ connection: IPCConnection) { closedCount += 1 }
}

/// A peer that never reads (issue 11 part 2): what the agent writes waits in the channel's outbound buffer; past
/// ``Backpressure/unread`` bytes the channel is unwritable and the agent disconnects the peer rather than buffer on.
@Suite("Issue 11: a peer that never reads is disconnected")
struct BackpressureTests {
    static func connection() throws -> (EmbeddedChannel, IPCConnection, RecordingIPCHandler) {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder()))
        try channel.pipeline.syncOperations.addHandler(FrameEncoder())
        let messages = MessageHandler()
        try channel.pipeline.syncOperations.addHandler(messages)
        let handler = RecordingIPCHandler()
        let credentials = PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid())
        let connection = IPCConnection(channel: channel, credentials: credentials, handler: handler)
        messages.attach(connection)
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/tmp/embedded")).wait()
        return (channel, connection, handler)
    }

    @Test("while the client reads, messages go out; once it has left the limit unread, the next send closes it")
    func unreadClientIsClosed() throws {
        let (channel, connection, handler) = try Self.connection()
        connection.send(.continued(activity: 1))
        let written = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(written.readableBytes > 4, "a frame went out")

        // The client stops reading: the outbound buffer passes the water mark and the channel turns unwritable.
        channel.isWritable = false
        connection.send(.continued(activity: 2))
        #expect(!channel.isActive, "disconnected rather than buffered")
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing more was queued for it")
        #expect(handler.closedCount == 1, "the agent hears it is gone once: its fetches and continuations end (C8)")
    }

    @Test("the limit is far above the largest payload, so a legitimate delivery never trips it (A11)")
    func limitIsAboveThePayloadLimit() {
        #expect(Backpressure.unread >= 8 * ActivityPayload.maximumEncodedSize)
        #expect(Backpressure.waterMark.high == Backpressure.unread && Backpressure.waterMark.low < Backpressure.waterMark.high)
    }
}
