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

    /// The D-Bus error name of docs/PROTOCOL.md §11 "Errors".
    var errorName: String { Self.errorName(for: code.rawValue) }

    var description: String { "\(errorName): \(message)" }

    /// `org.baton.Error.` + `code` with its first letter in upper case; `notPermitted` is D-Bus's own `AccessDenied`
    /// (§11 "Errors").
    static func errorName(for code: String) -> String {
        if code == IPCRefusal.notPermitted.rawValue { return "org.freedesktop.DBus.Error.AccessDenied" }
        return "org.baton.Error." + code.prefix(1).uppercased() + code.dropFirst()
    }
}
