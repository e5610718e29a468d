// libFuzzer entry point for the mapping between D-Bus values and property lists (issue 28 item 1): what an app in any
// language sends the agent as a userInfo (`a{sv}`), and D-Bus signatures.
//
// The input is read as a D-Bus value tree by DBusValueBuilder (Tests/BatonDBusTests/DBusValueBuilder.swift, which the
// garbage test shares), mapped to a property list and back. Compiled together with BatonCore's and BatonDBus' sources
// into one module by scripts/fuzz.sh dbus-plist (not part of the package build: a fuzzer has no `main`). A trap, a
// sanitizer report, an untyped error, an error whose message does not start with its key path, a property list over
// the limits, one that does not come back the same through D-Bus, or a description over its length stops the fuzzer
// with the input saved.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func dbusPlistFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: bytes, count: count))
    // Limits far below the defaults, the same code with other numbers: a tree that maps whole at the defaults (65,536
    // values, three times over) takes seconds under AddressSanitizer, and the fuzzer would spend its time there rather
    // than on shapes. The defaults themselves are DBusMappingLimitsTests' (1 MiB strings, 100,000 elements, deep variants).
    let mapping = DBusPropertyListMapping(limits: DBusMappingLimits(maximumValues: 4096, maximumStringBytes: 4096, maximumTotalBytes: 64 << 10))
    var builder = DBusValueBuilder(input)
    let value = builder.value()
    if let plist = mapped({ try mapping.propertyList(from: value) }) {
        checkLimits(plist, mapping.limits)
        // What mapped is written back (unless too deep once its arrays hold variants, or a URL grew by its percent
        // escapes) and reads as the same property list.
        let allowed: [DBusValueError.Code] = plist.holdsURL ? [.tooDeep, .tooLarge, .stringTooLong] : [.tooDeep]
        if let written = mapped({ try mapping.dbusValue(plist) }, allowing: allowed) {
            guard let again = mapped({ try mapping.propertyList(from: written) }, allowing: []) else {
                preconditionFailure("what Baton wrote does not read back: \(plist)")
            }
            precondition(again == plist, "round trip changed \(plist) into \(again)")
        }
    }
    // The same tree as a userInfo's value: errors name a path under userInfo.k.
    let userInfo = DBusValue.dictionary(key: .string, value: .variant, [DBusDictionaryEntry(.string("k"), .variant(value))])
    if let entries = mapped({ try mapping.userInfo(from: userInfo) }) {
        precondition(entries.count == 1 && entries["k"] != nil, "a userInfo of one key mapped to \(entries.count)")
    }
    // Its GVariant text, for logs, is short whatever the tree.
    precondition(value.description.utf8.count <= DBusValue.maximumDescriptionLength + 3, "a description over its limit")
    // The bytes as a signature.
    let text = String(decoding: input.prefix(300), as: UTF8.self)
    if let signature = try? DBusSignature(text) {
        precondition(signature.description == text, "signature \(text) printed as \(signature)")
    }
    return 0
}

/// The result of `body`, or nil after a typed error that names its key path first (and, when `allowed` is given, has
/// one of those codes).
private func mapped<T>(_ body: () throws -> T, allowing allowed: [DBusValueError.Code]? = nil) -> T? {
    do {
        return try body()
    } catch let error as DBusValueError {
        if let path = error.keyPath {
            precondition(error.message.hasPrefix("\(path): "), "an error that does not start with its path: \(error)")
        }
        if let allowed { precondition(allowed.contains(error.code), "unexpected \(error)") }
        return nil
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
}

/// A mapped property list is within the limits: values, depth (a property-list level is at least one D-Bus
/// container), each string's and the whole value's bytes.
private func checkLimits(_ plist: PropertyList, _ limits: DBusMappingLimits) {
    precondition(plist.nodeCount <= limits.maximumValues, "\(plist.nodeCount) values mapped")
    precondition(plist.nestingDepth <= limits.maximumDepth, "nested \(plist.nestingDepth) deep")
    precondition(plist.payloadBytes(limit: limits.maximumStringBytes) <= limits.maximumTotalBytes, "over the byte limit")
}

extension PropertyList {
    /// The bytes of its strings, keys and data (each checked against `limit`), as the mapping counts them.
    fileprivate func payloadBytes(limit: Int) -> Int {
        func checked(_ count: Int) -> Int {
            precondition(count <= limit, "a string or data of \(count) bytes mapped")
            return count
        }
        switch self {
        case .string(let text): return checked(text.utf8.count)
        case .data(let bytes): return checked(bytes.count)
        case .array(let elements): return elements.reduce(0) { $0 + $1.payloadBytes(limit: limit) }
        case .set(let members): return members.reduce(0) { $0 + $1.payloadBytes(limit: limit) }
        case .dictionary(let entries):
            return entries.reduce(0) { $0 + checked($1.key.utf8.count) + $1.value.payloadBytes(limit: limit) }
        default: return 0
        }
    }

    /// Whether a URL is anywhere in it.
    fileprivate var holdsURL: Bool {
        switch self {
        case .url: true
        case .array(let elements): elements.contains { $0.holdsURL }
        case .set(let members): members.contains { $0.holdsURL }
        case .dictionary(let entries): entries.values.contains { $0.holdsURL }
        default: false
        }
    }
}
