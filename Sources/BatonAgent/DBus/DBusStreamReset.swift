/// A bus app's open continuation stream ended abnormally (docs/PROTOCOL.md §8 "Reset"; issue 28 item 1): what the
/// bus adapter tells the app as `App1.StreamReset(t stream, s error_name, s message)` before its pipes close.
struct DBusStreamReset: Sendable, Hashable {
    /// The `FetchFailure` raw value (`appGone`, `peerGone`, `protocolViolation`, ...).
    var reason: String
    var message: String

    /// `StreamReset`'s `error_name`: `org.baton.Error.PeerGone` for `peerGone` (§11 "Errors"; a reason from another
    /// device that is no name's element is `org.baton.Error.Failed`).
    var errorName: String { DBusAppInterface.errorName(for: reason) }
}
