import ArgumentParser
import BatonAgent
import BatonAgentCommand
import BatonClient
import BatonProtocol
import BatonRegistry
import BatonSearch
import Foundation

/// `baton search`: find what this device's apps saved for search and continue it where it was (SEMANTICS G1, G2).
struct SearchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find activities this device's apps saved for search, and continue one.",
        discussion: """
            Apps save an activity for search when they mark it eligible (isEligibleForSearch); the agent keeps them \
            in STATE/search.sqlite. Every word must match (title, keywords, description; accents ignored), the last \
            also as the start of a word, so results come as you type. Results are ranked by relevance (a title \
            match above a description match) and recency; matching words are marked.
              baton search weekend groc
              baton search --continue 12   (continue result 12 in its app)
              baton search --rebuild       (start an empty index)
            The index is read directly, so searching works while the agent is stopped; --continue needs it running.
            """
    )

    @OptionGroup var state: StateOptions
    @OptionGroup var apps: AppSearchOptions

    @Argument(help: "The words to look for.")
    var words: [String] = []

    @Option(help: "At most this many results (1-1000).")
    var limit = 20

    @Flag(help: "Print the results as JSON.")
    var json = false

    @Option(name: .customLong("continue"), help: ArgumentHelp("Continue the result with this id here (G2).", valueName: "id"))
    var continueID: Int64?

    @Flag(help: "Set the index aside (as search.sqlite.damaged) and start an empty one; the account is not touched.")
    var rebuild = false

    func validate() throws {
        guard (1...1_000).contains(limit) else { throw ValidationError("--limit must be from 1 to 1000.") }
        let modes = [!words.isEmpty, continueID != nil, rebuild].filter { $0 }.count
        guard modes == 1 else {
            throw ValidationError(modes == 0 ? "Give words to search for, --continue ID or --rebuild." : "Give words, --continue ID or --rebuild, one of them.")
        }
    }

    var path: String { state.store.folder.appendingPathComponent(SearchIndex.fileName).path }

    func run() async throws {
        if let continueID { return try await continueResult(continueID) }
        if rebuild { return try rebuildIndex() }
        try await find(words.joined(separator: " "))
    }

    // MARK: Searching (G1)

    func find(_ query: String) async throws {
        guard FileManager.default.fileExists(atPath: path) else {
            if json { return printJSON(["query": query, "results": [Any]()]) }
            return say("Nothing has been saved for search on this device yet (no \(path)).")
        }
        let results: [SearchResult]
        do {
            results = try await SearchIndex(path: path).search(query, limit: limit)
        } catch let error as SearchError {
            throw CommandLineError(Self.explain(error, path: path))
        }
        let installed = await installedApps()
        if json {
            return printJSON(["query": query, "results": results.map { Self.summary($0, apps: installed) }])
        }
        guard !results.isEmpty else { return say("No saved activity matches \"\(query)\".") }
        let terminal = isatty(STDOUT_FILENO) == 1
        let (open, close) = terminal ? ("\u{1B}[1m", "\u{1B}[0m") : ("[", "]")
        say("\(results.count) result\(results.count == 1 ? "" : "s") for \"\(query)\":")
        for result in results {
            let bundle = result.entry.bundleIdentifier
            let appText = installed[bundle].map { "\($0) (\(bundle))" } ?? "\(bundle) (not installed here)"
            let title = result.title.runs.isEmpty ? "(untitled)" : result.title.rendered(open: open, close: close)
            say(String(format: "%6lld  ", result.id) + "\(title)  —  \(appText), saved \(Self.ago(result.savedAt)) ago")
            if !result.snippet.runs.isEmpty { say("        \(result.snippet.rendered(open: open, close: close))") }
        }
        say("Continue one here: baton search --continue ID")
    }

    /// The installed apps' names by bundle identifier, as the running agent sees them (it is what continues a result:
    /// issue 24 part 7, read here with this command's search paths an app the agent had from its `--apps` folder was
    /// "not installed here"); read from the folders (`--apps-path`, BATON_APPS_PATH, the XDG data folders) when no
    /// agent answers.
    func installedApps() async -> [String: String] {
        let socket = AgentClient.socketPath(stateFolder: state.store.folder)
        if let client = try? await AgentClient.connect(path: socket, bundleIdentifier: nil, timeout: 1) {
            defer { client.close() }
            client.send(.listApps(request: 1))
            if let listed = try? await awaitReply(client, { if case .apps(1, let apps) = $0 { apps } else { nil } }) {
                let apps = listed.filter { !$0.bundle.isEmpty }.map { ($0.bundle, $0.name) }
                return Dictionary(apps) { first, _ in first }
            }
        }
        let apps = apps.registry().apps.map { ($0.bundleIdentifier, $0.name) }
        return Dictionary(apps) { first, _ in first }
    }

    static func summary(_ result: SearchResult, apps: [String: String]) -> [String: Any] {
        let entry = result.entry
        var summary: [String: Any] = [
            "id": result.id, "title": result.title.plain, "markedTitle": result.title.rendered(),
            "matches": result.title.matches + result.snippet.matches, "snippet": result.snippet.rendered(),
            "app": entry.bundleIdentifier, "activityType": entry.activityType, "keywords": entry.keywords,
            "savedAt": isoTime(result.savedAt), "score": result.score,
        ]
        summary["appName"] = apps[entry.bundleIdentifier]
        summary["persistentIdentifier"] = entry.persistentIdentifier
        summary["webpageURL"] = entry.webpageURL
        summary["contentType"] = entry.contentType
        summary["expirationDate"] = entry.expirationDate.map { isoTime($0) }
        return summary
    }

    static func ago(_ date: Date) -> String {
        age(UInt64(max(0, Date().timeIntervalSince(date)) * 1000))
    }

    /// What a person reads for an index error: for a damaged file, what to do.
    static func explain(_ error: SearchError, path: String) -> String {
        switch error.code {
        case .damaged:
            return """
                The search index at \(path) is damaged [damaged].
                Run `baton search --rebuild` to set it aside and start an empty one (apps fill it again as they save \
                activities); your account and paired devices are not touched. A running agent does the same by itself \
                when it next writes to it.
                """
        case .newerSchema:
            return "\(error.message) [newerSchema]"
        default:
            return "The search index cannot be read: \(error.message) [\(error.code)]"
        }
    }

    // MARK: Continuing (G2)

    func continueResult(_ id: Int64) async throws {
        let client = try await controlClient(state)
        defer { client.close() }
        client.send(.continueSaved(request: 1, id: id))
        try report(try await awaitReply(client) { if case .continueResult(1, let outcome) = $0 { outcome } else { nil } }, what: " \(id)")
    }

    // MARK: Rebuilding

    func rebuildIndex() throws {
        do {
            try SearchIndex.setAside(at: path)
            _ = try SearchIndex(path: path)
        } catch let error as SearchError {
            throw CommandLineError(Self.explain(error, path: path))
        }
        say("Started an empty search index at \(path); the old one, if any, is \(path).damaged. Apps fill it again as they save activities.")
    }
}
