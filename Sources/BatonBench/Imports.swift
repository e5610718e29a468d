// Plain error messages and `--state`, as every `baton` command has them.
@_exported import BatonAgentCommand
