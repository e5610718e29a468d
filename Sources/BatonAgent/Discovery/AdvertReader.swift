import BatonClient
import BatonProtocol
import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The one handler of an advert socket: hands each datagram of an advert's length, with its source, to the agent,
/// and does what ``AdvertReadPacing`` decides (issue 25 item 10): under a flood it turns the channel's autoRead off
/// and reads it every 10 ms instead, each read taking whatever waits with `recvmmsg`
/// (``AdvertReader/vectorReadCount`` datagrams a call, ``AdvertReader/readsPerTick`` calls at most); when the flood
/// is over it turns autoRead on again. One handler, not two: every datagram of a flood passes through it. On the
/// channel's event loop, like every handler.
final class AdvertReader: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    /// Datagrams one `recvmmsg` takes (`ChannelOptions.datagramVectorReadMessageCount`).
    static let vectorReadCount = 32
    /// Bytes of the receive buffer for each datagram of a vector read: more than an advert's
    /// (``AdvertKeys/datagramLength``).
    static let slotBytes = 256
    /// `recvmmsg` calls one read makes at most (`ChannelOptions.maxMessagesPerRead`): 512 datagrams a tick, 51,200
    /// a second, past which the socket's receive buffer drops the rest (as it would drop them anyway).
    static let readsPerTick = 16

    private var pacing = AdvertReadPacing()
    private var ticks: RepeatedTask?
    private let log: @Sendable (String) -> Void
    private let receive: @Sendable (Data, SocketAddress) -> Void
    /// The agent's clock: its uptime paces the reads.
    private let clock: AgentClock

    init(log: @escaping @Sendable (String) -> Void, clock: AgentClock, receive: @escaping @Sendable (Data, SocketAddress) -> Void) {
        self.log = log
        self.clock = clock
        self.receive = receive
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case let action = pacing.received(at: clock.uptimeNanoseconds()), action != .none {
            perform(action, context: context)
        }
        let envelope = unwrapInboundIn(data)
        guard envelope.data.readableBytes == AdvertKeys.datagramLength else { return }
        HopStamps.stamp(.advertReceived)
        // A copy straight from the buffer's memory: `Data(readableBytesView)` went through the generic sequence path,
        // with dynamic casts, for every datagram.
        receive(envelope.data.withUnsafeReadableBytes { Data($0) }, envelope.remoteAddress)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP unreachable from a peer that is down surfaces here on Linux; a datagram socket carries on.
    }

    func channelInactive(context: ChannelHandlerContext) {
        ticks?.cancel()
        ticks = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        ticks?.cancel()
        ticks = nil
    }

    private func perform(_ action: AdvertReadPacing.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            return
        case .startPacing:
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let interval = TimeAmount.nanoseconds(Int64(AdvertReadPacing.tickNanoseconds))
            ticks = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
                let (pacer, context) = bound.value
                pacer.tick(context: context)
            }
            log("adverts: more than \(AdvertReadPacing.enterRate) datagrams a second; reading them every 10 ms in batches")
        case .stopPacing:
            ticks?.cancel()
            ticks = nil
            context.channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
            log("adverts: fewer than \(AdvertReadPacing.leaveRate) datagrams a second; reading each as it arrives again")
        }
    }

    private func tick(context: ChannelHandlerContext) {
        let action = pacing.tick(at: clock.uptimeNanoseconds())
        guard action == .none else { return perform(action, context: context) }
        context.read()
    }
}
