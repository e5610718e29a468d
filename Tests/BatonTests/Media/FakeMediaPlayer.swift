import BatonTestSupport
import Foundation
import Testing

/// A media player that says what the test tells it to (issue 27 items 1, 4): `org.mpris.MediaPlayer2` and its
/// `.Player` interface on a bus, in Python with Debian's dbus-python. Each ``set(_:)`` changes its state and emits
/// `PropertiesChanged`, as a real player does when its track or status changes.
final class FakeMediaPlayer {
    let process = Process()
    let input = Pipe()
    let log: URL

    /// The player as `org.mpris.MediaPlayer2.NAME` on the bus at `address`; returns once it owns its name.
    init(name: String, address: String, folder: URL) throws {
        let script = folder.appendingPathComponent("fake-player.py")
        try Data(Self.script.utf8).write(to: script)
        log = folder.appendingPathComponent("player-\(name)-\(UUID().uuidString.prefix(8)).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.executableURL = try Requirement.pythonDBus.executable()
        process.arguments = ["-u", script.path, address, "org.mpris.MediaPlayer2.\(name)"]
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = input
        try process.run()
        for _ in 0..<1000 where !output.contains("ready") && process.isRunning { usleep(10_000) }
        try #require(output.contains("ready"), "the fake player did not start: \(output)")
    }

    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Sets its state: `status` (Playing, Paused, Stopped), `url`, `title`, `artist`, `position` (a number; with
    /// `positionType` "t" sent unsigned), `vanishOnRead` (it exits in the middle of the next call made to it), `hangOnRead` (seconds it sleeps in each call
    /// before answering).
    func set(_ fields: [String: Any]) {
        guard let line = try? JSONSerialization.data(withJSONObject: fields) else { return }
        input.fileHandleForWriting.write(line + Data("\n".utf8))
    }

    /// The calls the player received (`OpenUri URL`, `SetPosition TRACK µs`, `Pause`, `Play`), in order.
    var calls: [String] {
        output.split(separator: "\n").filter { $0.hasPrefix("call ") }.map { String($0.dropFirst(5)) }
    }

    func quit() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { quit() }

    static let script = #"""
        import json, os, sys, time
        import dbus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib

        ROOT = "org.mpris.MediaPlayer2"
        PLAYER = "org.mpris.MediaPlayer2.Player"
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.bus.BusConnection(sys.argv[1])
        state = {"status": "Stopped", "url": None, "title": None, "artist": [], "position": 0, "positionType": "x",
                 "length": 180000000, "vanishOnRead": False, "hangOnRead": 0}

        def metadata():
            m = dbus.Dictionary({"mpris:trackid": dbus.ObjectPath("/org/fake/track/1")}, signature="sv")
            if state["url"] is not None: m["xesam:url"] = dbus.String(state["url"])
            if state["title"] is not None: m["xesam:title"] = dbus.String(state["title"])
            if state["artist"]: m["xesam:artist"] = dbus.Array(state["artist"], signature="s")
            m["mpris:length"] = dbus.Int64(state["length"])
            return m

        def position():
            p = state["position"]
            return dbus.UInt64(p) if state["positionType"] == "t" else dbus.Int64(p)

        class Player(dbus.service.Object):
            def props(self, interface):
                if state["vanishOnRead"]:
                    os._exit(0)
                if state["hangOnRead"]:
                    time.sleep(state["hangOnRead"])
                if interface == ROOT:
                    return dbus.Dictionary({"Identity": "Fake player", "DesktopEntry": "fakeplayer", "CanQuit": False,
                                            "CanRaise": False, "HasTrackList": False}, signature="sv")
                if interface == PLAYER:
                    return dbus.Dictionary({"PlaybackStatus": state["status"], "Metadata": metadata(),
                                            "Position": position(), "Rate": dbus.Double(1.0), "CanPlay": True,
                                            "CanPause": True, "CanSeek": True, "CanControl": True}, signature="sv")
                return dbus.Dictionary({}, signature="sv")

            @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
            def Get(self, interface, name):
                return self.props(interface)[name]

            @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
            def GetAll(self, interface):
                return self.props(interface)

            def changed(self):
                self.PropertiesChanged(PLAYER, dbus.Dictionary({"PlaybackStatus": state["status"], "Metadata": metadata()},
                                                               signature="sv"), dbus.Array([], signature="s"))

            @dbus.service.method(PLAYER, in_signature="s", out_signature="")
            def OpenUri(self, uri):
                print("call OpenUri %s" % uri, flush=True)
                state.update({"url": str(uri), "title": "Opened", "artist": [], "position": 0, "status": "Playing"})
                GLib.timeout_add(50, lambda: self.changed() and False)

            @dbus.service.method(PLAYER, in_signature="ox", out_signature="")
            def SetPosition(self, track, position):
                print("call SetPosition %s %d" % (track, position), flush=True)
                state["position"] = int(position)

            @dbus.service.method(PLAYER, in_signature="", out_signature="")
            def Pause(self):
                print("call Pause", flush=True)
                state["status"] = "Paused"
                self.changed()

            @dbus.service.method(PLAYER, in_signature="", out_signature="")
            def Play(self):
                print("call Play", flush=True)
                state["status"] = "Playing"
                self.changed()

            @dbus.service.signal(dbus.PROPERTIES_IFACE, signature="sa{sv}as")
            def PropertiesChanged(self, interface, changed, invalidated):
                pass

        player = Player(bus, "/org/mpris/MediaPlayer2")
        name = dbus.service.BusName(sys.argv[2], bus)

        pending = [b""]

        def apply(line):
            state.update(json.loads(line))
            player.changed()

        def command(source, condition):
            chunk = os.read(0, 1 << 20)
            if not chunk:
                os._exit(0)
            pending[0] += chunk
            while b"\n" in pending[0]:
                line, pending[0] = pending[0].split(b"\n", 1)
                apply(line)
            return True

        GLib.io_add_watch(0, GLib.IO_IN | GLib.IO_HUP, command)
        print("ready", flush=True)
        GLib.MainLoop().run()
        """#
}
