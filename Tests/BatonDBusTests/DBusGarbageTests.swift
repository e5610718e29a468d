import BatonCore
import BatonDBus
import Foundation
import Testing

/// Thousands of D-Bus value trees built from random bytes, most of which no message could carry (elements of the
/// wrong type, bad object paths, NULs, unknown tags, types the specification refuses): each maps to a property list or
/// is a ``DBusValueError``, never a trap, and what maps comes back the same through D-Bus (issue 28 item 1). The same
/// builder feeds the `dbus-plist` fuzzer.
@Suite struct DBusGarbageTests {
    @Test func randomTreesMapOrFailTyped() {
        let mapping = DBusPropertyListMapping()
        var mapped = 0
        var refused = 0
        var random = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let bytes = (0..<Int.random(in: 1...256, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            var builder = DBusValueBuilder(bytes)
            let value = builder.value()
            let input = bytes.map { String($0, radix: 16) }.joined(separator: " ")
            let plist: PropertyList
            do {
                plist = try mapping.propertyList(from: value)
            } catch let error as DBusValueError {
                refused += 1
                #expect(error.keyPath.map { error.message.hasPrefix("\($0): ") } ?? true, "bytes \(input)")
                continue
            } catch {
                Issue.record("untyped error \(error) from bytes \(input)")
                continue
            }
            mapped += 1
            // What mapped goes back through D-Bus as the same property list (or is too deep once written as variants).
            do {
                let again = try mapping.propertyList(from: mapping.dbusValue(plist))
                #expect(again == plist, "bytes \(input)")
            } catch let error as DBusValueError {
                #expect(error.code == .tooDeep, "\(error) from bytes \(input)")
            } catch {
                Issue.record("untyped error \(error) from bytes \(input)")
            }
        }
        // Garbage, but not all of it refused: the mapping's paths that succeed are exercised too.
        #expect(mapped > 500 && refused > 500, "\(mapped) mapped, \(refused) refused")
    }

    @Test func randomSignatures() {
        var random = SystemRandomNumberGenerator()
        let codes = Array("ybnqiuxtdsoghva(){}z".utf8)
        for _ in 0..<5000 {
            let text = String(decoding: (0..<Int.random(in: 0...40, using: &random)).map { _ in codes.randomElement(using: &random) ?? 0 }, as: UTF8.self)
            do {
                let signature = try DBusSignature(text)
                #expect(signature.description == text)
                #expect(signature.types.allSatisfy { (try? $0.validated()) != nil }, "\(text)")
            } catch {
                #expect(error is DBusValueError, "\(text)")
            }
        }
    }
}
