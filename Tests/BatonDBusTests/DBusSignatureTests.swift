import BatonDBus
import Testing

/// Signatures as the D-Bus specification defines them (issue 28 item 1): what an app may send in a variant or a `g`.
@Suite struct DBusSignatureTests {
    @Test("valid signatures parse into their complete types and print back the same", arguments: [
        "", "s", "a{sv}", "(ii)", "aa{s(iv)}", "a(sv)", "ybnqiuxtdsogh", "a{oa{sv}}", "a{ya{gv}}v",
    ])
    func valid(_ text: String) throws {
        let signature = try DBusSignature(text)
        #expect(signature.description == text)
    }

    @Test func completeTypes() throws {
        #expect(try DBusSignature("sa{sv}(ix)").types == [
            .string, .dictionary(key: .string, value: .variant), .structure([.int32, .int64]),
        ])
    }

    @Test("what the specification refuses is a typed error naming the rule", arguments: [
        ("{sv}", "outside an array"),
        ("a{vs}", "basic type"),
        ("a{(i)s}", "basic type"),
        ("a{s}", "exactly a key and a value"),
        ("a{sss}", "exactly a key and a value"),
        ("()", "empty structure"),
        ("(i", "not closed"),
        ("a", "signature ended"),
        ("z", "not a D-Bus type code"),
        (")", "closes nothing"),
        ("s}", "closes nothing"),
    ])
    func invalid(_ text: String, _ rule: String) {
        let error = dbusError { _ = try DBusSignature(text) }
        #expect(error?.code == .invalidSignature)
        #expect(error?.message.contains(rule) == true, "\(String(describing: error))")
    }

    @Test func nestingLimits() throws {
        _ = try DBusSignature(String(repeating: "a", count: 32) + "s")
        #expect(dbusError { _ = try DBusSignature(String(repeating: "a", count: 33) + "s") }?.code == .invalidSignature)
        _ = try DBusSignature(String(repeating: "(", count: 32) + "s" + String(repeating: ")", count: 32))
        #expect(dbusError { _ = try DBusSignature(String(repeating: "(", count: 33) + "s" + String(repeating: ")", count: 33)) }?.code == .invalidSignature)
        // A dict entry counts as a structure, as libdbus counts it.
        let entries = String(repeating: "(", count: 32) + "a{sv}" + String(repeating: ")", count: 32)
        #expect(dbusError { _ = try DBusSignature(entries) }?.code == .invalidSignature)
    }

    @Test func lengthLimit() throws {
        _ = try DBusSignature(String(repeating: "s", count: 255))
        #expect(dbusError { _ = try DBusSignature(String(repeating: "s", count: 256)) }?.code == .signatureTooLong)
    }

    @Test func typesBuiltByHandAreValidated() throws {
        try DBusType.dictionary(key: .string, value: .variant).validated()
        #expect(dbusError { try DBusType.dictionary(key: .variant, value: .string).validated() }?.code == .invalidSignature)
        #expect(dbusError { try DBusType.structure([]).validated() }?.code == .invalidSignature)
        // A type 300 arrays deep is refused after reading 256 codes, however deep it goes.
        var deep = DBusType.string
        for _ in 0..<300 { deep = .array(deep) }
        #expect(dbusError { try deep.validated() }?.code == .signatureTooLong)
        #expect(deep.description.hasSuffix("…"))
    }
}
