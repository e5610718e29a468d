#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A one-request HTTPS GET client, only what association files need (SEMANTICS E4): HTTP/1.1 over TLS with the
/// system's trust store plus extra roots, the certificate checked for the domain asked (SNI and hostname) even when
/// the connection goes elsewhere (`--resolve`), no redirects followed, a byte cap checked against Content-Length and
/// against what arrives, a connect timeout and a whole-request timeout.
///
/// Built on swift-nio's `NIOHTTP1` and swift-nio-ssl, which the agent already links, rather than async-http-client,
/// which would add swift-nio-http2, -extras, -transport-services, swift-algorithms and swift-distributed-tracing to
/// every build for features (pools, redirects, HTTP/2) an association fetch must not use (docs/ARCHITECTURE.md).
/// Made once (the `NIOSSLContext`, which loads the trust store, is the costly part); each ``get(_:)`` is independent
/// and never blocks a thread: it awaits a future.
public struct HTTPSClient: Sendable {
    /// What a ``get(_:)`` gives back: the status, the headers and (only for a 2xx answer) the body.
    public struct Response: Sendable {
        /// The HTTP status code.
        public var status: Int
        /// The response headers.
        public var headers: HTTPHeaders
        /// The body, at most the cap; empty for an answer other than 2xx (it is not read).
        public var body: ByteBuffer
    }

    /// One GET.
    public struct Request: Sendable {
        /// The host named in the URL: SNI, the Host header and the certificate check use it.
        public var host: String
        /// The port in the URL.
        public var port = 443
        /// The path (with its query, if any).
        public var path: String
        /// Where to connect instead of resolving `host` (curl's `--connect-to`); the certificate is still checked
        /// for `host`.
        public var connectTo: (host: String, port: Int)?

        /// A GET of `https://host:port/path`.
        public init(host: String, port: Int = 443, path: String, connectTo: (host: String, port: Int)? = nil) {
            self.host = host
            self.port = port
            self.path = path
            self.connectTo = connectTo
        }

        var url: String { "https://\(host)\(port == 443 ? "" : ":\(port)")\(path)" }
    }

    /// How long a TCP connection may take.
    public var connectTimeout: Duration
    /// How long the whole request may take, connection and TLS included: a server that trickles bytes is cut off.
    public var totalTimeout: Duration
    /// The largest body accepted: a larger Content-Length is refused before any body is read, and a body without
    /// one is cut off as soon as it passes the cap, so a huge file is never held in memory.
    public var maximumSize: Int
    let context: NIOSSLContext

    /// A client trusting the system's roots and the certificates in `extraRootFiles` (PEM files).
    /// - Throws: ``AssociationFetchError`` `untrusted` when a file cannot be read as certificates.
    public init(extraRootFiles: [String] = [], connectTimeout: Duration = .seconds(5), totalTimeout: Duration = .seconds(10), maximumSize: Int) throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .default
        var extra: [NIOSSLCertificate] = []
        for file in extraRootFiles {
            do {
                extra += try NIOSSLCertificate.fromPEMFile(file)
            } catch {
                throw AssociationFetchError(.untrusted, "\(file): cannot read it as PEM certificates (\(error)); give --cacert or BATON_CACERT a PEM file of CA certificates")
            }
        }
        if !extra.isEmpty { configuration.additionalTrustRoots = [.certificates(extra)] }
        configuration.certificateVerification = .fullVerification
        configuration.shutdownTimeout = .seconds(1)
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw AssociationFetchError(.tlsFailed, "cannot set up TLS: \(error)")
        }
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maximumSize = maximumSize
    }

    /// Fetches `request`. A 3xx, 4xx or 5xx is returned (the caller decides), with no body.
    /// - Throws: ``AssociationFetchError``: `connectFailed`, `timedOut`, `untrusted`, `tlsFailed`, `tooLarge`,
    ///   `malformed`.
    public func get(_ request: Request) async throws -> Response {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let promise = loop.makePromise(of: Response.self)
        let url = request.url
        let maximumSize = maximumSize
        let context = context
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(Self.amount(connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(context: context, serverHostname: Self.isAddress(request.host) ? nil : request.host)
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise, url: url, maximumSize: maximumSize))
                }
            }
        // The whole request's deadline starts now, so a slow connect counts against it too.
        let timeout = loop.scheduleTask(in: Self.amount(totalTimeout)) {
            promise.fail(AssociationFetchError(.timedOut, "\(url) took longer than \(totalTimeout) (the whole request); the server is slow or stalled"))
        }
        let target = request.connectTo ?? (request.host, request.port)
        let connectTimeout = connectTimeout
        bootstrap.connect(host: target.host, port: target.port).whenComplete { result in
            switch result {
            case .failure(let error):
                promise.fail(Self.classify(error, url: url, target: target, timeout: connectTimeout))
            case .success(let channel):
                promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
                var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: request.path)
                head.headers.add(name: "Host", value: request.port == 443 ? request.host : "\(request.host):\(request.port)")
                head.headers.add(name: "User-Agent", value: "Baton (apple-app-site-association)")
                head.headers.add(name: "Accept", value: "application/json, application/pkcs7-mime")
                head.headers.add(name: "Connection", value: "close")
                channel.write(HTTPClientRequestPart.head(head), promise: nil)
                channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            }
        }
        defer { timeout.cancel() }
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            promise.fail(AssociationFetchError(.timedOut, "\(url): the fetch was cancelled (the agent is stopping)"))
        }
    }

    static func amount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    /// Whether `host` is an IP address literal (no SNI then).
    static func isAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }

    /// A NIO or TLS error, as the failure a person can act on.
    /// `target` is where the connection was going; nil once connected (the error came from the pipeline).
    static func classify(_ error: Error, url: String, target: (host: String, port: Int)?, timeout: Duration) -> AssociationFetchError {
        if let error = error as? AssociationFetchError { return error }
        let text = "\(error)"
        if let target, let error = error as? ChannelError, case .connectTimeout = error {
            return AssociationFetchError(.timedOut, "\(url): no connection to \(target.host):\(target.port) within \(timeout)")
        }
        if error is NIOConnectionError || error is IOError || error is SocketAddressError {
            guard let target else {
                return AssociationFetchError(.connectFailed, "\(url): the connection broke (\(text)); try again later")
            }
            return AssociationFetchError(.connectFailed, "\(url): cannot connect to \(target.host):\(target.port) (\(text)); is the site up, and the name right?")
        }
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname {
            return AssociationFetchError(.untrusted, "\(url): the server's certificate is not valid for this domain (\(text))")
        }
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return AssociationFetchError(.untrusted, "\(url): the server's certificate does not chain to a trusted root (\(text)); add the CA with --cacert or BATON_CACERT if it is a private one")
        }
        if error is NIOSSLError || error is BoringSSLError {
            return AssociationFetchError(.tlsFailed, "\(url): TLS failed (\(text))")
        }
        if error is HTTPParserError {
            return AssociationFetchError(.malformed, "\(url): the answer is not valid HTTP (\(text))")
        }
        return AssociationFetchError(.connectFailed, "\(url): \(text)")
    }
}

/// Collects one response, failing as soon as it breaks a rule (the cap); completes the promise exactly once.
final class ResponseCollector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    let promise: EventLoopPromise<HTTPSClient.Response>
    let url: String
    let maximumSize: Int
    var head: HTTPResponseHead?
    var body = ByteBuffer()
    var done = false

    init(promise: EventLoopPromise<HTTPSClient.Response>, url: String, maximumSize: Int) {
        self.promise = promise
        self.url = url
        self.maximumSize = maximumSize
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            guard (200..<300).contains(Int(head.status.code)) else {
                // Not a file: the status and headers (a redirect's Location) are all the caller needs.
                finish(context, .success(HTTPSClient.Response(status: Int(head.status.code), headers: head.headers, body: ByteBuffer())))
                return
            }
            if let declared = head.headers.first(name: "content-length").flatMap({ Int($0) }), declared > maximumSize {
                finish(context, .failure(tooLarge("declares \(declared) bytes (Content-Length)")))
            }
        case .body(var part):
            guard body.readableBytes + part.readableBytes <= maximumSize else {
                finish(context, .failure(tooLarge("sent more than \(maximumSize) bytes")))
                return
            }
            body.writeBuffer(&part)
        case .end:
            guard let head else {
                finish(context, .failure(AssociationFetchError(.malformed, "\(url): the answer ended before its head")))
                return
            }
            finish(context, .success(HTTPSClient.Response(status: Int(head.status.code), headers: head.headers, body: body)))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        finish(context, .failure(HTTPSClient.classify(error, url: url, target: nil, timeout: .zero)))
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(context, .failure(AssociationFetchError(.malformed, "\(url): the server closed the connection before the answer ended")))
        context.fireChannelInactive()
    }

    func tooLarge(_ what: String) -> AssociationFetchError {
        AssociationFetchError(.tooLarge, "\(url) \(what); the limit is \(maximumSize) bytes (Apple's is 128 KiB): serve a smaller file")
    }

    func finish(_ context: ChannelHandlerContext, _ result: Result<HTTPSClient.Response, AssociationFetchError>) {
        guard !done else { return }
        done = true
        promise.completeWith(result.mapError { $0 as Error })
        context.close(promise: nil)
    }
}
