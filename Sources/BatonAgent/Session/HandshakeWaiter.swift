import NIOCore
import NIOSSL
import NIOTLS

/// Completes a promise when the TLS handshake finishes, or fails it when the handshake fails, the connection closes
/// first, or the deadline passes; so a session is handed to the account flows only once the peer is verified.
final class HandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// How long a handshake may take.
    static let deadline = TimeAmount.seconds(5)

    let promise: EventLoopPromise<Void>
    var completed = false
    var timeout: Scheduled<Void>?

    init(promise: EventLoopPromise<Void>) {
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timeout = context.eventLoop.scheduleTask(in: Self.deadline) {
            let (waiter, context) = loopBound.value
            waiter.finish(.failure(BatonAgentError(.timedOut, "the TLS handshake took longer than 5 s")))
            context.close(promise: nil)
        }
    }

    func finish(_ result: Result<Void, Error>) {
        guard !completed else { return }
        completed = true
        timeout?.cancel()
        promise.completeWith(result)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { finish(.success(())) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        finish(.failure(BatonAgentError(.peerRefused, "the TLS handshake failed: \(error) (the peer is not a member, or not the device expected)")))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(BatonAgentError(.peerRefused, "the peer closed the connection during the TLS handshake (it does not accept this device)")))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(BatonAgentError(.peerRefused, "the connection ended before the TLS handshake completed")))
    }
}
