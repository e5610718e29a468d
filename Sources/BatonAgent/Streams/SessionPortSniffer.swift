import BatonProtocol
import NIOCore

/// The first handler of every connection accepted on the session port (issue 30): a TLS session starts with its
/// ClientHello (first byte 0x16), a direct stream's connection with a ``StreamPreamble`` (first byte `B`). One port
/// for both, so a firewall that lets Baton in lets its streams in.
///
/// On TLS it hands over to `startTLS` (which adds the session's handlers behind this one), passes on what it read
/// and leaves. On a preamble it stops reading (the continuing side sends nothing more until the originating app's
/// TLS speaks, so no byte meant for an app is read here) and gives the channel to `arrived`. A connection that says
/// neither within ``deadline`` is closed, as a session whose handshake is too slow is; so is one whose first bytes
/// are not a preamble's after its first byte said it would be.
final class SessionPortSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// As long as a TLS handshake may take (``HandshakeWaiter/deadline``).
    static let deadline = HandshakeWaiter.deadline

    private let startTLS: (Channel) throws -> Void
    private let arrived: (StreamPreamble, Channel) -> Void
    /// Called once when the connection turns out not to be a session whose handshake runs (a preamble, garbage, or
    /// nothing before it closed or the deadline): the caller counts handshakes in progress.
    private let undecided: () -> Void
    private var pending: ByteBuffer?
    private var decided = false
    private var timer: Scheduled<Void>?

    init(startTLS: @escaping (Channel) throws -> Void, arrived: @escaping (StreamPreamble, Channel) -> Void, undecided: @escaping () -> Void) {
        self.startTLS = startTLS
        self.arrived = arrived
        self.undecided = undecided
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: Self.deadline) { [self] in
            guard !decided else { return }
            decide()
            undecided()
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decided else { return }
        var bytes = unwrapInboundIn(data)
        if pending == nil {
            pending = bytes
        } else {
            pending?.writeBuffer(&bytes)
        }
        guard let seen = pending, let first = seen.readableBytesView.first else { return }
        guard StreamPreamble.startsPreamble(first) else {
            decide()
            do {
                try startTLS(context.channel)
            } catch {
                undecided()
                context.close(promise: nil)
                return
            }
            pending = nil
            context.fireChannelRead(wrapInboundOut(seen))
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        do {
            guard let preamble = try StreamPreamble.parse(seen.readableBytesView) else { return }
            decide()
            undecided()
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
            arrived(preamble, context.channel)
        } catch {
            decide()
            undecided()
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !decided {
            decide()
            undecided()
        }
        context.fireChannelInactive()
    }

    private func decide() {
        decided = true
        timer?.cancel()
        timer = nil
    }
}
