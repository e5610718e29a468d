import BatonProtocol

/// Why a bus app's continuation stream did not open (issue 28 item 1; F2, F3): the `refused` the agent gave the
/// stream's connection (a §7 code, or for a stream the `FetchFailure` that says why, §8), with its message. The
/// bus adapter answers `OpenStream` with ``errorName``.
struct DBusStreamRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    var code: IPCRefusal
    var message: String

    init(_ code: IPCRefusal, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The D-Bus error name of docs/PROTOCOL.md §11 "Errors" (`notContinued` → `org.baton.Error.NotContinued`).
    var errorName: String { DBusAppInterface.errorName(for: code.rawValue) }

    var description: String { "\(errorName): \(message)" }
}
