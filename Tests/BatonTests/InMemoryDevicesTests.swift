@testable import BatonAgent
import BatonInMemory
import BatonRegistry
import Foundation
import Testing

/// Issue 26 item 3: whole agents on the in-memory transports (``InMemoryDevices``): sessions, adverts and apps with no
/// socket, time virtual.
@Suite("Issue 26 item 3: two agents wholly in memory")
@MainActor
struct InMemoryDevicesTests {
    /// The address lines of this process's TCP and UDP sockets (`/proc/self/net`) bound at the in-memory agents' host,
    /// 192.0.2.1 (`010200C0` there, as IPv4 or IPv4-mapped IPv6): none, if the agents opened no socket.
    static func socketsAtMemoryHost() -> [String] {
        ["tcp", "tcp6", "udp", "udp6"].flatMap { name in
            ((try? String(contentsOfFile: "/proc/self/net/\(name)", encoding: .utf8)) ?? "")
                .split(separator: "\n")
                .filter { $0.contains("010200C0") }
                .map { "\(name): \($0)" }
        }
    }

    /// Two devices in memory on virtual time, each with the Notes app connected, and the laptop's note current.
    static func laptopOffering() async throws -> (world: InMemoryDevices, laptop: BatonApplication, desktop: BatonApplication, folder: URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-apps-\(UUID().uuidString)")
        let bundle = folder.appendingPathComponent("Notes.app")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try Data(TwoDevices.info.utf8).write(to: bundle.appendingPathComponent("Info.plist"))
        let world = try await InMemoryDevices.start(names: ["laptop", "desktop"], appFolders: [folder])
        let laptop = BatonApplication()
        let desktop = BatonApplication()
        try await laptop.connect(bundleIdentifier: "com.example.Notes", socketPath: world.agents[0].socketPath)
        try await desktop.connect(bundleIdentifier: "com.example.Notes", socketPath: world.agents[1].socketPath)
        let activity = try UserActivity(activityType: "com.example.notes.edit", application: laptop)
        activity.title = "Groceries"
        activity.userInfo["body"] = "Milk"
        activity.becomeCurrent()
        return (world, laptop, desktop, folder)
    }

    /// Whether the desktop lists the laptop's offer within a second of real time (polled, no clock advanced).
    static func nearbyOnDesktop(_ world: InMemoryDevices, _ present: Bool = true) async throws -> Bool {
        for _ in 0..<500 {
            if await !world.agents[1].nearbyItems().isEmpty == present { return true }
            try await Task.sleep(for: .milliseconds(2))
        }
        return false
    }

    static func stop(_ world: InMemoryDevices, _ apps: [BatonApplication], _ folder: URL) async {
        for app in apps { app.disconnect() }
        await world.shutdown()
        try? FileManager.default.removeItem(at: folder)
    }

    @Test("B4 in memory: becomeCurrent on the laptop, the offer nearby on the desktop, continued with its state; no socket file, no TCP or UDP socket, ports virtual")
    func continuesWithNoSocket() async throws {
        let (world, laptop, desktop, folder) = try await Self.laptopOffering()
        var desktopEvents = desktop.events.makeAsyncIterator()
        for agent in world.agents {
            #expect(!FileManager.default.fileExists(atPath: agent.socketPath), "no socket file at \(agent.socketPath)")
            #expect(agent.configuration.host == "192.0.2.1" && agent.port >= 49_152, "a virtual port on the memory network: \(agent.port)")
        }
        #expect(Self.socketsAtMemoryHost().isEmpty, "no TCP or UDP socket at the agents' address")
        #expect(try await Self.nearbyOnDesktop(world), "the laptop's offer is nearby on the desktop")
        let outcome = await world.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil, "continued: \(outcome)")
        var seen: [ContinuationEvent] = []
        while outcome.failure == nil, let event = await desktopEvents.next(isolation: #isolation) {
            seen.append(event)
            if case .willContinue = event { continue }
            break
        }
        if case .continued(let continued) = seen.last {
            #expect(continued.activityType == "com.example.notes.edit" && continued.title == "Groceries")
            #expect(continued.userInfo == ["body": "Milk"])
        } else {
            Issue.record("not continued: \(seen)")
        }
        #expect(Self.socketsAtMemoryHost().isEmpty, "still no TCP or UDP socket at the agents' address")
        await Self.stop(world, [laptop, desktop], folder)
    }

    @Test("A9 in memory on virtual time: the laptop goes out of range with no goodbye; its offer stays listed through 4 s and is gone after its 5 s, with no real wait")
    func nearbyOfferExpires() async throws {
        let (world, laptop, desktop, folder) = try await Self.laptopOffering()
        #expect(try await Self.nearbyOnDesktop(world), "the laptop's offer is nearby on the desktop")
        // Out of range: the laptop's adverts reach no one any more (its radio off), and no goodbye is sent.
        world.agents[0].discovery.socket?.close()
        let started = ContinuousClock.now
        try await world.advance(by: .seconds(4))
        #expect(await !world.agents[1].nearbyItems().isEmpty, "still listed 4 s after the last advert (A9: 5 s to live)")
        try await world.advance(by: .seconds(2))
        #expect(try await Self.nearbyOnDesktop(world, false), "gone once 5 s passed with no fresh advert (A9)")
        #expect(ContinuousClock.now - started < .seconds(4), "6 s of the agents' time took no such real wait")
        await Self.stop(world, [laptop, desktop], folder)
    }
}
