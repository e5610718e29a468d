import Foundation
import Testing

/// An app on the session bus played by Python (dbus-python, GLib's main loop), against the agent's D-Bus interface
/// (issue 28 item 1; docs/PROTOCOL.md §11): it registers, and in one of a few modes offers a recipe, receives one, or
/// sends hostile calls, saying what happened one line at a time on standard output (written to a file the test reads).
final class DBusAppPeer {
    let process = Process()
    let output: URL

    /// `python3 SCRIPT ADDRESS MODE APP_ID` (SCRIPT `folder/app.py` unless `script` names another file of the same
    /// code; with `inline`, `python3 -c CODE` running that file's code, which names no script), started (after
    /// `launcher`, the argument vector that runs it: `setpriv ...` as another user); its lines go to `folder/NAME.out`.
    init(
        _ mode: String, app: String, address: String, folder: URL, name: String, launcher: [String] = [], script scriptName: String = "app.py",
        inline: Bool = false
    ) throws {
        let script = try Self.install(in: folder, as: scriptName)
        output = folder.appendingPathComponent("\(name).out")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        let program = inline ? [Self.python, "-c", "exec(open(\(String(reflecting: script.path))).read())"] : [Self.python, script.path]
        let command = launcher + program + [address, mode, app]
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = process.standardOutput
        try process.run()
    }

    deinit { stop() }

    /// Writes the app's code to `folder/NAME`, unless a file is there, as a script the kernel would run (a `#!` line
    /// naming Python, executable): what a desktop file's `TryExec`/`Exec` names for a script app (§11 Identity 3).
    @discardableResult
    static func install(in folder: URL, as name: String = "app.py") throws -> URL {
        let script = folder.appendingPathComponent(name)
        guard !FileManager.default.fileExists(atPath: script.path) else { return script }
        try Data("#!\(python)\n\(Self.script)".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        return script
    }

    /// What /proc/PID/exe of the Python process is: the program a desktop file must name for it (§11 "Identity").
    static let python = URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path

    var lines: [String] {
        ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// The first line starting with `prefix`, within `seconds`.
    func line(_ prefix: String, within seconds: Double = 15) async -> String? {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until {
            if let found = lines.first(where: { $0.hasPrefix(prefix) }) { return found }
            if !process.isRunning, let found = lines.first(where: { $0.hasPrefix(prefix) }) { return found }
            if !process.isRunning { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    /// Waits for the process to end, at most `seconds`.
    func finished(within seconds: Double = 30) async -> Bool {
        let until = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < until { try? await Task.sleep(for: .milliseconds(50)) }
        return !process.isRunning
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// What every app script of these tests starts with: its arguments (bus address, mode, app id), the bus, a main
    /// loop, `say` (a line on standard output), `props` (an `a{sv}`), and `agent`, the agent's interface once
    /// `org.baton.Agent` is on the bus. ``script`` and DBusStreamBusTests' script go on from here.
    static let prelude = #"""
        import hashlib, json, os, sys, threading, time
        import dbus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib

        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        address, mode, app_id = sys.argv[1], sys.argv[2], sys.argv[3]
        bus = dbus.bus.BusConnection(address)
        loop = GLib.MainLoop()

        def say(*words):
            print(*words, flush=True)

        def props(**entries):
            return dbus.Dictionary(entries, signature='sv')

        for _ in range(300):
            if bus.name_has_owner('org.baton.Agent'):
                break
            time.sleep(0.05)
        agent = dbus.Interface(bus.get_object('org.baton.Agent', '/org/baton/Agent1', introspect=False), 'org.baton.Agent1')

        """#

    static let script = prelude + #"""
        def plain(value):
            if isinstance(value, dict):
                return {str(k): plain(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [plain(v) for v in value]
            if isinstance(value, (dbus.String, dbus.ObjectPath, dbus.Signature)):
                return str(value)
            if isinstance(value, dbus.Boolean):
                return bool(value)
            if isinstance(value, (dbus.Double,)):
                return float(value)
            if isinstance(value, (dbus.Byte, dbus.Int16, dbus.UInt16, dbus.Int32, dbus.UInt32, dbus.Int64, dbus.UInt64)):
                return int(value)
            return value

        def quit_soon():
            GLib.timeout_add(200, loop.quit)

        class App(dbus.service.Object):
            @dbus.service.method('org.baton.App1', in_signature='tt', out_signature='a{sv}')
            def Save(self, activity, deadline):
                say('save', int(activity), int(deadline))
                if mode == 'slowOffer':
                    time.sleep(deadline / 1000 + 1.5)
                if mode == 'heldOffer':
                    time.sleep(3)
                return props(userInfo=props(recipe='Tarte Tatin', step=dbus.Int64(4)), title='Tarte Tatin')

            @dbus.service.method('org.baton.App1', in_signature='t')
            def WasContinued(self, activity):
                say('wasContinued', int(activity))
                quit_soon()

            @dbus.service.method('org.baton.App1', in_signature='t')
            def NotCurrent(self, activity):
                say('notCurrent', int(activity))

            @dbus.service.method('org.baton.App1', in_signature='ts')
            def WillContinue(self, continuation, activity_type):
                say('will', activity_type)

            @dbus.service.method('org.baton.App1', in_signature='ta{sv}', out_signature='b')
            def Continue(self, continuation, activity):
                say('continue', json.dumps(plain(activity), sort_keys=True))
                quit_soon()
                return True

            @dbus.service.method('org.baton.App1', in_signature='tsss')
            def DidFail(self, continuation, activity_type, error_name, message):
                say('didFail', error_name, message)
                quit_soon()

        App(bus, '/org/baton/App1')

        def error_name(call):
            try:
                call()
                return 'none'
            except dbus.exceptions.DBusException as error:
                return error.get_dbus_name()

        if mode == 'introspect':
            xml = bus.call_blocking('org.baton.Agent', '/org/baton/Agent1', 'org.freedesktop.DBus.Introspectable', 'Introspect', '', ())
            say('introspected', 'org.baton.Agent1' in xml, all(m in xml for m in ('Register', 'CreateActivity', 'UpdateActivity', 'BecomeCurrent', 'ResignCurrent', 'Invalidate', 'SetNeedsSave', 'OpenStream', 'Save', 'WasContinued', 'NotCurrent', 'WillContinue', 'Continue', 'DidFail', 'AcceptStream', 'StreamReset')))
            sys.exit(0)

        if mode == 'retry':
            say('first', error_name(lambda: agent.Register('org.example.Nobody', props())))
        if mode == 'holder':
            # As a GApplication would: the app id as a well-known name another may take over.
            say('owns', bus.request_name(app_id, dbus.bus.NAME_FLAG_ALLOW_REPLACEMENT | dbus.bus.NAME_FLAG_DO_NOT_QUEUE))
        if mode == 'takeover':
            say('took', bus.request_name(app_id, dbus.bus.NAME_FLAG_REPLACE_EXISTING | dbus.bus.NAME_FLAG_DO_NOT_QUEUE))
        try:
            device, name = agent.Register(app_id, props())
        except dbus.exceptions.DBusException as error:
            say('refused', error.get_dbus_name(), error.get_dbus_message())
            if mode not in ('claim', 'takeover'):
                sys.exit(0)
            # A refused impostor stays on the bus, its org.baton.App1 exported, saying any call it gets.
            GLib.timeout_add_seconds(60, loop.quit)
            loop.run()
            sys.exit(0)
        say('registered', device, name)

        if mode in ('offer', 'slowOffer', 'heldOffer'):
            activity = agent.CreateActivity('org.example.recipe', props(
                title='Tarte Tatin', userInfo=props(recipe='Tarte Tatin', step=dbus.Int64(3)), needsSave=True))
            agent.BecomeCurrent(activity)
            say('current', int(activity))
        elif mode in ('receive', 'retry', 'holder'):
            say('waiting')
        elif mode == 'hostile':
            create = lambda properties: agent.CreateActivity('org.example.recipe', properties)
            raw = lambda member, signature, args: bus.call_blocking('org.baton.Agent', '/org/baton/Agent1', 'org.baton.Agent1', member, signature, args)
            say('wrongSignature', error_name(lambda: raw('CreateActivity', 'ss', ('a', 'b'))))
            say('unknownMethod', error_name(lambda: raw('Explode', '', ())))
            say('bigString', error_name(lambda: create(props(userInfo=props(big='x' * ((1 << 20) + 16))))))
            say('bigArray', error_name(lambda: create(props(userInfo=props(list=dbus.Array([dbus.Int64(1)] * 100000, signature='x'))))))
            deep = dbus.String('bottom', variant_level=58)
            say('deepVariants', error_name(lambda: create(props(userInfo=props(deep=deep)))))
            say('badURL', error_name(lambda: create(props(webpageURL='file:///etc/passwd'))))
            say('unknownKey', error_name(lambda: create(props(colour='red'))))
            other = dbus.bus.BusConnection(address)
            say('notRegistered', error_name(lambda: other.call_blocking('org.baton.Agent', '/org/baton/Agent1', 'org.baton.Agent1', 'BecomeCurrent', 't', (1,))))
            say('stillAnswering', error_name(lambda: create(props(title='fine'))))
            sys.exit(0)

        GLib.timeout_add_seconds(60, loop.quit)
        loop.run()
        """#
}
