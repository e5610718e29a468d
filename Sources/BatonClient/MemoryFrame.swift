import BatonCore
import NIOCore

/// One frame between two ends of a connection inside the process (issue 26 item 3): what a socket would carry
/// encoded, carried as it is.
package enum MemoryFrame: Sendable {
    case message(PropertyList)
    case data(stream: UInt64, opener: Bool, ByteBuffer)

    /// Gives the frame to `sink` as ``MessageHandler`` would: a data frame where none may come is a broken connection,
    /// and `close` is called.
    package func deliver(to sink: MessageSink, close: () -> Void) {
        switch self {
        case .message(let message):
            sink.received(message)
        case .data(let stream, let opener, let bytes):
            guard sink.receivedData(stream: stream, opener: opener, bytes) else {
                sink.malformed(BatonClientError(.protocolViolation, "a data frame where none may come"))
                close()
                return
            }
        }
    }
}
