// `idle-floor`: the least a Baton agent could be, for `scripts/idle.py` to measure beside the real agents (issue 11,
// "Quiet when idle"). It links the libraries the agent is built on (swift-nio, swift-nio-ssl, swift-crypto,
// swift-certificates, swift-service-lifecycle, swift-log, FoundationEssentials) and does only what any agent on
// them must: make a P-256 key and a certificate, build a mutual TLS 1.3 server context, listen on TCP, UDP and a Unix
// socket, and wait in a ServiceGroup until SIGTERM. No Baton code. Its resident memory is the floor the agent's is
// measured against: what the platform and the chosen libraries cost before Baton does anything.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import SwiftASN1
import UnixSignals
import X509

@main
struct IdleFloor {
    static func main() async throws {
        let socketPath = CommandLine.arguments.dropFirst().first ?? "/tmp/idle-floor-\(getpid()).sock"
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("idle floor") }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(86_400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.notCertificateAuthority) },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(key.derRepresentation), format: .der))
        )
        tls.minimumTLSVersion = .tlsv13
        tls.certificateVerification = .noHostnameVerification
        let context = try NIOSSLContext(configuration: tls)

        let group = MultiThreadedEventLoopGroup.singleton
        let tcp = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let udp = try await DatagramBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        unlink(socketPath)
        let unix = try await ServerBootstrap(group: group).bind(unixDomainSocketPath: socketPath).get()
        print("idle-floor listening: tcp \(tcp.localAddress?.port ?? 0), udp \(udp.localAddress?.port ?? 0), \(socketPath)")
        fflush(nil)

        let services = ServiceGroup(
            configuration: .init(
                services: [.init(service: Waiting())],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: Logger(label: "idle-floor")
            )
        )
        try await services.run()
        for channel in [tcp, udp, unix] { try? await channel.close() }
        unlink(socketPath)
    }
}

/// Sleeps until the group shuts down: the agent's services wait the same way when there is nothing to do.
struct Waiting: Service {
    func run() async throws {
        try? await gracefulShutdown()
    }
}
