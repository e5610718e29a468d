// `BatonEmbedded`: agents inside this process (``LocalDevices``), for tests, benchmarks, demos and single-binary
// tools. Apps import `Baton`, a client of the device's agent; this module adds the agent itself, so one
// `import BatonEmbedded` gives both.
@_exported import Baton
@_exported import BatonAgent
