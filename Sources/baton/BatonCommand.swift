import ArgumentParser
import BatonBench

/// `baton`: the command line of Baton, Handoff for Swift on Linux.
@main
struct BatonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "baton",
        abstract: "Handoff for Swift on Linux: continue an activity from one of your machines on another.",
        discussion: """
            Start with `baton demo` to see an activity handed from one device to another on this machine. \
            App developers check their Info.plist files with `baton plist lint` and their bundles with \
            `baton apps inspect`; `baton apps route` says which app would continue an activity, and why.
            """,
        version: "0.1.0",
        subcommands: [
            DemoCommand.self, AgentCommand.self, InitCommand.self, DevicesCommand.self, PairCommand.self, InviteCommand.self,
            JoinCommand.self, SyncCommand.self, RemoveCommand.self, NearbyCommand.self, ContinueCommand.self, SearchCommand.self, DoctorCommand.self, AppsCommand.self, FoldersCommand.self,
            AasaCommand.self, BrowseCommand.self, BrowserCommand.self, BrowserHostCommand.self,
            PlistCommand.self, BenchCommand.self,
        ]
    )
}
