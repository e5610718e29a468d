import BatonAgent
import BatonCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// The floor a continuation stream is compared with: bytes copied over one loopback connection with the same
/// libraries, plain TCP or mutual TLS 1.3 between two device identities configured exactly as the agent's
/// (``TLSPipeline``). Each end is its own event loop (the two cores, as two processes would have them); a writer
/// writes 256 KiB buffers while its channel is writable, a reader counts bytes. Timed from the first write to the last
/// byte read; the handshake is over before the clock starts.
struct BulkCopy {
    /// How the connection is secured.
    enum Security {
        case tcp
        case tls(client: NIOSSLContext, server: NIOSSLContext)

        /// Mutual TLS 1.3 between two new device identities, the agent's configuration on both ends.
        static func agentTLS() throws -> Security {
            let server = try DeviceIdentity.generate(name: "bench-server")
            let client = try DeviceIdentity.generate(name: "bench-client")
            return .tls(
                client: try NIOSSLContext(configuration: TLSPipeline.configuration(identity: client, role: .client)),
                server: try NIOSSLContext(configuration: TLSPipeline.configuration(identity: server, role: .server))
            )
        }
    }

    /// Which way the bytes go; the client end is the one that connected (the TLS client).
    enum Direction {
        case clientToServer
        case serverToClient
        /// `bytes` each way at once.
        case both
    }

    /// What one buffer written holds.
    static let chunkSize = 256 << 10

    let security: Security
    /// Whether each end copies as an API of `Data` must (issue 30's floor): the writer each 256 KiB from a `Data` into
    /// a new buffer, the reader each buffer it reads into a `Data`. Without it, the writer writes one buffer again
    /// and again and the reader only counts: no copy at all, which no app library can do.
    var copies = false

    /// Seconds from the first write to the last byte read, `bytes` copied as `direction` says on a new connection.
    func run(bytes: Int, direction: Direction) async throws -> Double {
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        let (clientLoop, serverLoop) = (loops[0], loops[1 % loops.count])
        let serverContext: NIOSSLContext?
        let clientContext: NIOSSLContext?
        switch security {
        case .tcp: (clientContext, serverContext) = (nil, nil)
        case .tls(let client, let server): (clientContext, serverContext) = (client, server)
        }
        let accepted = serverLoop.makePromise(of: NIOLoopBound<BulkCopyEnd>.self)
        let (serverReady, clientReady) = (serverLoop.makePromise(of: Void.self), clientLoop.makePromise(of: Void.self))
        let server = try await ServerBootstrap(group: clientLoop, childGroup: serverLoop)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let serverContext {
                        let verify = TLSPipeline.verifier(.anyDevice, presented: NIOLockedValueBox(nil))
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: serverContext, customVerificationCallback: verify))
                    }
                    let end = BulkCopyEnd(waitsForHandshake: serverContext != nil, copies: copies, ready: serverReady)
                    try channel.pipeline.syncOperations.addHandler(end)
                    accepted.succeed(NIOLoopBound(end, eventLoop: channel.eventLoop))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let clientEnd = NIOLockedValueBox<NIOLoopBound<BulkCopyEnd>?>(nil)
        let client: Channel
        do {
            client = try await ClientBootstrap(group: clientLoop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let clientContext {
                            let verify = TLSPipeline.verifier(.anyDevice, presented: NIOLockedValueBox(nil))
                            try channel.pipeline.syncOperations.addHandler(
                                try NIOSSLClientHandler(context: clientContext, serverHostname: nil, customVerificationCallback: verify)
                            )
                        }
                        let end = BulkCopyEnd(waitsForHandshake: clientContext != nil, copies: copies, ready: clientReady)
                        try channel.pipeline.syncOperations.addHandler(end)
                        clientEnd.withLockedValue { $0 = NIOLoopBound(end, eventLoop: channel.eventLoop) }
                    }
                }
                .connect(host: "127.0.0.1", port: server.localAddress?.port ?? 0).get()
        } catch {
            try? await server.close()
            throw error
        }
        defer {
            client.close(promise: nil)
            server.close(promise: nil)
        }
        guard let clientEnd = clientEnd.withLockedValue({ $0 }) else { throw CommandLineError("the copy's client end was never set up") }
        let serverEnd = try await accepted.futureResult.get()
        try await clientReady.futureResult.get()
        try await serverReady.futureResult.get()

        let (clientSends, serverSends): (Int, Int)
        switch direction {
        case .clientToServer: (clientSends, serverSends) = (bytes, 0)
        case .serverToClient: (clientSends, serverSends) = (0, bytes)
        case .both: (clientSends, serverSends) = (bytes, bytes)
        }
        // Both ends expect their bytes before either sends, so no byte arrives at an end that does not expect it.
        let ends = [(serverEnd, serverSends, clientSends), (clientEnd, clientSends, serverSends)]
        var finished: [EventLoopFuture<BulkCopyEnd.Stamps>] = []
        for (end, _, expecting) in ends {
            finished.append(try await end.eventLoop.submit { end.value.expect(expecting) }.get())
        }
        for (end, sending, _) in ends {
            try await end.eventLoop.submit { end.value.send(sending) }.get()
        }
        var firstWrite = UInt64.max
        var lastRead: UInt64 = 0
        for future in finished {
            let stamps = try await future.get()
            if let write = stamps.firstWrite { firstWrite = min(firstWrite, write) }
            if let read = stamps.lastRead { lastRead = max(lastRead, read) }
        }
        guard firstWrite != .max, lastRead >= firstWrite else { throw CommandLineError("the copy moved no bytes") }
        return Double(lastRead - firstWrite) / 1e9
    }
}

/// One end of a ``BulkCopy``: once started, writes its share in 256 KiB buffers while the channel is writable and
/// counts what arrives, stamping the first write and the last byte read. Lives on its channel's event loop.
final class BulkCopyEnd: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// When the end's work began and ended (`DispatchTime` uptime nanoseconds): nil for what it did not do.
    struct Stamps: Sendable {
        var firstWrite: UInt64?
        var lastRead: UInt64?
    }

    /// Succeeds once bytes may flow: at once on plain TCP, after the handshake on TLS.
    let ready: EventLoopPromise<Void>
    let waitsForHandshake: Bool
    let copies: Bool
    let chunk = ByteBuffer(repeating: 0x5A, count: BulkCopy.chunkSize)
    /// What a copying writer copies from, as an app's `Data`.
    let source = Data(repeating: 0x5A, count: BulkCopy.chunkSize)
    /// Read from what a copying reader copied, so the copy is not optimised away.
    var seen: UInt8 = 0
    var context: ChannelHandlerContext?
    var toSend = 0
    var toReceive = 0
    var stamps = Stamps()
    var done: EventLoopPromise<Stamps>?
    /// Whether ``ready`` was completed (a promise is completed once).
    var isReady = false
    /// Whether the connection failed or closed.
    var isOver = false

    init(waitsForHandshake: Bool, copies: Bool = false, ready: EventLoopPromise<Void>) {
        self.waitsForHandshake = waitsForHandshake
        self.copies = copies
        self.ready = ready
    }

    /// Expects `count` bytes to arrive; the future has the stamps once they have and what ``send(_:)`` was given went.
    func expect(_ count: Int) -> EventLoopFuture<Stamps> {
        let promise = ready.futureResult.eventLoop.makePromise(of: Stamps.self)
        guard !isOver else {
            promise.fail(CommandLineError("the copy's connection closed before it started"))
            return promise.futureResult
        }
        toReceive = count
        done = promise
        return promise.futureResult
    }

    /// Starts sending `count` bytes.
    func send(_ count: Int) {
        toSend = count
        if let context { writeWhileWritable(context: context) }
    }

    func writeWhileWritable(context: ChannelHandlerContext) {
        while toSend > 0, context.channel.isWritable {
            if stamps.firstWrite == nil { stamps.firstWrite = DispatchTime.now().uptimeNanoseconds }
            let count = min(toSend, chunk.readableBytes)
            var buffer = count == chunk.readableBytes ? chunk : chunk.getSlice(at: chunk.readerIndex, length: count) ?? chunk
            if copies {
                buffer = context.channel.allocator.buffer(capacity: count)
                buffer.writeBytes(source.prefix(count))
            }
            // Counted before the write: a flush can make the channel writable again at once, which calls this again.
            toSend -= count
            // Flushed one by one: TLS encrypts on flush, and only then do the bytes count against writability, so
            // writes flushed together would all be taken at once (the whole copy in memory).
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        }
        finishIfDone()
    }

    func finishIfDone() {
        guard toSend == 0, toReceive == 0, stamps.firstWrite != nil || stamps.lastRead != nil, let done else { return }
        self.done = nil
        done.succeed(stamps)
    }

    func becomeReady() {
        guard !isReady else { return }
        isReady = true
        ready.succeed()
    }

    func fail(_ error: Error) {
        isOver = true
        if !isReady {
            isReady = true
            ready.fail(error)
        }
        done?.fail(error)
        done = nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive, !waitsForHandshake { becomeReady() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        if !waitsForHandshake { becomeReady() }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { becomeReady() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { writeWhileWritable(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let read = unwrapInboundIn(data)
        let count = read.readableBytes
        if copies { seen &+= Data(read.readableBytesView).last ?? 0 }
        guard count <= toReceive else {
            fail(CommandLineError("the copy received \(count - toReceive) bytes more than were sent"))
            return context.close(promise: nil)
        }
        toReceive -= count
        if toReceive == 0 {
            stamps.lastRead = DispatchTime.now().uptimeNanoseconds
            finishIfDone()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(CommandLineError("the copy's connection closed before all bytes arrived"))
        context.fireChannelInactive()
    }
}
