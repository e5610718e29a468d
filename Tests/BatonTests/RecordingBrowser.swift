import Baton
import Foundation
import Testing

/// A browser command for an agent (`AgentConfiguration.browserCommand`) that records the URLs it is given, one per
/// line, in a temporary folder: what the E1 tests check instead of opening a real browser.
struct RecordingBrowser {
    let folder: URL
    var command: [String] { [folder.appendingPathComponent("open.sh").path] }
    var record: URL { folder.appendingPathComponent("opened") }

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-open-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let script = folder.appendingPathComponent("open.sh")
        try Data("#!/bin/sh\necho \"$1\" >> '\(record.path)'\n".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
    }

    /// Whether the command has run at all.
    var wasRun: Bool { FileManager.default.fileExists(atPath: record.path) }

    /// What the command was given, once it has run (waiting up to 5 s), or nil.
    func opened() async throws -> String? {
        for _ in 0..<500 where !wasRun {
            try await Task.sleep(for: .milliseconds(10))
        }
        return try? String(contentsOf: record, encoding: .utf8)
    }

    func remove() {
        try? FileManager.default.removeItem(at: folder)
    }
}

extension AsyncStream<ContinuationEvent>.Iterator {
    /// The activity the next `continued` event delivers; a `failed` event first is recorded as an issue, and nil.
    @MainActor
    mutating func nextContinued() async -> UserActivity? {
        while let event = await next(isolation: #isolation) {
            if case .continued(let activity) = event { return activity }
            if case .failed(_, let error) = event {
                Issue.record("the app was told the continuation failed: \(error)")
                return nil
            }
        }
        return nil
    }
}
