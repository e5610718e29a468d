import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One continuation stream of an app on the session bus (issue 28 item 1; F2, F3; docs/PROTOCOL.md §11 "Streams"),
/// made by ``Agent/openBusStream(bundle:credentials:process:continuation:)`` or
/// ``Agent/prepareBusStream(bundle:credentials:process:token:)``.
///
/// The bus adapter sends ``appInput`` and ``appOutput`` to the app as `h` (sd-bus sends duplicates) and then calls
/// ``closeAppEnds()`` at once: while the agent holds them, the app's pipes never reach their end of file. They are
/// closed when this is freed in any case.
///
/// Sendable, checked: its `let`s are Sendable; the app's two descriptors are under a lock.
final class DBusStream: Sendable {
    /// The number the app knows it by: `OpenStream`'s and `AcceptStream`'s `t stream`, and `StreamReset`'s. Unique in
    /// the agent's process (its connection's number).
    let number: UInt64
    /// The app it belongs to.
    let bundle: String
    /// The originating app's stream: the token the agent announced it with (`incomingStream`); nil for an opened one.
    let token: Data?
    /// The app's read end (it reads what the other device's app wrote): `h input`.
    let appInput: Int32
    /// The app's write end: `h output`.
    let appOutput: Int32
    /// The agent's connection for the stream, as the Unix socket's would be (`.stream(bundle:)` once open).
    let connection: IPCConnection
    let conduit: DBusStreamConduit
    private let appEndsOpen = NIOLockedValueBox(true)

    init(bundle: String, token: Data?, pipes: DBusStreamPipes, connection: IPCConnection, conduit: DBusStreamConduit) {
        number = connection.appID.value
        self.bundle = bundle
        self.token = token
        appInput = pipes.appInput
        appOutput = pipes.appOutput
        self.connection = connection
        self.conduit = conduit
    }

    /// Completes once the stream is open at both ends; fails with a ``DBusStreamRefusal`` saying why not.
    var opened: EventLoopFuture<Void> { conduit.opened }

    /// Where an abnormal end goes (`StreamReset`); called at once for one that came before. See
    /// ``DBusStreamConduit/whenReset(_:)``.
    func whenReset(_ handler: @escaping @Sendable (DBusStreamReset) -> Void) {
        conduit.whenReset(handler)
    }

    /// The app's ends, `[input, output]`, now the caller's to close (the bus thread closes what it sent); nil when
    /// they were taken or closed already.
    func takeAppEnds() -> [Int32]? {
        let open = appEndsOpen.withLockedValue { open in
            defer { open = false }
            return open
        }
        return open ? [appInput, appOutput] : nil
    }

    /// Closes the agent's copies of the app's ends (once): after they were sent, or when they cannot be.
    func closeAppEnds() {
        let open = appEndsOpen.withLockedValue { open in
            defer { open = false }
            return open
        }
        guard open else { return }
        close(appInput)
        close(appOutput)
    }

    deinit {
        closeAppEnds()
    }
}
