import BatonClient
import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore

/// Continuation streams (SEMANTICS F1–F3, docs/PROTOCOL.md §8): after an activity was continued, the continuing app
/// opens a stream to the originating app; the two agents splice it over their session.
///
/// Each end is the app's own connection to its agent (a `hello` naming the continuation, or the token the agent
/// announced), so an app's stream has its own socket and its own backpressure, apart from its main connection.
///
/// The handoff coordinator's (issue 26 items 1 and 2): the streams follow from its continuations, and their tables
/// live in its state, on its loop, where every app connection and peer link already runs: no lock.
extension HandoffCoordinator {
    /// An activity of this device that another device continued (it fetched its state): streams may be asked for it
    /// by those devices while its app runs it (F1).
    struct StreamOrigin {
        var app: HandoffBroker.AppID
        var bundle: String
        var activity: UInt64
        var supportsStreams: Bool
        /// The devices that continued it.
        var peers: Set<DeviceID>
        /// Its app invalidated it: no stream any more.
        var invalidated = false
    }

    /// A continuation delivered to an app here: where its state came from, so the app can ask for a stream (F2).
    struct StreamDelivery {
        var bundle: String
        var device: DeviceID
        var host: String
        var port: Int
        var sequence: UInt64
    }

    /// A peer's stream request announced to the originating app, waiting for it to connect (or decline).
    struct IncomingStream {
        var link: PeerLink
        var id: UInt64
        var peerWindow: Int
        /// The continuing agent's offer of the direct path (issue 30), if it made one.
        var direct: DirectStreamOffer?
        var bundle: String
        var reply: @Sendable (SessionMultiplexer.Reply) -> Void
        /// The accept deadline, scheduled through the clock.
        var timer: AgentClock.Timer
    }

    /// The most origins and deliveries remembered: the newest are kept.
    static let rememberedStreamActivities = 64

    // MARK: Records

    /// A fetch of `current` by `peer` was answered with its state: `peer` may now ask for streams to it (F1).
    func recordContinued(_ current: HandoffBroker.CurrentActivity, by peer: DeviceID) {
        withState { state in
            var origin = state.streamOrigins[current.sequence]
                ?? StreamOrigin(app: current.app, bundle: current.bundle, activity: current.activity, supportsStreams: current.notice.supportsStreams, peers: [])
            origin.peers.insert(peer)
            origin.supportsStreams = current.notice.supportsStreams
            state.streamOrigins[current.sequence] = origin
            Self.trim(&state.streamOrigins)
        }
    }

    /// Continuation `id`, from `entry`, was delivered to `bundle`'s app (C7): remember where its state came from.
    func recordStreamDelivery(_ id: HandoffBroker.ContinuationID, bundle: String, entry: NearbyTable.Entry) {
        withState { state in
            state.streamDeliveries[id.value] = StreamDelivery(
                bundle: bundle,
                device: entry.advert.device,
                host: entry.host,
                port: Int(entry.advert.sessionPort),
                sequence: entry.advert.sequence
            )
            Self.trim(&state.streamDeliveries)
        }
    }

    static func trim<Value>(_ table: inout [UInt64: Value]) {
        guard table.count > rememberedStreamActivities else { return }
        for key in table.keys.sorted().prefix(table.count - rememberedStreamActivities) { table[key] = nil }
    }

    /// The app invalidated `activity`: streams to it are refused from now on.
    func streamActivityInvalidated(app: HandoffBroker.AppID, activity: UInt64) {
        withState { state in
            for (sequence, origin) in state.streamOrigins where origin.app == app && origin.activity == activity {
                state.streamOrigins[sequence]?.invalidated = true
            }
        }
    }

    /// An app's main connection closed: its activities take no streams, and those announced to it fail now.
    func streamAppGone(_ app: HandoffBroker.AppID, bundle: String?) {
        let waiting = withState { state -> [IncomingStream] in
            state.streamOrigins = state.streamOrigins.filter { $0.value.app != app }
            guard let bundle else { return [] }
            let gone = state.incomingStreams.filter { $0.value.bundle == bundle }
            for token in gone.keys { state.incomingStreams[token] = nil }
            return Array(gone.values)
        }
        for incoming in waiting {
            incoming.timer.cancel()
            incoming.reply(.failed(.appGone, "the app quit before it took the stream"))
        }
    }

    /// One more stream end for `bundle` on `connection`, its own connection for the stream, unless the app has
    /// the most allowed: false then. The end counts until that connection has closed, not until its stream ends
    /// (issue 25 item 3): an end the agent still holds (a descriptor, bytes queued for an app that does not read)
    /// takes the place of a stream until its splice has released it, within ``StreamLimits/releaseMilliseconds`` of
    /// the stream's end.
    func claimStream(for bundle: String, on connection: IPCConnection) -> Bool {
        let claimed = withState { state -> Bool in
            guard state.streamsPerBundle[bundle, default: 0] < StreamLimits.perApp else { return false }
            state.streamsPerBundle[bundle, default: 0] += 1
            return true
        }
        guard claimed else { return false }
        connection.conduit.closeFuture.whenComplete { [self] _ in
            onLoop { [self] in
                withState { state in
                    state.streamsPerBundle[bundle, default: 1] -= 1
                    if state.streamsPerBundle[bundle] == 0 { state.streamsPerBundle[bundle] = nil }
                }
            }
        }
        return true
    }

    /// The stream ends `bundle` holds here, open or ended and not yet released (the count the limit is taken on).
    /// Off the loop (a test asking) it waits for the loop's answer.
    func heldStreamEnds(of bundle: String) -> Int {
        guard !loop.inEventLoop else { return withState { $0.streamsPerBundle[bundle, default: 0] } }
        return (try? loop.submit { [self] in withState { $0.streamsPerBundle[bundle, default: 0] } }.wait()) ?? 0
    }

    /// The splice for a stream end on `connection`: released within the configured bound once its stream ends.
    func makeSplice(_ connection: IPCConnection, on link: PeerLink) -> StreamSplice {
        StreamSplice(app: connection, link: link, releaseAfter: streamRelease, clock: clock) { [self] line in
            log(line)
        }
    }

    // MARK: The originating side

    /// A peer asks for a stream to the app of its continued activity `sequence` (F1, F3): announced to the app,
    /// which connects with the token (or declines); answered `opened` once it has.
    func respondToStream(
        id: UInt64,
        sequence: UInt64,
        window: UInt64,
        direct: DirectStreamOffer? = nil,
        on link: PeerLink,
        reply: @escaping @Sendable (SessionMultiplexer.Reply) -> Void
    ) -> PeerLink.Cancel {
        let found = withState { state -> Result<(StreamOrigin, IPCConnection), Agent.FetchError> in
            guard let origin = state.streamOrigins[sequence], origin.peers.contains(link.peer) else {
                return .failure(Agent.FetchError(reason: .notContinued, message: "\(deviceName) gave that activity's state to no app of this device"))
            }
            guard origin.supportsStreams else {
                return .failure(Agent.FetchError(reason: .noStreams, message: "\(origin.bundle) did not set supportsContinuationStreams on that activity"))
            }
            guard !origin.invalidated else {
                return .failure(Agent.FetchError(reason: .notCurrent, message: "\(origin.bundle) has invalidated that activity"))
            }
            guard let connection = state.appConnections[origin.app], connection.conduit.isActive else {
                return .failure(Agent.FetchError(reason: .appGone, message: "\(origin.bundle) is no longer running on \(deviceName)"))
            }
            // F limits: the pair's streams, relayed and direct together.
            guard link.streamCount + state.directStreamsPerPeer[link.peer, default: 0] < StreamLimits.perSession else {
                return .failure(Agent.FetchError(reason: .tooManyStreams, message: "\(StreamLimits.perSession) streams are open with \(deviceName) already"))
            }
            return .success((origin, connection))
        }
        let origin: StreamOrigin
        let connection: IPCConnection
        switch found {
        case .failure(let error):
            reply(.failed(error.reason, error.message))
            return {}
        case .success(let (found, app)):
            origin = found
            connection = app
        }
        var generator = SystemRandomNumberGenerator()
        let token = Data((0..<IPCMessage.streamTokenLength).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let timer = clock.schedule(after: StreamLimits.acceptMilliseconds, on: loop) { [self] in
            guard let incoming = withState({ $0.incomingStreams.removeValue(forKey: token) }) else { return }
            incoming.reply(.failed(.appNotAnswering, "\(origin.bundle) did not take the stream within \(StreamLimits.acceptMilliseconds / 1000) s"))
        }
        withState { state in
            state.incomingStreams[token] = IncomingStream(
                link: link, id: id, peerWindow: Int(window), direct: direct, bundle: origin.bundle, reply: reply, timer: timer
            )
        }
        connection.send(.incomingStream(activity: origin.activity, token: token))
        return { [self] in
            onLoop { [self] in
                guard let incoming = withState({ $0.incomingStreams.removeValue(forKey: token) }) else { return }
                incoming.timer.cancel()
            }
        }
    }

    /// The stream announced to `bundle` with `token`, taken from the table; nil when none waits (it expired, was
    /// declined, or was announced to another app).
    private func takeIncoming(_ token: Data, for bundle: String) -> IncomingStream? {
        withState { state in
            guard state.incomingStreams[token]?.bundle == bundle else { return nil }
            return state.incomingStreams.removeValue(forKey: token)
        }
    }

    /// The originating app declined the stream announced with `token`.
    func streamDeclined(token: Data, bundle: String, message: String) {
        guard let incoming = takeIncoming(token, for: bundle) else { return }
        incoming.timer.cancel()
        incoming.reply(.failed(.noStreams, "\(bundle) declined the stream: \(message)"))
    }

    /// The originating app connected for the stream announced with `token` (its identity already checked).
    func acceptStream(token: Data, bundle: String, direct: Bool = false, on connection: IPCConnection) {
        guard let incoming = takeIncoming(token, for: bundle) else {
            return connection.refuse(.notPermitted, "no stream waits for \(bundle) with that token (it expired, or was for another app)")
        }
        incoming.timer.cancel()
        guard claimStream(for: bundle, on: connection) else {
            let text = "\(bundle) has \(StreamLimits.perApp) streams open already"
            incoming.reply(.failed(.tooManyStreams, text))
            return connection.refuse(.stream(.tooManyStreams), text)
        }
        connection.identify(.stream(bundle: bundle))
        if let offer = incoming.direct, mayGoDirect(connection, appSaid: direct), acceptDirect(incoming, offer: offer, on: connection) { return }
        let key = PeerLink.StreamKey(id: incoming.id, openedHere: false)
        let splice = makeSplice(connection, on: incoming.link)
        guard incoming.link.attach(splice, to: key) else {
            let text = "the session with the other device ended, or carries \(StreamLimits.perSession) streams already"
            incoming.reply(.failed(.tooManyStreams, text))
            return connection.refuse(.stream(.peerGone), text)
        }
        let window = StreamFlow.defaultWindow
        splice.start(key: key, window: window, peerWindow: incoming.peerWindow, welcome: welcome)
        incoming.reply(.streamOpened(window: UInt64(window)))
        log("stream \(incoming.id) from \(incoming.link.peer.short) to \(bundle) opened")
    }

    // MARK: The continuing side

    /// The app that continuation `continuation` was delivered to asks for a stream to the originating app (F2).
    func openStream(continuation: UInt64, bundle: String, direct: Bool = false, on connection: IPCConnection) {
        guard let delivery = withState({ $0.streamDeliveries[continuation] }), delivery.bundle == bundle else {
            return connection.refuse(.stream(.notContinued), "no activity continued into \(bundle) here has the number \(continuation)")
        }
        guard claimStream(for: bundle, on: connection) else {
            return connection.refuse(.stream(.tooManyStreams), "\(bundle) has \(StreamLimits.perApp) streams open already")
        }
        connection.identify(.stream(bundle: bundle))
        let window = StreamFlow.defaultWindow
        let timeout = Double(StreamLimits.openMilliseconds) / 1000
        // Issue 30: offered direct when this side can do its part; the answer says whether the other side could.
        let credential = mayGoDirect(connection, appSaid: direct) ? try? StreamCredential() : nil
        let offer = credential.map { credential in
            var generator = SystemRandomNumberGenerator()
            let token = Data((0..<StreamPreamble.tokenLength).map { _ in UInt8.random(in: 0...255, using: &generator) })
            return DirectStreamOffer(token: token, fingerprint: credential.fingerprint)
        }
        let opening: @Sendable (PeerLink) -> Void = { [self] link in
            let splice = makeSplice(connection, on: link)
            link.openStream(
                sequence: delivery.sequence,
                window: window,
                direct: offer,
                directStreams: directStreamCount(with: link.peer),
                endpoint: splice,
                timeout: timeout
            ) { [self, welcome] result in
                switch result {
                case .success(let (_, _, peerFingerprint?)):
                    guard let offer, let credential else { return connection.refuse(.stream(.protocolViolation), "the other device answered a relayed stream as direct") }
                    connectDirect(
                        offer: offer,
                        credential: credential,
                        peerFingerprint: peerFingerprint,
                        delivery: delivery,
                        link: link,
                        bundle: bundle,
                        on: connection
                    )
                case .success(let (key, peerWindow, nil)):
                    splice.start(key: key, window: window, peerWindow: peerWindow, welcome: welcome)
                    log("stream \(key.id) to \(link.peer.short) for \(bundle) opened")
                case .failure(let error):
                    let text =
                        error.reason == .unsupported
                        ? "the originating device runs an older Baton without continuation streams (\(error.message))" : error.message
                    connection.refuse(.stream(error.reason), text)
                }
            }
        }
        if let link = links.existing(delivery.device) { return opening(link) }
        links.linking(to: delivery.device, host: delivery.host, port: delivery.port).whenComplete { result in
            switch result {
            case .success(let link):
                opening(link)
            case .failure(let error):
                let refused = (error as? BatonAgentError)?.code == .peerRefused
                connection.refuse(.stream(refused ? .refused : .peerGone), "cannot reach the originating device: \(error)")
            }
        }
    }
}
