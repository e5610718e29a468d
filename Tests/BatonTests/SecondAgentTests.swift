import Baton
@testable import BatonAgent
import BatonEmbedded
import BatonRegistry
import Foundation
import Testing

/// A second agent started on a device whose agent runs is refused, and the running one keeps its app socket: the
/// failed start cleans up only what it made (issue 26 item 1, found moving the app socket into its service).
///
/// On the network on purpose (issue 26 item 3): what it checks is the Unix app socket and its `agent-socket` file on
/// disk, which an agent in memory has neither of.
@MainActor
@Suite("A second agent on the same device leaves the first one's socket alone")
struct SecondAgentTests {
    @Test("a second agent on a running agent's socket is refused, and the first agent's socket and its agent-socket file stay")
    func refusedStartKeepsTheRunningSocket() async throws {
        let devices = try await LocalDevices.start(names: ["laptop"], apps: AppRegistry(apps: []))
        defer { try? FileManager.default.removeItem(at: devices.root) }
        let running = devices.agents[0]
        let nameFile = running.configuration.store.folder.appendingPathComponent("agent-socket")
        #expect(FileManager.default.fileExists(atPath: running.socketPath))
        #expect(FileManager.default.fileExists(atPath: nameFile.path))
        await #expect(throws: BatonAgentError.self) {
            _ = try await Agent.build(running.configuration)
        }
        #expect(FileManager.default.fileExists(atPath: running.socketPath), "the running agent's socket was removed by the start that failed")
        #expect(FileManager.default.fileExists(atPath: nameFile.path), "the running agent's agent-socket file was removed")
        // And apps still reach the running agent there.
        let app = BatonApplication()
        try await app.connect(bundleIdentifier: BuiltInBrowser.bundleIdentifier, socketPath: running.socketPath)
        app.disconnect()
        await devices.shutdown()
    }
}
