import BatonCore
import BatonTestSupport
import Foundation
import Testing

/// Python's `plistlib` is a second independent implementation: its files must read as the same values here, and
/// the files Baton writes must read in Python as the values Python itself built.
@Suite("Interop with Python's plistlib", .requires(.python3))
struct PythonInteropTests {
    static let script = Fixtures.packageRoot.appendingPathComponent("Tests/BatonCoreTests/Fixtures/plist_interop.py").path

    static let expected: [String: PropertyList] = [
        "scalars": Fixtures.scalars,
        "big_array": Fixtures.bigArray,
        "mixed": Fixtures.mixed,
        "nested_at_limit": Fixtures.nested(depth: PropertyListLimits.default.maximumDepth),
    ]

    @Test("plistlib writes, Baton reads; Baton writes, plistlib reads (binary and XML)")
    func bothWays() throws {
        let root = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let fromPython = root.appendingPathComponent("python")
        let fromBaton = root.appendingPathComponent("baton")
        try FileManager.default.createDirectory(at: fromBaton, withIntermediateDirectories: true)

        let python = try Requirement.python3.executable().path
        let written = try run(python, [Self.script, "write", fromPython.path])
        try #require(written.status == 0, "python3 could not write the fixtures: \(written.output)")

        for (name, value) in Self.expected.sorted(by: { $0.key < $1.key }) {
            for format in [PropertyListFormat.binary, .xml] {
                let file = fromPython.appendingPathComponent("\(name).\(format).plist")
                let (decoded, detected) = try PropertyList.decode(try Data(contentsOf: file))
                #expect(detected == format)
                #expect(differences(decoded, value) == [], "\(name).\(format) written by plistlib")
                // Write back what was read, for plistlib to check against its own values.
                try decoded.encoded(as: format).write(to: fromBaton.appendingPathComponent("\(name).\(format).plist"))
            }
        }

        for format in [PropertyListFormat.binary, .xml] {
            let file = fromPython.appendingPathComponent("nested_past_limit.\(format).plist")
            let error = #expect(throws: BatonCoreError.self) { try PropertyList.decode(try Data(contentsOf: file)) }
            #expect(error?.code == .tooDeep, "one level past the limit, \(format)")
        }

        let checked = try run(python, [Self.script, "check", fromBaton.path])
        #expect(checked.status == 0, "plistlib disagrees with files Baton wrote:\n\(checked.output)")
        #expect(checked.output.contains("checked 8 files, 0 mismatches"), "\(checked.output)")
    }
}
