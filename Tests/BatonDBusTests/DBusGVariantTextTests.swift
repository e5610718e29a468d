import BatonCore
import BatonDBus
import BatonTestSupport
import Foundation
import Testing

/// What Baton writes for each row of docs/PROTOCOL.md §10, read by GLib itself (`GLib.Variant.parse` of its GVariant
/// text), is the value a PyGObject app builds from the table (issue 28 items 1 and 5): the same type, the same value.
@Suite(.requires(.pythonDBus))
struct DBusGVariantTextTests {
    static let when = Date(timeIntervalSinceReferenceDate: 786_000_000.123_456_7)

    /// A property list and the Python expression an app writes for it, by the table.
    static let rows: [(PropertyList, String)] = [
        (.string("Crème brûlée, l'été\n"), #"GLib.Variant('s', "Crème brûlée, l'été\n")"#),
        (.integer(-5), "GLib.Variant('x', -5)"),
        (.unsignedInteger(.max), "GLib.Variant('t', 2**64 - 1)"),
        (.real(0.1), "GLib.Variant('d', 0.1)"),
        (.real(-1e300), "GLib.Variant('d', -1e300)"),
        (.bool(true), "GLib.Variant('b', True)"),
        (.data(Data([0, 1, 255])), "GLib.Variant('ay', bytes([0, 1, 255]))"),
        (.array([]), "GLib.Variant('av', [])"),
        (.array(["a", 2]), "GLib.Variant('av', [GLib.Variant('s', 'a'), GLib.Variant('x', 2)])"),
        (.dictionary([:]), "GLib.Variant('a{sv}', {})"),
        (.dictionary(["b": 1, "a": ["x"]]), "GLib.Variant('a{sv}', {'a': GLib.Variant('av', [GLib.Variant('s', 'x')]), 'b': GLib.Variant('x', 1)})"),
        (.date(when), "tagged('date', GLib.Variant('d', 786000000.1234567))"),
        (.url(URL(string: "https://example.com/r/42?s=3#top")!), "tagged('url', GLib.Variant('s', 'https://example.com/r/42?s=3#top'))"),
        (.uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!), "tagged('uuid', GLib.Variant('s', 'e621e1f8-c36c-495a-93fc-0c247a3e6e5f'))"),
        (.set(["apple"]), "tagged('set', GLib.Variant('av', [GLib.Variant('s', 'apple')]))"),
        (.null, "tagged('null', GLib.Variant('s', ''))"),
        // docs/PROTOCOL.md §10's example, as its Python writes it (at 2025-11-26T18:00:00Z).
        (
            ["recipe": "Tarte Tatin", "step": 3, "scroll": 0.5, "opened": .date(Date(timeIntervalSinceReferenceDate: 785_872_800)), "tags": .set(["apple"])],
            """
            GLib.Variant('a{sv}', {'opened': tagged('date', GLib.Variant('d', 1764180000 - 978307200)), \
            'recipe': GLib.Variant('s', 'Tarte Tatin'), 'scroll': GLib.Variant('d', 0.5), 'step': GLib.Variant('x', 3), \
            'tags': tagged('set', GLib.Variant('av', [GLib.Variant('s', 'apple')]))})
            """
        ),
    ]

    static let script = #"""
        import json, sys
        from gi.repository import GLib

        def tagged(tag, variant):
            return GLib.Variant('(sv)', (tag, variant))

        failures = []
        for expression, text in json.load(open(sys.argv[1])):
            app = eval(expression)
            baton = GLib.Variant.parse(None, text, None, None)
            if baton.get_type_string() != app.get_type_string() or not baton.equal(app):
                failures.append(f"{expression}: Baton wrote {baton.print_(True)} ({baton.get_type_string()}), the app {app.print_(True)}")
        print("\n".join(failures) or "same")
        """#

    @Test func glibReadsWhatAnAppWrites() throws {
        let mapping = DBusPropertyListMapping()
        // Each value as the variant of a userInfo holds it, so GLib reads the type Baton gave it.
        let pairs = try Self.rows.map { value, expression in
            ["GLib.Variant('v', \(expression))", DBusValue.variant(try mapping.dbusValue(value)).description]
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("dbus-gvariant-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try JSONSerialization.data(withJSONObject: pairs).write(to: file)
        let python = try Requirement.pythonDBus.executable()
        let result = try DesktopFixtures.run(python, ["-c", Self.script, file.path])
        #expect(result.status == 0 && result.output == "same", "\(result.output)")
    }

    @Test func hostileValuesDescribeShortly() {
        var deep = DBusValue.string("bottom")
        for _ in 0..<10_000 { deep = .variant(deep) }
        #expect(deep.description.hasSuffix("…"))
        #expect(deep.description.utf8.count < 200)
        let long = DBusValue.array(.string, Array(repeating: .string(String(repeating: "x", count: 1000)), count: 1000))
        #expect(long.description.utf8.count == DBusValue.maximumDescriptionLength + 3)
        // A 255-code type and long numbers past the limit are cut too (the dbus-plist fuzzer's first find).
        let types = DBusValue.array(.variant, Array(repeating: .variant(.uint32(.max)), count: 100_000))
        #expect(types.description.utf8.count == DBusValue.maximumDescriptionLength + 3)
        #expect(DBusValue.string("a\u{202E}b\n").description == #"'a\u202eb\u000a'"#)
    }
}
