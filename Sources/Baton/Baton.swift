// `Baton` is what apps import. It re-exports BatonCore, so `PropertyList`, `ActivityPayload` and
// `BatonCoreError` are available with a single `import Baton`.
@_exported import BatonCore
