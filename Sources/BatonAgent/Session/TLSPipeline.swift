#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// The TLS half of every session between devices, one side's: mutual TLS 1.3 with the device certificate, the peer
/// checked against a ``PeerPolicy`` in the handshake, a handshake deadline, and the frame codec after it.
///
/// The one place the pipeline is built, for the one-shot account sessions (pairing, invites, `baton sync`:
/// ``AccountTransport``) and the agent's multiplexed links (``PeerLinks``) alike. Made once per agent or session
/// (the `NIOSSLContext` is the costly part); ``configure(_:policy:)`` then runs on each channel's event loop.
/// `package` (with ``Role``, ``configuration(identity:role:)`` and ``verifier(_:presented:)``) only so that
/// `baton bench handoff` can measure a bare TLS handshake configured exactly as the agent's.
package struct TLSPipeline: Sendable {
    /// Which end of the connection this side is.
    package enum Role: Sendable {
        /// The side that connected.
        case client
        /// The side that accepted.
        case server
    }

    /// What ``configure(_:policy:)`` gives back for one connection.
    struct Connection: Sendable {
        /// The certificate (DER) the peer presented, once the verification callback accepted it.
        let presented: NIOLockedValueBox<Data?>
        /// The certificate (DER) the peer presented and the callback refused (a stranger's, a removed device's), for
        /// the agent's log (issue 25 item 12).
        let refused: NIOLockedValueBox<Data?>
        /// Completes when the handshake does; fails when it fails, the connection closes first, or
        /// ``HandshakeWaiter/deadline`` passes.
        let handshake: EventLoopFuture<Void>
    }

    let role: Role
    let context: NIOSSLContext

    /// A pipeline presenting `identity`'s certificate.
    /// - Throws: NIOSSL's error when the certificate or key cannot be loaded.
    init(identity: DeviceIdentity, role: Role) throws {
        self.role = role
        context = try NIOSSLContext(configuration: try Self.configuration(identity: identity, role: role))
    }

    package static func configuration(identity: DeviceIdentity, role: Role) throws -> TLSConfiguration {
        let certificate = try NIOSSLCertificate(bytes: Array(identity.certificateDER), format: .der)
        let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKey.derRepresentation), format: .der)
        var configuration =
            switch role {
            case .server: TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
            case .client: TLSConfiguration.makeClientConfiguration()
            }
        configuration.certificateChain = [.certificate(certificate)]
        configuration.privateKey = .privateKey(key)
        configuration.minimumTLSVersion = .tlsv13
        // A closed session waits this long for the peer's close_notify before the socket goes: a peer that never
        // answers (hostile, or gone) holds a descriptor no longer than this (NIOSSL's default is 5 s).
        configuration.shutdownTimeout = .seconds(1)
        // Peers are checked by the custom callback (pinning); on a server this also makes client certificates required.
        configuration.certificateVerification = .noHostnameVerification
        // No system store: the account's devices are pinned, never vouched for by a CA. NIOSSL's default loads the
        // system's CA file, and a machine without ca-certificates failed every session with "unknownError([])".
        configuration.trustRoots = .certificates([])
        return configuration
    }

    /// The verification callback: accept exactly the certificates `policy` allows, and remember the one presented
    /// (in `refused` when it is not allowed).
    package static func verifier(
        _ policy: PeerPolicy,
        presented: NIOLockedValueBox<Data?>,
        refused: NIOLockedValueBox<Data?>? = nil
    ) -> NIOSSLCustomVerificationCallback {
        { certificates, promise in
            guard let leaf = certificates.first, let der = try? leaf.toDERBytes(), policy.allows(DeviceID(certificateDER: der)) else {
                if let der = try? certificates.first?.toDERBytes() { refused?.withLockedValue { $0 = Data(der) } }
                promise.succeed(.failed)
                return
            }
            presented.withLockedValue { $0 = Data(der) }
            promise.succeed(.certificateVerified)
        }
    }

    /// Adds, on `channel`'s event loop, the TLS handler accepting the peers `policy` allows, a ``HandshakeWaiter``,
    /// and the frame decoder and encoder; the caller adds its message handler after them.
    func configure(_ channel: Channel, policy: PeerPolicy) throws -> Connection {
        let presented = NIOLockedValueBox<Data?>(nil)
        let refused = NIOLockedValueBox<Data?>(nil)
        let verify = Self.verifier(policy, presented: presented, refused: refused)
        let pipeline = channel.pipeline.syncOperations
        switch role {
        case .client:
            try pipeline.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil, customVerificationCallback: verify))
        case .server:
            try pipeline.addHandler(NIOSSLServerHandler(context: context, customVerificationCallback: verify))
        }
        let promise = channel.eventLoop.makePromise(of: Void.self)
        do {
            try pipeline.addHandler(HandshakeWaiter(promise: promise))
        } catch {
            promise.fail(error)
            throw error
        }
        try pipeline.addHandler(ByteToMessageHandler(FrameDecoder(allowsData: true)))
        try pipeline.addHandler(FrameEncoder())
        return Connection(presented: presented, refused: refused, handshake: promise.futureResult)
    }

    /// Waits for the handshake of a connection to `peer`, naming the peer in its error.
    /// - Throws: ``BatonAgentError`` `peerRefused` or `timedOut` from the ``HandshakeWaiter``.
    static func waitForHandshake(_ handshake: EventLoopFuture<Void>?, peer: String) async throws {
        guard let handshake else { throw BatonAgentError(.protocolViolation, "no TLS handshake to wait for with \(peer)") }
        do {
            try await handshake.get()
        } catch let error as BatonAgentError {
            throw BatonAgentError(error.code, "\(peer): \(error.message)")
        }
    }
}
