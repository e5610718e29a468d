// `Baton` is what apps import: `UserActivity`, `BatonApplication`, responders and documents, the
// `NSUserActivity`-compatible surface, and (re-exported) BatonCore's `PropertyList` and `ActivityPayload`, and the
// agent, for the embedded mode (`Agent.start`), with a single `import Baton`.
@_exported import BatonAgent
@_exported import BatonCore
