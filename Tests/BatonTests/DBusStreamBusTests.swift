import BatonEmbedded
import BatonTestSupport
import Foundation
import Testing

/// Continuation streams between two Python apps on two agents' session buses (issue 28 item 1; F1–F3;
/// docs/PROTOCOL.md §11 "Streams"): the continuing app calls `OpenStream`, the originating app is called
/// `AcceptStream`, and each writes a mebibyte into its `output` while it reads its `input` to the end, on real
/// dbus-daemons, with the descriptors passed as `h`. The world is ``DBusAppTests/World``'s with its app a script, the
/// apps ``DBusAppPeer``s running that script with this suite's code (an app of the interface: its `App1` methods are
/// the other script's, plus the streams').
@Suite("Issue 28 item 1: continuation streams between Python apps over the agents' D-Bus interface", .serialized)
struct DBusStreamBusTests {
    @Test(
        "F2, F3: a Python app's OpenStream and the other's AcceptStream carry 1 MiB each way, checksummed (SHA-256), each eof the other's end of file",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func mebibyteEachWay() async throws {
        let world = try await DBusAppTests.World(script: true)
        do {
            let (opener, acceptor) = try await Self.continued(world, acceptor: "accept")
            let started = ContinuousClock.now
            let openerGot = try #require(await opener.line("got ", within: 30), "\(opener.lines)")
            let acceptorGot = try #require(await acceptor.line("got ", within: 30), "\(acceptor.lines)")
            print("issue 28 item 1: both bus apps had read their 1 MiB within \(ContinuousClock.now - started) of the continuation's end; \(opener.lines) \(acceptor.lines)")
            let openerSent = try #require(await opener.line("sent "))
            let acceptorSent = try #require(await acceptor.line("sent "))
            // "got LENGTH SHA" against the other's "sent LENGTH SHA".
            #expect(openerGot.dropFirst(4) == acceptorSent.dropFirst(5), "\(opener.lines) \(acceptor.lines)")
            #expect(acceptorGot.dropFirst(4) == openerSent.dropFirst(5))
            #expect(openerSent.hasPrefix("sent 1048576 ") && acceptorSent.hasPrefix("sent 1048576 "))
            #expect(await acceptor.line("accept ") != nil)
            #expect(!(opener.lines + acceptor.lines).contains { $0.hasPrefix("reset") || $0.hasPrefix("failed") })
        }
        await world.stop()
    }

    @Test(
        "F3, §8 Reset: the originating Python app quits with the stream open: the continuing app is called StreamReset with org.baton.Error.AppGone and reads its input's end",
        .requires(.dbusDaemon, .pythonDBus, .libsystemd),
        .timeLimit(.minutes(2))
    )
    func appQuitsMidStream() async throws {
        let world = try await DBusAppTests.World(script: true)
        do {
            let (opener, acceptor) = try await Self.continued(world, acceptor: "acceptThenQuit")
            let opened = try #require(await opener.line("opened ", within: 30), "\(opener.lines)")
            let reset = try #require(await opener.line("reset ", within: 30), "\(opener.lines) \(acceptor.lines)")
            // StreamReset names the stream OpenStream answered, with the reason's error name.
            #expect(reset.hasPrefix("reset \(opened.dropFirst("opened ".count)) org.baton.Error.AppGone"), "\(reset)")
            #expect(await opener.line("got ", within: 30) != nil, "\(opener.lines)")
            #expect(await acceptor.finished())
            print("issue 28 item 1: the continuing app, its stream's other end gone: \(opener.lines.filter { !$0.hasPrefix("registered") })")
        }
        await world.stop()
    }

    /// The desktop's app (mode `open`: OpenStream from Continue) continues the laptop's (mode `acceptor`), which offered
    /// a recipe with streams: both apps, once the continuation has ended.
    static func continued(_ world: DBusAppTests.World, acceptor mode: String) async throws -> (opener: DBusAppPeer, acceptor: DBusAppPeer) {
        // The world's app is the script its desktop file names (ROOT/app.py, §11 Identity 3): this one's code, put there
        // in its place, so only the interpreter running that script passes the agent's check.
        let folder = world.root
        try Data("#!\(DBusAppPeer.python)\n\(script)".utf8).write(to: folder.appendingPathComponent("app.py"))
        let opener = try DBusAppPeer("open", app: "org.example.Recipes", address: world.buses[1].address, folder: folder, name: "opener")
        #expect(await opener.line("registered") != nil, "\(opener.lines)")
        let acceptor = try DBusAppPeer(mode, app: "org.example.Recipes", address: world.buses[0].address, folder: folder, name: "acceptor")
        #expect(await acceptor.line("current") != nil, "\(acceptor.lines)")
        #expect(try await world.recipeListed(on: world.devices.agents[1]), "the desktop never listed the laptop's recipe")
        let outcome = await world.devices.agents[1].continueNearby(device: "laptop")
        #expect(outcome.failure == nil && outcome.app == "org.example.Recipes", "\(outcome)")
        return (opener, acceptor)
    }

    static let script = DBusAppPeer.prelude + #"""
        SIZE = 1 << 20

        def pattern(seed):
            unit = bytes((i * 7 + seed) % 256 for i in range(251))
            return (unit * (SIZE // 251 + 1))[:SIZE]

        def run_stream(input_fd, output_fd, seed):
            data = pattern(seed)
            def write():
                try:
                    with os.fdopen(output_fd, 'wb', buffering=0) as out:
                        view = memoryview(data)
                        while view:
                            view = view[out.write(view):]
                except BrokenPipeError:
                    say('brokenPipe', len(data) - len(view))
                    return
                say('sent', len(data), hashlib.sha256(data).hexdigest())
            def read():
                digest, total = hashlib.sha256(), 0
                with os.fdopen(input_fd, 'rb', buffering=0) as inp:
                    while True:
                        chunk = inp.read(65536)
                        if not chunk:
                            break
                        digest.update(chunk)
                        total += len(chunk)
                say('got', total, digest.hexdigest())
            writer = threading.Thread(target=write)
            writer.start()
            read()
            writer.join()
            GLib.timeout_add(300, loop.quit)

        class App(dbus.service.Object):
            @dbus.service.method('org.baton.App1', in_signature='tt', out_signature='a{sv}')
            def Save(self, activity, deadline):
                return props(userInfo=props(recipe='Tarte Tatin'), title='Tarte Tatin', supportsContinuationStreams=True)

            @dbus.service.method('org.baton.App1', in_signature='t')
            def WasContinued(self, activity):
                say('wasContinued')

            @dbus.service.method('org.baton.App1', in_signature='t')
            def NotCurrent(self, activity):
                pass

            @dbus.service.method('org.baton.App1', in_signature='ts')
            def WillContinue(self, continuation, activity_type):
                say('will', activity_type)

            @dbus.service.method('org.baton.App1', in_signature='ta{sv}', out_signature='b')
            def Continue(self, continuation, activity):
                say('continue', int(continuation))
                def opened(stream, input_fd, output_fd):
                    say('opened', int(stream))
                    threading.Thread(target=run_stream, args=(input_fd.take(), output_fd.take(), 11)).start()
                def failed(error):
                    say('failed', error.get_dbus_name(), error.get_dbus_message())
                    loop.quit()
                GLib.idle_add(lambda: agent.OpenStream(dbus.UInt64(continuation), reply_handler=opened, error_handler=failed, timeout=20) and False)
                return True

            @dbus.service.method('org.baton.App1', in_signature='tsss')
            def DidFail(self, continuation, activity_type, error_name, message):
                say('failed', error_name, message)
                loop.quit()

            @dbus.service.method('org.baton.App1', in_signature='tthh')
            def AcceptStream(self, activity, stream, input_fd, output_fd):
                say('accept', int(activity), int(stream))
                if mode == 'acceptThenQuit':
                    # Takes the stream, then the process ends with it open (after the answer has gone out).
                    kept = (input_fd.take(), output_fd.take())
                    GLib.timeout_add(300, lambda: os._exit(0))
                    return
                threading.Thread(target=run_stream, args=(input_fd.take(), output_fd.take(), 13)).start()

            @dbus.service.method('org.baton.App1', in_signature='tss')
            def StreamReset(self, stream, error_name, message):
                say('reset', int(stream), error_name, message)

        App(bus, '/org/baton/App1')
        device, name = agent.Register(app_id, props())
        say('registered', device)
        if mode in ('accept', 'acceptThenQuit'):
            activity = agent.CreateActivity('org.example.recipe', props(
                title='Tarte Tatin', userInfo=props(recipe='Tarte Tatin'), supportsContinuationStreams=True))
            agent.BecomeCurrent(activity)
            say('current', int(activity))
        GLib.timeout_add_seconds(90, loop.quit)
        loop.run()
        """#
}
