import BatonEmbedded
import BatonTestSupport
import Foundation
import Testing

/// Who an app is on the session bus (issue 28 item 3; docs/PROTOCOL.md §11 "Identity"), between two real agents with a
/// dbus-daemon each: the recipe app is a Python script (``DBusAppTests/World`` with `script`), so only the interpreter
/// running that script is the app, and impostors of the same user are other Python programs.
@Suite("Issue 28 item 3: identity on the bus: impostors of the same user are refused and given nothing", .serialized)
struct DBusAppIdentityTests {
    /// The App1 calls a process said it received (DBusAppPeer prints one line per call).
    static func appCalls(_ peer: DBusAppPeer) -> [String] {
        peer.lines.filter { line in ["save", "wasContinued", "notCurrent", "will", "continue", "didFail"].contains { line.hasPrefix($0 + " ") } }
    }

    @Test(
        "Issue 28 item 3, §11 Identity 3, C5: with the app a script, another script and `python3 -c` claiming its id get AccessDenied and no App1 call; the script itself registers and receives the continuation",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func otherPythonProgramsRefused() async throws {
        let world = try await World(script: true)
        let desktop = world.devices.agents[1]
        let bus = world.buses[1].address
        // The impostors claim the id first, so nothing but who they are can refuse them (not AlreadyConnected).
        let otherScript = try DBusAppPeer("claim", app: "org.example.Recipes", address: bus, folder: world.root, name: "otherScript", script: "impostor.py")
        let inline = try DBusAppPeer("claim", app: "org.example.Recipes", address: bus, folder: world.root, name: "inline", inline: true)
        for impostor in [otherScript, inline] {
            let refused = await impostor.line("refused")
            #expect(refused?.hasPrefix("refused org.freedesktop.DBus.Error.AccessDenied") == true, "\(impostor.lines)")
            print("issue 28 item 3: \(impostor.output.lastPathComponent): \(refused ?? "no answer")")
        }
        let receiver = try DBusAppPeer("receive", app: "org.example.Recipes", address: bus, folder: world.root, name: "receiver")
        #expect(await receiver.line("registered") != nil, "\(receiver.lines)")
        let offerer = try DBusAppPeer("offer", app: "org.example.Recipes", address: world.buses[0].address, folder: world.root, name: "offerer")
        #expect(await offerer.line("current") != nil, "\(offerer.lines)")
        #expect(try await world.recipeListed(on: desktop), "the desktop never listed the laptop's recipe")
        let outcome = await desktop.continueNearby(device: "laptop")
        #expect(outcome.failure == nil && outcome.app == "org.example.Recipes", "\(outcome)")
        #expect(await receiver.line("continue ")?.contains("Tarte Tatin") == true, "\(receiver.lines)")
        // Both impostors are still on the bus with org.baton.App1 exported, and were called nothing.
        #expect(otherScript.process.isRunning && inline.process.isRunning)
        #expect(Self.appCalls(otherScript).isEmpty, "\(otherScript.lines)")
        #expect(Self.appCalls(inline).isEmpty, "\(inline.lines)")
        otherScript.stop()
        inline.stop()
        receiver.stop()
        offerer.stop()
        await world.stop()
    }

    @Test(
        "Issue 28 item 3, §11 Identity, A9, C5: the app's well-known name taken over (ReplaceExisting) by another program mid-continuation: the impostor's Register is AccessDenied, Continue still goes to the app's unique name, the impostor gets no App1 call",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func nameTakenOverMidContinuation() async throws {
        let taken = try await TakenOver()
        #expect(!taken.offerer.lines.contains { $0.hasPrefix("wasContinued") }, "the continuation ended before the name was taken over: \(taken.offerer.lines)")
        let outcome = await taken.continuing.value
        #expect(outcome.failure == nil && outcome.app == "org.example.Recipes", "\(outcome)")
        #expect(await taken.app.line("continue ")?.contains("Tarte Tatin") == true, "\(taken.app.lines)")
        // A moment for any stray call to arrive.
        try await Task.sleep(for: .milliseconds(500))
        #expect(Self.appCalls(taken.impostor).isEmpty, "\(taken.impostor.lines)")
        print("issue 28 item 3: name taken over mid-continuation: the app heard \(Self.appCalls(taken.app)); the impostor \(taken.impostor.lines)")
        await taken.stop()
    }

    @Test(
        "Issue 28 item 3, A9, C5: the app leaving the bus after WillContinue, its well-known name taken over by an impostor (refused): the continuation fails appGone within seconds and nobody else is called",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func appLeavesMidContinuation() async throws {
        let taken = try await TakenOver()
        let left = ContinuousClock.now
        taken.app.stop()
        let outcome = await taken.continuing.value
        let took = ContinuousClock.now - left
        #expect(!taken.offerer.lines.contains { $0.hasPrefix("wasContinued") }, "\(taken.offerer.lines)")
        #expect(outcome.failure?.rawValue == "appGone", "\(outcome)")
        #expect(took < .seconds(5), "the continuation failed \(took) after the app left")
        try await Task.sleep(for: .milliseconds(500))
        #expect(Self.appCalls(taken.impostor).isEmpty, "\(taken.impostor.lines)")
        #expect(!taken.app.lines.contains { $0.hasPrefix("continue ") }, "\(taken.app.lines)")
        print("issue 28 item 3: the app left mid-continuation: \(outcome.failure.map { "\($0)" } ?? "none") (\(outcome.message)) \(took) after the app left; the impostor \(taken.impostor.lines)")
        await taken.stop()
    }

    /// A continuation under way into the desktop's app (a script owning its app id as a well-known name that may be
    /// replaced, as a GApplication does), which has been called WillContinue, while the laptop's Save is held 3 s
    /// (deadline 6 s); and then an impostor (another script) that took the name over (`ReplaceExisting`) and whose
    /// Register was refused AccessDenied.
    struct TakenOver {
        let world: World
        let app: DBusAppPeer
        let offerer: DBusAppPeer
        let impostor: DBusAppPeer
        let continuing: Task<ContinuationOutcome, Never>

        init() async throws {
            world = try await World(script: true, saveDeadline: 6)
            let desktop = world.devices.agents[1]
            let bus = world.buses[1].address
            app = try DBusAppPeer("holder", app: "org.example.Recipes", address: bus, folder: world.root, name: "app")
            #expect(await app.line("owns") == "owns 1", "\(app.lines)")
            #expect(await app.line("registered") != nil, "\(app.lines)")
            offerer = try DBusAppPeer("heldOffer", app: "org.example.Recipes", address: world.buses[0].address, folder: world.root, name: "offerer")
            #expect(await offerer.line("current") != nil, "\(offerer.lines)")
            #expect(try await world.recipeListed(on: desktop), "the desktop never listed the laptop's recipe")
            continuing = Task { await desktop.continueNearby(device: "laptop") }
            #expect(await app.line("will ") == "will org.example.recipe", "\(app.lines)")
            impostor = try DBusAppPeer("takeover", app: "org.example.Recipes", address: bus, folder: world.root, name: "impostor", script: "impostor.py")
            // 1: DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER, the name is the impostor's now.
            #expect(await impostor.line("took") == "took 1", "\(impostor.lines)")
            #expect(await impostor.line("refused")?.hasPrefix("refused org.freedesktop.DBus.Error.AccessDenied") == true, "\(impostor.lines)")
        }

        func stop() async {
            for peer in [impostor, app, offerer] { peer.stop() }
            await world.stop()
        }
    }

    @Test(
        "Issue 28 item 3, §11 Identity 3 (known gap): a process that connects to the bus, forks, and has its parent exec the app's script keeps a connection the bus says is the app's pid, and registers as the app",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(1))
    )
    func connectionKeptAcrossExec() async throws {
        let world = try await World(script: true)
        let script = try DBusAppPeer.install(in: world.root)
        let answer = world.root.appendingPathComponent("forked.out")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: DBusAppPeer.python)
        process.arguments = ["-c", Self.forked, world.buses[0].address, script.path, answer.path]
        try process.run()
        var said = ""
        for _ in 0..<200 where said.isEmpty {
            try await Task.sleep(for: .milliseconds(50))
            said = (try? String(contentsOf: answer, encoding: .utf8)) ?? ""
        }
        print("issue 28 item 3: a bus connection kept across its process's exec of the app's script: \(said)")
        // The bus's credentials are the connection's at connect time (SO_PEERCRED): its pid is now the real app's
        // process, start time and all; a ProcessFD would pin the same process. On the socket, the holder check (issue
        // 25 item 8) refuses this; over the bus nothing here can see who holds the connection. See ARCHITECTURE.
        withKnownIssue("the bus says which process connected, not which holds the connection now") {
            #expect(said.hasPrefix("refused org.freedesktop.DBus.Error.AccessDenied"), "\(said)")
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        await world.stop()
    }

    /// `python3 -c FORKED ADDRESS SCRIPT OUT`: connects to the bus, forks; the parent execs the app's script (as an
    /// app of no registered id, so it stays on the bus without registering); the child, another program, calls Register
    /// as the app on the connection made before the exec and writes what it was answered to OUT.
    static let forked = #"""
        import os, sys, time, dbus
        address, script, out = sys.argv[1], sys.argv[2], sys.argv[3]
        bus = dbus.bus.BusConnection(address)
        if os.fork() != 0:
            os.execv(sys.executable, [sys.executable, script, address, 'claim', 'org.example.Nobody'])
        time.sleep(1.5)
        agent = dbus.Interface(bus.get_object('org.baton.Agent', '/org/baton/Agent1', introspect=False), 'org.baton.Agent1')
        try:
            said = 'registered %s %s' % tuple(agent.Register('org.example.Recipes', dbus.Dictionary({}, signature='sv')))
        except dbus.exceptions.DBusException as error:
            said = 'refused %s %s' % (error.get_dbus_name(), error.get_dbus_message())
        open(out + '.part', 'w').write(said + '\n')
        os.rename(out + '.part', out)
        """#

    typealias World = DBusAppTests.World
}
