import Foundation

/// A process running in the background (a `baton` command, an agent, an app, or a command inside a network
/// namespace), its output collected in a file, its input a pipe the test can write to.
final class Background {
    let process = Process()
    let log: URL
    let input = Pipe()

    init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], log: URL) throws {
        self.log = log
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = input
        try process.run()
    }

    /// The built `baton` with these arguments.
    convenience init(baton arguments: [String], log: URL) throws {
        try self.init(Baton.executable, arguments, log: log)
    }

    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    func lines(containing text: String) -> [String] {
        output.split(separator: "\n").map(String.init).filter { $0.contains(text) }
    }

    /// Waits until the output has a line satisfying `match`, and returns it; nil on timeout, or when the process
    /// ended without printing one.
    func line(timeout: Double = 10, poll: useconds_t = 20_000, where match: (String) -> Bool) -> String? {
        let end = Date().addingTimeInterval(timeout)
        while true {
            let running = process.isRunning
            if let found = output.split(separator: "\n").map(String.init).first(where: match) { return found }
            if !running || Date() >= end { return nil }
            usleep(poll)
        }
    }

    /// Waits until a line contains `text`; returns it.
    @discardableResult
    func waitFor(_ text: String, timeout: Double = 10, poll: useconds_t = 20_000) -> String? {
        line(timeout: timeout, poll: poll) { $0.contains(text) }
    }

    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    func signal(_ number: Int32) {
        if process.isRunning { Foundation.kill(process.processIdentifier, number) }
    }

    func kill() {
        signal(SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM (an agent says goodbye and closes its sockets), SIGKILL after 3 s, then reaps it.
    func stop() {
        guard process.isRunning else { return }
        signal(SIGTERM)
        if !waitForExit(timeout: 3) { signal(SIGKILL) }
        process.waitUntilExit()
    }

    /// Waits for the process to end, at most `timeout` seconds; returns whether it did.
    func waitForExit(timeout: Double) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < end { usleep(10_000) }
        return !process.isRunning
    }
}
