@testable import Baton
import BatonClient
import BatonCore
import BatonProtocol
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

/// A direct stream's end closes its connection itself once both directions ended (issue 30, F3): never before its own
/// `eof` is written. Under a full test run's load, 1 to 2 of 20 streams lost their `eof` (the other side's reader failed
/// with `appGone`, this side's `finish` with `streamClosed`): the other side's `eof` arrived on the event loop, which
/// answered the waiting reader and then checked whether the stream had ended cleanly; the reader's task, resumed on
/// another thread, had finished its side in between, so the check found it ended and closed the connection after
/// the write before the `eof`, whose write then failed.
@Suite("A direct stream closes only after its own eof is written (issue 30, F3)")
struct DirectStreamCloseTests {
    /// A conduit that records what the stream hands it, and holds the write of `eof` until told to go on: the window
    /// between the machine's finish and the `eof` reaching the connection, made wide.
    final class RecordingConduit: AppConduit, @unchecked Sendable {
        let loop = EmbeddedEventLoop()
        private let recorded = NIOLockedValueBox<[String]>([])
        /// Signalled when the write of `eof` has begun; the write waits for `proceed` (at most a second).
        let eofWriteBegan = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)

        var events: [String] { recorded.withLockedValue { $0 } }

        var eventLoop: EventLoop { loop }
        var isActive: Bool { true }
        var isWritable: Bool { true }
        var closeFuture: EventLoopFuture<Void> { loop.makeSucceededFuture(()) }
        func peerCredentials() -> EventLoopFuture<PeerCredentials> {
            loop.makeFailedFuture(ContinuationError(.other, "no peer"))
        }
        func attach(_ sink: MessageSink) {}
        func send(_ message: PropertyList) {}
        func setReading(_ reading: Bool) {}

        func write(_ frame: OutboundFrame) -> EventLoopFuture<Void> {
            if case .message(let body) = frame,
                let plist = try? BinaryPropertyListDecoder.decode(Data(body.readableBytesView), limits: MessageHandler.limits),
                (try? IPCMessage(plist)) == .endOfStream
            {
                eofWriteBegan.signal()
                _ = proceed.wait(timeout: .now() + 1)
                recorded.withLockedValue { $0.append("eof") }
            } else {
                recorded.withLockedValue { $0.append("bytes") }
            }
            return loop.makeSucceededFuture(())
        }

        func close() {
            recorded.withLockedValue { $0.append("close") }
            proceed.signal()
        }
    }

    @Test("F3: the other side's eof answers the reader, whose task finishes this side at once: the close comes after this side's eof")
    func eofBeforeClose() {
        let conduit = RecordingConduit()
        let end = StreamEnd(conduit: conduit)
        end.update { $0.openedDirect() }
        #expect(end.path == .direct)

        // The reader waits; the other side's eof answers it on the "event loop" (this thread), and the reader's
        // task finishes its side on another thread, as a resumed task does, before the loop's turn is over.
        end.read { result in
            guard result == .end else { return }
            Thread { end.finishWithoutWaiting() }.start()
            // The finish is under way: the machine has finished, and the eof is being handed to the conduit.
            _ = conduit.eofWriteBegan.wait(timeout: .now() + 5)
        }
        end.received(IPCMessage.endOfStream.propertyList)
        conduit.proceed.signal()
        let deadline = Date().addingTimeInterval(5)
        while conduit.events.filter({ $0 != "bytes" }).count < 2, Date() < deadline { usleep(1000) }
        #expect(conduit.events.filter { $0 != "bytes" } == ["eof", "close"], "the eof goes out, then the connection closes")
    }
}
