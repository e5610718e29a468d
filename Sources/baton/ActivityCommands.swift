import ArgumentParser
import Baton
import BatonAgent
import BatonCore
import Foundation

/// Connects to the agent of `state` as a control client.
func controlClient(_ state: StateOptions) async throws -> AgentClient {
    let path = AgentClient.socketPath(stateFolder: state.store.folder)
    return try await reportingAgentErrorsAsync { try await AgentClient.connect(path: path, bundleIdentifier: nil) }
}

/// Waits for the first message `pick` accepts; fails when the agent hangs up.
func awaitReply<T>(_ client: AgentClient, _ pick: (IPCMessage) -> T?) async throws -> T {
    for await message in client.messages {
        if let value = pick(message) { return value }
        if case .refused(let code, let text) = message { throw CommandLineError("the agent refused: \(text) [\(code)]") }
    }
    throw CommandLineError("the agent closed the connection")
}

/// A duration for people: "850 ms", "12 s", "3 min".
func age(_ milliseconds: UInt64) -> String {
    switch milliseconds {
    case ..<1_000: "\(milliseconds) ms"
    case ..<120_000: "\(milliseconds / 1_000) s"
    default: "\(milliseconds / 60_000) min"
    }
}

/// The nearby list as a table. Names and titles come from other devices: their bidirectional controls are removed,
/// so a title reads in a terminal as it is stored (issue 25 item 7). APP is the application that will open it here:
/// for the agent's own media and documents apps, the one they open it with (issue 27 item 3: "mpv"), else the app.
func nearbyTable(_ items: [NearbyItem]) -> String {
    guard !items.isEmpty else { return "Nothing nearby.\n" }
    let rows = items.map { item in
        [
            item.deviceName, String(item.device.prefix(9)),
            item.opensWith ?? (item.app.isEmpty ? (item.activityType == NSUserActivityTypeBrowsingWeb ? "(web page)" : "(no app here)") : item.app),
            item.title ?? item.activityType ?? "(untitled)", age(item.ageMilliseconds),
        ].map { $0.neutralizingBidiControls() }
    }
    let header = ["DEVICE", "ID", "APP", "TITLE", "AGE"]
    let widths = (0..<header.count).map { column in (rows + [header]).map { $0[column].count }.max() ?? 0 }
    func line(_ cells: [String]) -> String {
        zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }
    return ([line(header)] + rows.map(line)).joined(separator: "\n") + "\n"
}

struct NearbyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nearby",
        abstract: "Show the activities other devices of the account offer now.",
        discussion: """
            Asks this device's agent (which must be running: `baton agent`). Each line is one device's current \
            activity: the device, the app here that would continue it (for media and documents, the application \
            that will open it, e.g. mpv), its title (asked of the originating device), and how long it has been offered. With --watch, prints the list again whenever it changes.
            """
    )

    @OptionGroup var state: StateOptions

    @Flag(help: "Keep running and print the list whenever it changes.")
    var watch = false

    @Flag(help: "Print JSON lines instead of a table.")
    var json = false

    func output(_ items: [NearbyItem]) {
        if json {
            let objects = items.map { item -> [String: Any] in
                var object: [String: Any] = [
                    "device": item.device, "deviceName": item.deviceName, "app": item.app, "ageMilliseconds": item.ageMilliseconds,
                    "sequence": item.sequence,
                ]
                if let title = item.title { object["title"] = title }
                if let type = item.activityType { object["activityType"] = type }
                if let application = item.opensWith { object["opensWith"] = application }
                return object
            }
            let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys])) ?? Data("[]".utf8)
            say(String(decoding: data, as: UTF8.self))
        } else {
            print(nearbyTable(items), terminator: "")
            fflush(nil)
        }
    }

    func run() async throws {
        let client = try await controlClient(state)
        defer { client.close() }
        guard watch else {
            client.send(.listNearby(request: 1))
            output(try await awaitReply(client) { if case .nearby(1, let items) = $0 { items } else { nil } })
            return
        }
        client.send(.watchNearby)
        for await message in client.messages {
            guard case .nearbyChanged(let items) = message else { continue }
            if !json { say("— \(ISO8601DateFormatter().string(from: Date()))") }
            output(items)
        }
        throw CommandLineError("the agent stopped")
    }
}

struct ContinueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "continue",
        abstract: "Continue an activity another device offers, in the right app here.",
        discussion: """
            Without DEVICE, continues the most recent offer; otherwise the one from DEVICE (a name or an id prefix, as \
            `baton nearby` shows them). The agent picks the app (same team, claims the type), launches it if it is not \
            running, and fetches the state straight from the originating device. Exits 1 when the continuation \
            fails, saying why (device gone, app not answering, no app here, ...).
            """
    )

    @OptionGroup var state: StateOptions

    @Argument(help: "The offering device: a name or an id prefix.")
    var device: String?

    func run() async throws {
        let client = try await controlClient(state)
        defer { client.close() }
        client.send(.continueNearby(request: 1, device: device))
        try report(try await awaitReply(client) { if case .continueResult(1, let outcome) = $0 { outcome } else { nil } }, what: "")
    }
}

/// Says how a continuation ended (`baton continue`, `baton search --continue`): the app and the time, and the route;
/// a failure is an error with its code, so the command exits 1.
func report(_ outcome: ContinuationOutcome, what: String) throws {
    let time = String(format: "%.1f ms", Double(outcome.microseconds) / 1000)
    if let failure = outcome.failure {
        var text = "Could not continue\(what): \(outcome.message) [\(failure)] after \(time)"
        if !outcome.reason.isEmpty { text += "\n  route: \(outcome.reason)" }
        throw CommandLineError(text)
    }
    say("\(outcome.message) in \(time)")
    say("  route: \(outcome.reason)")
}
