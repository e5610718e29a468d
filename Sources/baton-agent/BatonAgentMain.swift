import ArgumentParser
import BatonAgentCommand

/// `baton-agent`: this device's agent and nothing else. `baton agent` runs it; it takes the same options.
@main
struct BatonAgentMain: AsyncParsableCommand {
    static let configuration = AgentCommand.describing(as: "baton-agent")

    @OptionGroup var options: AgentOptions

    func run() async throws {
        try await options.runAgent()
    }
}
