import BatonTestSupport
import Foundation
import Testing

/// The other side of the bridge tests (issue 28 item 1): dbus-python calling ``BridgeService`` on the bus, each case
/// checked in Python, one line each: `ok NAME`, `FAIL NAME why`, `refused NAME ERROR-NAME SECONDS`.
enum BridgePeer {
    /// Runs `cases` ("roundtrip" or "hostile") against `service` and returns Python's lines once it has exited.
    static func run(_ cases: String, against service: BridgeService, address: String, folder: URL) throws -> [String] {
        let script = folder.appendingPathComponent("bridge-peer.py")
        try Data(Self.script.utf8).write(to: script)
        let log = folder.appendingPathComponent("peer-\(cases).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let peer = Process()
        peer.executableURL = try Requirement.pythonDBus.executable()
        peer.arguments = ["-u", script.path, address, BridgeService.name, cases]
        peer.standardOutput = handle
        peer.standardError = handle
        try peer.run()
        service.serve(until: peer)
        if peer.isRunning { kill(peer.processIdentifier, SIGKILL) }
        peer.waitUntilExit()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(peer.terminationStatus == 0, "the Python peer failed: \(output.suffix(2000))")
        return output.split(separator: "\n").map(String.init)
    }

    static let script = #"""
        import os, random, sys, tempfile, time
        import dbus
        from dbus import (Array, Boolean, Byte, Dictionary, Double, Int16, Int32, Int64, ObjectPath, Signature,
                          String, Struct, UInt16, UInt32, UInt64)

        bus = dbus.bus.BusConnection(sys.argv[1])
        target = bus.get_object(sys.argv[2], "/org/baton/Test", introspect=False)

        def call(member, signature, *args):
            return target.get_dbus_method(member, "org.baton.Test")(*args, signature=signature, timeout=60)

        def same(a, b, where="value"):
            """None when a and b are the same D-Bus value, type and variant level included; else where they differ."""
            if isinstance(a, dbus.types.UnixFd) or isinstance(b, dbus.types.UnixFd):
                return None if type(a) is type(b) else "%s: %r vs %r" % (where, a, b)
            if type(a) is not type(b):
                return "%s: type %s vs %s (%r vs %r)" % (where, type(a).__name__, type(b).__name__, a, b)
            if getattr(a, "variant_level", 0) != getattr(b, "variant_level", 0):
                return "%s: variant level %d vs %d" % (where, a.variant_level, b.variant_level)
            if isinstance(a, (dbus.Array, dbus.Dictionary)) and a.signature != b.signature:
                return "%s: signature %s vs %s" % (where, a.signature, b.signature)
            if isinstance(a, dict):
                if set(a) != set(b):
                    return "%s: keys %r vs %r" % (where, sorted(a), sorted(b))
                for k, v in a.items():
                    diff = same(v, b[k], "%s[%r]" % (where, k))
                    if diff: return diff
                return None
            if isinstance(a, (list, tuple)):
                if len(a) != len(b): return "%s: %d vs %d elements" % (where, len(a), len(b))
                for i, (x, y) in enumerate(zip(a, b)):
                    diff = same(x, y, "%s[%d]" % (where, i))
                    if diff: return diff
                return None
            return None if a == b else "%s: %r vs %r" % (where, a, b)

        def check(name, got, expected):
            diff = same(got, expected)
            print(("FAIL %s %s" % (name, diff)) if diff else ("ok " + name), flush=True)

        def v(value, level=1):
            """value as received in a 'v' slot: one variant (or `level` nested)."""
            return type(value)(value, variant_level=level) if not isinstance(value, (Array, Dictionary, Struct)) else \
                type(value)(value, signature=value.signature, variant_level=level)

        def roundtrip():
            basics = (Byte(255), Boolean(True), Int16(-32768), UInt16(65535), Int32(-2**31), UInt32(2**32 - 1),
                      Int64(-2**63), UInt64(2**64 - 1), Double(-1.5e300), String("héllo ✓ 𝄞"),
                      ObjectPath("/org/baton/x_1"), Signature("a{sv}(ias)"))
            check("basic types, each at an extreme", tuple(call("Echo", "ybnqiuxtdsog", *basics)), basics)
            for sig, value in [("y", Byte(0)), ("b", Boolean(False)), ("n", Int16(32767)), ("q", UInt16(0)),
                               ("i", Int32(2**31 - 1)), ("u", UInt32(0)), ("x", Int64(2**63 - 1)), ("t", UInt64(0)),
                               ("d", Double(5e-324)), ("s", String("")), ("o", ObjectPath("/")), ("g", Signature(""))]:
                check("basic type %s alone" % sig, call("Echo", sig, value), value)

            userinfo = Dictionary({
                "n": v(Int32(7)), "deep": v(String("three variants in"), 3),
                "list": v(Array([v(Int16(1)), v(String("two")), v(Array([], signature="s"))], signature="v")),
                "bytes": v(Array([Byte(0), Byte(255)], signature="y")),
                "tagged": v(Struct((String("date"), v(Double(7.5e8))), signature="sv")),
                "map": v(Dictionary({Int32(1): Dictionary({"k": v(Boolean(True))}, signature="sv")}, signature="ia{sv}")),
            }, signature="sv")
            containers = (
                userinfo,
                Array([Array([Byte(1), Byte(2)], signature="y"), Array([], signature="y")], signature="ay"),
                Struct((Int32(-1), Array([String("a"), String("b")], signature="s"), v(Double(2.5))), signature="iasv"),
                Dictionary({Int32(1): Dictionary({"k": v(UInt64(9))}, signature="sv")}, signature="ia{sv}"),
                Array([], signature="s"),
                Array([Struct((ObjectPath("/a"), Array([Struct((Byte(1), Signature("v")), signature="yg")], signature="(yg)")),
                              signature="oa(yg)")], signature="(oa(yg))"),
                v(Struct((String("x"), v(Int64(1), 2)), signature="sv")),
                v(Dictionary({ObjectPath("/p"): Array([Int32(3)], signature="i")}, signature="oai")),
            )
            check("nested containers: a{sv} of variants 3 deep, aay, (iasv), a{ia{sv}}, empty as, a(oa(yg)), v of (sv), v of a{oai}",
                  tuple(call("Echo", "a{sv}aay(iasv)a{ia{sv}}asa(oa(yg))vv", *containers)), containers)

            check("the first argument read alone", call("First", "sas", String("one"), Array([String("x")], signature="s")), String("one"))
            with tempfile.TemporaryFile() as f:
                got = call("Echo", "h", dbus.types.UnixFd(f))
                fd = got.take()
                check("a file descriptor comes back as the same open file", Boolean(os.fstat(fd).st_ino == os.fstat(f.fileno()).st_ino), Boolean(True))
                os.close(fd)

            random_values(300)

            sent = Dictionary({
                "name": String("Ünïcode ✓"), "count": Int32(-5), "big": UInt64(2**64 - 1), "flag": Boolean(True),
                "ratio": Double(0.25), "data": Array([Byte(0), Byte(255)], signature="y"), "path": ObjectPath("/a/b"),
                "sig": Signature("a{sv}"), "list": Array([Int16(1), String("two")], signature="v"),
                "nested": Dictionary({"inner": Array([Byte(1)], signature="y")}, signature="sv"),
                "when": Struct(("date", v(Double(7.5e8))), signature="sv"),
                "link": Struct(("url", v(String("https://example.com/a?b=c"))), signature="sv"),
                "id": Struct(("uuid", v(String("0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"))), signature="sv"),
                "nothing": Struct(("null", v(String("anything"))), signature="sv"),
                "pair": Struct((Int32(1), String("x")), signature="is"),
            }, signature="sv")
            expected = Dictionary({
                "name": v(String("Ünïcode ✓")), "count": v(Int64(-5)), "big": v(UInt64(2**64 - 1)),
                "flag": v(Boolean(True)), "ratio": v(Double(0.25)), "data": v(Array([Byte(0), Byte(255)], signature="y")),
                "path": v(String("/a/b")), "sig": v(String("a{sv}")),
                "list": v(Array([v(Int64(1)), v(String("two"))], signature="v")),
                "nested": v(Dictionary({"inner": v(Array([Byte(1)], signature="y"))}, signature="sv")),
                "when": v(Struct((String("date"), v(Double(7.5e8))), signature="sv")),
                "link": v(Struct((String("url"), v(String("https://example.com/a?b=c"))), signature="sv")),
                "id": v(Struct((String("uuid"), v(String("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"))), signature="sv")),
                "nothing": v(Struct((String("null"), v(String(""))), signature="sv")),
                "pair": v(Array([v(Int64(1)), v(String("x"))], signature="v")),
            }, signature="sv")
            check("a userInfo of every type through the property-list mapping and back", call("UserInfo", "a{sv}", sent), expected)

        def random_values(count, seed=28):
            """`count` random values, nested up to 4 containers deep, each echoed and compared; one line for all."""
            R = random.Random(seed)
            texts = ["", "a", "héllo", "✓ 𝄞", "tab\there", "x" * 300, "日本語"]
            basic = {
                "y": lambda: Byte(R.randrange(256)), "b": lambda: Boolean(R.random() < 0.5),
                "n": lambda: Int16(R.randrange(-2**15, 2**15)), "q": lambda: UInt16(R.randrange(2**16)),
                "i": lambda: Int32(R.randrange(-2**31, 2**31)), "u": lambda: UInt32(R.randrange(2**32)),
                "x": lambda: Int64(R.randrange(-2**63, 2**63)), "t": lambda: UInt64(R.randrange(2**64)),
                "d": lambda: Double(R.uniform(-1e12, 1e12)), "s": lambda: String(R.choice(texts)),
                "o": lambda: ObjectPath(R.choice(["/", "/a", "/org/baton/x_1/y2"])),
                "g": lambda: Signature(R.choice(["", "i", "a{sv}", "(iav)"])),
            }

            def kind(depth):
                roll = R.random()
                if depth >= 4 or roll < 0.4: return R.choice(sorted(basic))
                if roll < 0.6: return ("a", kind(depth + 1))
                if roll < 0.75: return ("{", R.choice(sorted(basic)), kind(depth + 2))
                if roll < 0.9: return ("(", [kind(depth + 1) for _ in range(R.randrange(1, 4))])
                return "v"

            def sig(t):
                if isinstance(t, str): return t
                if t[0] == "a": return "a" + sig(t[1])
                if t[0] == "{": return "a{" + t[1] + sig(t[2]) + "}"
                return "(" + "".join(map(sig, t[1])) + ")"

            def wrapped(value, level):
                if isinstance(value, (Array, Dictionary)): return type(value)(value, signature=value.signature, variant_level=level)
                if isinstance(value, Struct): return Struct(value, signature=value.signature, variant_level=level)
                return type(value)(value, variant_level=level)

            def make(t, depth):
                if t == "v":
                    inner = make(kind(depth + 1), depth + 1)
                    return wrapped(inner, getattr(inner, "variant_level", 0) + 1)
                if isinstance(t, str): return basic[t]()
                if t[0] == "a": return Array([make(t[1], depth + 1) for _ in range(R.randrange(4))], signature=sig(t[1]))
                if t[0] == "{":
                    return Dictionary({basic[t[1]](): make(t[2], depth + 2) for _ in range(R.randrange(4))}, signature=t[1] + sig(t[2]))
                return Struct(tuple(make(f, depth + 1) for f in t[1]), signature="".join(map(sig, t[1])))

            failures = 0
            for n in range(count):
                kinds = [kind(0) for _ in range(R.randrange(1, 4))]
                values = tuple(make(t, 0) for t in kinds)
                signature = "".join(map(sig, kinds))
                got = call("Echo", signature, *values)
                diff = same(tuple(got) if len(values) > 1 else (got,), values)
                if diff:
                    failures += 1
                    print("FAIL random value %d (%s): %s" % (n, signature, diff), flush=True)
            if not failures: print("ok %d random values, nested up to 4 deep" % count, flush=True)

        def refused(name, expected, member, signature, *args):
            started = time.monotonic()
            try:
                answer = call(member, signature, *args)
                print("FAIL %s answered %r, %s was expected" % (name, answer, expected), flush=True)
            except dbus.exceptions.DBusException as error:
                seconds = time.monotonic() - started
                got = error.get_dbus_name()
                if len(error.get_dbus_message() or "") > 4096:
                    print("FAIL %s: a message of %d characters" % (name, len(error.get_dbus_message())), flush=True)
                elif got == "org.baton.Test.Error." + expected:
                    print("refused %s %s %.3f" % (name.replace(" ", "_"), got, seconds), flush=True)
                else:
                    print("FAIL %s %s: %s" % (name, got, str(error)[:300]), flush=True)

        def hostile():
            refused("an int where a userInfo goes", "dbusWrongSignature", "UserInfo", "i", Int32(5))
            refused("an a{ss} where a{sv} goes", "dbusWrongSignature", "UserInfo", "a{ss}", Dictionary({"a": "b"}, signature="ss"))
            refused("two arguments where one goes", "dbusWrongSignature", "UserInfo", "a{sv}s", Dictionary({}, signature="sv"), "x")
            refused("a 2 MiB string", "dbusStringTooLong", "UserInfo", "a{sv}", Dictionary({"big": "x" * (2 << 20)}, signature="sv"))
            refused("a 2 MiB string, raw", "dbusStringTooLong", "Echo", "s", "y" * (2 << 20))
            refused("a 2 MiB key", "dbusStringTooLong", "UserInfo", "a{sv}", Dictionary({"k" * (2 << 20): Int32(1)}, signature="sv"))
            refused("2 MiB of data", "dbusStringTooLong", "UserInfo", "a{sv}", Dictionary({"data": dbus.ByteArray(b"z" * (2 << 20))}, signature="sv"))
            refused("a 100k-element array", "dbusTooManyValues", "UserInfo", "a{sv}", Dictionary({"many": Array(range(100000), signature="u")}, signature="sv"))
            refused("a 100k-element array, raw", "dbusTooManyValues", "Echo", "au", Array(range(100000), signature="u"))
            refused("a 100k-entry dictionary", "dbusTooManyValues", "Echo", "a{uy}", Dictionary({UInt32(i): Byte(1) for i in range(100000)}, signature="uy"))
            # dbus-daemon passes 64 containers nested in all and disconnects a sender of more: the deepest it passes is
            # read (within the default limit of 64), and refused by a reader limited to 16.
            check("variants nested 62 deep in a userInfo, the deepest dbus-daemon passes, map",
                  call("UserInfo", "a{sv}", Dictionary({"deep": Int32(1, variant_level=62)}, signature="sv")),
                  Dictionary({"deep": v(Int64(1))}, signature="sv"))
            check("variants nested 64 deep come back as they are", call("Echo", "v", Int32(1, variant_level=64)), Int32(1, variant_level=64))
            refused("variants nested 20 deep, the reader limited to 16", "dbusTooDeep", "ShallowUserInfo", "a{sv}", Dictionary({"deep": Int32(1, variant_level=20)}, signature="sv"))
            with tempfile.NamedTemporaryFile(prefix="baton-hostile-fd-") as f:
                refused("an fd in a userInfo", "dbusUnmappable", "UserInfo", "a{sv}", Dictionary({"fd": dbus.types.UnixFd(f)}, signature="sv"))
            refused("a dictionary keyed by numbers in a userInfo", "dbusUnmappable", "UserInfo", "a{sv}", Dictionary({"m": Dictionary({Int32(1): "a"}, signature="is")}, signature="sv"))
            refused("an unknown tag", "dbusInvalidTaggedValue", "UserInfo", "a{sv}", Dictionary({"t": Struct(("when", v(Double(1))), signature="sv")}, signature="sv"))
            refused("a 30 MiB string", "dbusStringTooLong", "Echo", "s", "y" * (30 << 20))
            refused("30 MiB of data in a userInfo", "dbusStringTooLong", "UserInfo", "a{sv}", Dictionary({"data": dbus.ByteArray(b"z" * (30 << 20))}, signature="sv"))
            refused("a 4M-element array", "dbusTooManyValues", "Echo", "au", Array(range(4 << 20), signature="u"))
            # After all that, the service still answers.
            check("still answering", call("Echo", "s", "alive"), String("alive"))

        {"roundtrip": roundtrip, "hostile": hostile}[sys.argv[3]]()
        """#
}
