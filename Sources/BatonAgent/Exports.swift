// Agent code speaks in the protocol's types (DeviceID, Roster); users of the agent get them with it.
@_exported import BatonProtocol
