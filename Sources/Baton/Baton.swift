// `Baton` is what apps import: `UserActivity`, `BatonApplication`, responders and documents, the
// `NSUserActivity`-compatible surface, and (re-exported) BatonCore's `PropertyList` and `ActivityPayload` and the
// agent client's errors, with a single `import Baton`. It is a client of the device's agent and links no part of
// the agent itself (no TLS, no registry); agents inside the process are `BatonEmbedded`'s.
@_exported import BatonClient
@_exported import BatonCore
