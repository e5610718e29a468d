import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// One end of an account session between two devices of this process, in memory (issue 26 item 3): what
/// ``AccountTransport`` gives over TLS, with no socket. The account flows (pairing, joining) run over it unchanged;
/// each end presents the other's device certificate, as a verified TLS handshake would, and messages cross encoded
/// as on the wire. A receive's timeout is timed on the given clock. Used by one task at a time, as ``MessageChannel``s are.
package final class MemoryAccountSession: MessageChannel {
    private var inbox: AsyncStream<Data>.AsyncIterator
    /// This end's inbox, ended by a close or a timeout.
    private let ownEnd: AsyncStream<Data>.Continuation
    /// The other end's inbox.
    private let peerEnd: AsyncStream<Data>.Continuation
    private let clock: AgentClock
    private let loop: EventLoop
    package let peerCertificate: Data?
    package let peerHost: String?
    private var receivedAny = false

    private init(
        inbox: AsyncStream<Data>, ownEnd: AsyncStream<Data>.Continuation, peerEnd: AsyncStream<Data>.Continuation,
        peer: DeviceIdentity, peerHost: String, clock: AgentClock
    ) {
        self.inbox = inbox.makeAsyncIterator()
        self.ownEnd = ownEnd
        self.peerEnd = peerEnd
        self.clock = clock
        loop = MultiThreadedEventLoopGroup.singleton.next()
        peerCertificate = peer.certificateDER
        self.peerHost = peerHost
    }

    /// One session between two devices, each at its host: ``dialler`` and ``listener`` make its two ends, once each,
    /// where they are used (an end belongs to one task).
    package struct Line: Sendable {
        let toDialler: (AsyncStream<Data>, AsyncStream<Data>.Continuation)
        let toListener: (AsyncStream<Data>, AsyncStream<Data>.Continuation)
        let dialling: (identity: DeviceIdentity, host: String)
        let listening: (identity: DeviceIdentity, host: String)
        let clock: AgentClock

        /// The dialling device's end: it presents the listener's certificate.
        package func dialler() -> MemoryAccountSession {
            MemoryAccountSession(
                inbox: toDialler.0, ownEnd: toDialler.1, peerEnd: toListener.1, peer: listening.identity, peerHost: listening.host, clock: clock
            )
        }

        /// The listening device's end: it presents the dialler's certificate.
        package func listener() -> MemoryAccountSession {
            MemoryAccountSession(
                inbox: toListener.0, ownEnd: toListener.1, peerEnd: toDialler.1, peer: dialling.identity, peerHost: dialling.host, clock: clock
            )
        }
    }

    /// A session from `dialling` to `listening` (each with its host), receives timed on `clock`.
    package static func line(
        from dialling: (identity: DeviceIdentity, host: String),
        to listening: (identity: DeviceIdentity, host: String),
        clock: AgentClock = .system
    ) -> Line {
        Line(
            toDialler: AsyncStream.makeStream(of: Data.self), toListener: AsyncStream.makeStream(of: Data.self),
            dialling: dialling, listening: listening, clock: clock
        )
    }

    package func send(_ message: PropertyList) async throws {
        guard case .enqueued = peerEnd.yield(Data(try BinaryPropertyListEncoder.encode(message))) else {
            throw BatonAgentError(
                receivedAny ? .peerUnreachable : .peerRefused,
                "\(peerHost ?? "the peer") closed the session\(receivedAny ? "" : " before answering")"
            )
        }
    }

    package func receive(timeout: Double) async throws -> PropertyList {
        let timedOut = NIOLockedValueBox(false)
        let deadline = clock.schedule(in: .milliseconds(Int64(timeout * 1000)), on: loop) { [ownEnd] in
            timedOut.withLockedValue { $0 = true }
            ownEnd.finish()
        }
        defer { deadline.cancel() }
        guard let bytes = await inbox.next() else {
            if timedOut.withLockedValue({ $0 }) {
                throw BatonAgentError(.timedOut, "\(peerHost ?? "the peer") sent nothing for \(Int(timeout)) s")
            }
            throw BatonAgentError(receivedAny ? .peerUnreachable : .peerRefused, "\(peerHost ?? "the peer") closed the session")
        }
        receivedAny = true
        do {
            return try BinaryPropertyListDecoder.decode(bytes, limits: PropertyListLimits(maximumDepth: 16))
        } catch {
            throw BatonAgentError(.protocolViolation, "\(peerHost ?? "the peer") sent a malformed message: \(error)")
        }
    }

    package func close() async {
        ownEnd.finish()
        peerEnd.finish()
    }
}
