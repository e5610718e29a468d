import NIOCore

/// The handler of a bus app's stream pipes (issue 28 item 1): passes what the channel reads, its input's end of
/// file and its close to the ``DBusStreamConduit``, which decides when its owner hears them.
///
/// `@unchecked Sendable`: like every NIO handler it is touched only on its channel's loop (``conduit`` is set there
/// too, before the channel reads anything: it is made with autoRead off); Sendable only so the bootstrap's initializer
/// and the task that sets the conduit can capture it.
final class DBusStreamPipeHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    /// Set on the loop right after the channel is made; the channel lets go of its handlers when it closes, and
    /// with them of the conduit.
    var conduit: DBusStreamConduit?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        conduit?.inbound(.data(unwrapInboundIn(data)))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            conduit?.inbound(.endOfFile)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        conduit?.channelClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A pipe that fails to read or write is over: the app's end is gone.
        conduit?.failed()
        context.close(promise: nil)
    }
}
