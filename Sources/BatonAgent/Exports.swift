// Agent code speaks in the protocol's types (DeviceID, Roster); users of the agent get them with it.
@_exported import BatonProtocol
// The client side of the app socket (AgentClient, the frames), which the agent's own commands use too.
@_exported import BatonClient
