// `--state`, `--peer`, the agent command and plain error messages, shared with `baton-agent`.
@_exported import BatonAgentCommand
