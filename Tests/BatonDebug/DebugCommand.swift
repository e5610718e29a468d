import ArgumentParser
import BatonAgent
import BatonAgentCommand
import Foundation

/// `baton-debug`: what tests and the load scripts need of a device that no person should (issue 26 item 4: not in
/// the shipped `baton`). Built beside it, never installed.
@main
struct DebugCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "baton-debug",
        abstract: "Commands for Baton's tests and load scripts; not installed.",
        subcommands: [RosterChurn.self, Seal.self, Open.self, StreamApps.self, StreamCopy.self]
    )

    /// Seals a text under this device's current account key (what adverts will use), printing base64.
    struct Seal: ParsableCommand {
        @OptionGroup var state: StateOptions
        @Argument var text: String

        func run() throws {
            let roster = try reportingAgentErrors { try state.store.roster() }
            print(try roster.accountKey.seal(Data(text.utf8)).base64EncodedString())
        }
    }

    /// Opens what `debug seal` printed, with this device's account key; exits 1 when it cannot.
    struct Open: ParsableCommand {
        @OptionGroup var state: StateOptions
        @Argument var sealed: String

        func run() throws {
            let roster = try reportingAgentErrors { try state.store.roster() }
            guard let data = Data(base64Encoded: sealed), let opened = roster.accountKey.open(data) else {
                throw CommandLineError("cannot open: sealed under a key this device does not hold (epoch \(roster.accountKey.epoch) here)")
            }
            print(String(decoding: opened, as: UTF8.self))
        }
    }

    /// Adds made-up members one at a time, saving the roster after each: what crash tests kill mid-write.
    struct RosterChurn: ParsableCommand {
        @OptionGroup var state: StateOptions

        @Option var count = 1

        func run() throws {
            try reportingAgentErrors {
                let identity = try state.store.identity()
                var roster = try state.store.roster()
                for index in 0..<count {
                    let certificate = Data("churn \(roster.members.count) \(index) \(UUID())".utf8)
                    roster.add(Roster.Member(certificate: certificate, name: "churn-\(roster.members.count)", addedBy: identity.id, addedAt: Date()))
                    try state.store.saveRoster(roster)
                }
            }
        }
    }
}
