import BatonProtocol
import BatonRegistry
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import BatonAgent

/// The handoff coordinator on virtual time (issue 26 item 2): its broker's deadlines are timers scheduled through
/// the agent's clock, so a test that moves the clock fires them, with no real wait and no sockets.
@Suite("Issue 26 item 2: the handoff coordinator's deadlines on a virtual clock")
struct HandoffCoordinatorTests {
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The rest of the agent, as the coordinator sees it: `apps` installed, no synced folders.
    final class Host: HandoffHost {
        let apps: [AppRecord]

        init(apps: [AppRecord] = []) {
            self.apps = apps
        }

        func installedApp(_ bundle: String) -> AppRecord? { apps.first { $0.bundleIdentifier == bundle } }
        func route(_ request: RouteRequest) -> RouteDecision { ActivityRouter(registry: AppRegistry(apps: apps, problems: [])).route(request) }
        func isStillTheApp(_ connection: IPCConnection) -> Bool { true }
        func travelling(_ data: Data) -> Data { data }
        func arriving(_ data: Data) -> Agent.ArrivedState { .ready(payload: data, missing: []) }
        func documents(at paths: [String]) -> HandoffBroker.DocumentsCheck { .present }
    }

    /// A coordinator on `clock`, with a save deadline of 1 s and a launch deadline of 10 s, on a loop of its own.
    static func coordinator(_ clock: VirtualClock, host: Host) throws -> HandoffCoordinator {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let identity = try DeviceIdentity.generate(name: "desktop")
        let roster = Roster(founder: Roster.Member(certificate: identity.certificateDER, name: "desktop", addedBy: nil, addedAt: Date()), key: [UInt8](repeating: 7, count: 32))
        let coordinator = HandoffCoordinator(
            broker: HandoffBroker(
                deviceName: "desktop",
                saveDeadlineMilliseconds: 1_000,
                deadlines: .init(launchMilliseconds: 10_000)
            ),
            loop: loop,
            clock: clock.clock,
            links: try PeerLinks(identity: identity, policy: .members { [] }, group: loop, clock: clock.clock),
            discovery: Discovery(me: identity.id, roster: roster, timeToLiveMilliseconds: 5_000, logger: quiet, clock: clock.clock),
            appWork: AppSocketService.Work(),
            socketPath: "/nonexistent/agent.sock",
            browserCommand: ["true"],
            device: identity.id,
            streamRelease: .seconds(1),
            logger: quiet,
            refusals: RefusalLog(logger: quiet, clock: clock.clock)
        )
        coordinator.attach(host)
        return coordinator
    }

    /// Waits, without a fixed sleep, until `condition` holds (the coordinator acts on its loop, after a hop).
    static func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<2_000 where !condition() {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(condition())
    }

    @Test("A7, C8 (issue 26 item 2): a fetch whose app never saves is answered appNotAnswering when the clock passes the save deadline, not a millisecond before")
    func saveDeadlineOnVirtualTime() async throws {
        let clock = VirtualClock()
        let host = Host()
        let coordinator = try Self.coordinator(clock, host: host)
        let notes = HandoffBroker.AppID(90_001)
        let replies = NIOLockedValueBox<[SessionMultiplexer.Reply]>([])
        try await coordinator.loop.submit {
            coordinator.becomeCurrent(app: notes, bundle: "com.example.Notes", team: "TEAM", activity: 1, notice: ActivityNotice(activityType: "com.example.note"))
            let sequence = coordinator.withState { $0.broker.current?.sequence } ?? 0
            _ = coordinator.answerFetch(sequence: sequence, deadlineMilliseconds: 5_000, for: nil, confirms: false) { reply in
                replies.withLockedValue { $0.append(reply) }
            }
        }.get()
        #expect(clock.pending == 1, "the save's deadline is one timer on the clock")
        try await clock.advance(by: 999)
        #expect(replies.withLockedValue { $0 }.isEmpty, "999 ms: the app still has time")
        try await clock.advance(by: 1)
        #expect(replies.withLockedValue { $0 } == [.failed(.appNotAnswering, "com.example.Notes did not give its state within 1000 ms")])
        try await clock.advance(by: 60_000)
        #expect(replies.withLockedValue { $0.count } == 1, "exactly one answer (C5)")
        #expect(clock.pending == 0)
    }

    @Test("C5, C8 (issue 26 item 2): a launched app that never connects fails launchFailed when the clock passes the launch deadline")
    func launchDeadlineOnVirtualTime() async throws {
        let clock = VirtualClock()
        let app = AppRecord(
            bundleURL: URL(fileURLWithPath: "/"), bundleIdentifier: "com.example.Notes", name: "Notes",
            executableURL: URL(fileURLWithPath: "/bin/true"), teamIdentifier: "TEAM", activityTypes: ["com.example.note"],
            documentActivityTypes: [], associatedDomains: [], warnings: [], isIdentityResolved: true
        )
        let host = Host(apps: [app])
        let coordinator = try Self.coordinator(clock, host: host)
        let outcome = NIOLockedValueBox<ContinuationOutcome?>(nil)
        let continuing = Task {
            let result = await coordinator.continueActivity(
                entry: nil, reason: "test", started: 0,
                route: .saved(bundle: "com.example.Notes", activityType: "com.example.note", running: nil, payload: Data())
            )
            outcome.withLockedValue { $0 = result }
        }
        try await Self.eventually { clock.pending == 1 }
        try await clock.advance(by: 9_999)
        #expect(outcome.withLockedValue { $0 } == nil, "9.999 s: the app may still connect")
        try await clock.advance(by: 1)
        await continuing.value
        let result = try #require(outcome.withLockedValue { $0 })
        #expect(result.failure == ContinuationOutcome.Failure(.launchFailed))
        #expect(result.message.contains("did not connect within 10.0 s of being launched"), "\(result.message)")
        coordinator.reapChildren()
    }
}
