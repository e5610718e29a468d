import BatonCore
import BatonDBus
import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// Appends ``DBusValue``s to an sd-bus message being built (a method call, a reply, a signal), each with the signature
/// its value gives (issue 28 item 1): `.array(.string, [])` is an empty `as`, `.variant(.int64(5))` a `v` holding `x`.
///
/// A value built by hand may break the D-Bus specification; the writer refuses it with a ``DBusValueError`` rather than
/// send it: a string holding a NUL (sd-bus would cut it there) `invalidString`, a type the specification refuses
/// `invalidSignature`, an element not of its array's type `typeMismatch` (sd-bus checks each against the container's
/// signature), containers nested deeper than ``maximumDepth`` `tooDeep`. After a throw the message is half-built:
/// drop it.
///
/// Every call must be made on the thread that owns the message's bus (sd-bus is not thread-safe).
public struct DBusMessageWriter: Sendable {
    /// How many containers deep a value may go, counted as ``DBusMappingLimits/maximumDepth`` counts them: 64, as
    /// the specification allows (and deeper than sd-bus's own limit, which refuses 128 levels), so the recursion stays
    /// short.
    public var maximumDepth: Int

    /// A writer refusing values deeper than `maximumDepth`.
    public init(maximumDepth: Int = DBusMappingLimits.default.maximumDepth) {
        self.maximumDepth = maximumDepth
    }

    /// Appends `values`, in order. A ``DBusValue/unixFD(_:)`` is an index into `descriptors` (sd-bus sends a duplicate;
    /// the caller keeps its own).
    /// - Throws: ``DBusValueError``, naming the value (`arguments[1][3]`).
    public func append(
        _ values: [DBusValue],
        to message: OpaquePointer,
        descriptors: [Int32] = []
    ) throws(DBusValueError) {
        var walk = Walk(message: message, descriptors: descriptors, maximumDepth: maximumDepth)
        for (index, value) in values.enumerated() {
            walk.path.append(.index(index))
            try walk.value(value, depth: 0)
            walk.path.removeLast()
        }
    }

    private struct Walk {
        let message: OpaquePointer
        let descriptors: [Int32]
        let maximumDepth: Int
        var path: [DBusKeyPath.Component] = []

        private func error(_ code: DBusValueError.Code, _ text: String) -> DBusValueError {
            DBusValueError(code, text, at: DBusKeyPath(root: "arguments", path))
        }

        /// sd-bus's refusal: ENXIO is its "not the type the container's signature says next".
        private func check(_ result: Int32, _ what: String) throws(DBusValueError) {
            guard result < 0 else { return }
            throw .sdBus(
                what,
                result,
                at: DBusKeyPath(root: "arguments", path),
                code: result == -ENXIO ? .typeMismatch : .messageFailed
            )
        }

        private func signature(of type: DBusType) throws(DBusValueError) -> String {
            do {
                return try type.validated().signature
            } catch let failure as DBusValueError {
                throw error(failure.code, failure.message)
            } catch {
                throw self.error(.invalidSignature, "\(type) is not a valid type")
            }
        }

        mutating func value(_ value: DBusValue, depth: Int) throws(DBusValueError) {
            switch value {
            case .byte(let number): try basic("y", number)
            case .boolean(let flag): try basic("b", Int32(flag ? 1 : 0))
            case .int16(let number): try basic("n", number)
            case .uint16(let number): try basic("q", number)
            case .int32(let number): try basic("i", number)
            case .uint32(let number): try basic("u", number)
            case .int64(let number): try basic("x", number)
            case .uint64(let number): try basic("t", number)
            case .double(let number): try basic("d", number)
            case .string(let text): try string(text, "s", "a string")
            case .objectPath(let text): try string(text, "o", "an object path")
            case .signature(let text): try string(text, "g", "a signature")
            case .unixFD(let index):
                guard Int(index) < descriptors.count else {
                    throw error(.unmappable, "file descriptor \(index) of \(descriptors.count) given")
                }
                try basic("h", descriptors[Int(index)])
            case .bytes(let bytes):
                try checkDepth(depth + 1)
                let result = bytes.withUnsafeBytes { buffer in
                    // An empty Data may have no base address, and sd-bus wants a pointer even for 0 bytes.
                    withUnsafePointer(to: UInt8(0)) { placeholder in
                        let base = buffer.baseAddress ?? UnsafeRawPointer(placeholder)
                        return baton_sd_bus_message_append_array(message, code("y"), base, buffer.count)
                    }
                }
                try check(result, "cannot append an 'ay'")
            case .array(let element, let elements):
                try checkDepth(depth + 1)
                try open("a", try signature(of: element))
                for (index, member) in elements.enumerated() {
                    path.append(.index(index))
                    try self.value(member, depth: depth + 1)
                    path.removeLast()
                }
                try close()
            case .dictionary(let key, let valueType, let entries):
                try checkDepth(depth + 2)
                let whole = try signature(of: .dictionary(key: key, value: valueType))
                try open("a", String(whole.dropFirst()))
                let entry = String(whole.dropFirst(2).dropLast())
                for (index, pair) in entries.enumerated() {
                    if case .string(let text) = pair.key { path.append(.key(text)) } else { path.append(.index(index)) }
                    try open("e", entry)
                    try self.value(pair.key, depth: depth + 2)
                    try self.value(pair.value, depth: depth + 2)
                    try close()
                    path.removeLast()
                }
                try close()
            case .structure(let fields):
                guard !fields.isEmpty else {
                    throw error(.typeMismatch, "an empty structure, which D-Bus does not allow")
                }
                try checkDepth(depth + 1)
                let whole = try signature(of: value.type)
                try open("r", String(whole.dropFirst().dropLast()))
                for (index, field) in fields.enumerated() {
                    path.append(.index(index))
                    try self.value(field, depth: depth + 1)
                    path.removeLast()
                }
                try close()
            case .variant(let inner):
                try checkDepth(depth + 1)
                try open("v", try signature(of: inner.type))
                try self.value(inner, depth: depth + 1)
                try close()
            }
        }

        /// A number (or an fd, which sd-bus duplicates), as its type code says.
        private func basic<Number: BitwiseCopyable>(_ type: Character, _ number: Number) throws(DBusValueError) {
            var copy = number
            try check(baton_sd_bus_message_append_basic(message, code(type), &copy), "cannot append a '\(type)'")
        }

        private func checkDepth(_ depth: Int) throws(DBusValueError) {
            guard depth <= maximumDepth else {
                throw error(.tooDeep, "inside more than \(maximumDepth) D-Bus containers")
            }
        }

        /// A string checked for the NUL sd-bus would cut it at; sd-bus checks the rest (UTF-8, an object path's or
        /// signature's syntax) and says EINVAL.
        private func string(_ text: String, _ type: Character, _ what: String) throws(DBusValueError) {
            guard !text.utf8.contains(0) else {
                throw error(.invalidString, "\(what) holding a NUL, which D-Bus cannot carry")
            }
            let result = text.withCString { baton_sd_bus_message_append_basic(message, code(type), $0) }
            guard result != -EINVAL else {
                throw error(
                    .invalidString,
                    "\(quoted(text)) is not a valid \(what.split(separator: " ").dropFirst().joined(separator: " "))"
                )
            }
            try check(result, "cannot append \(what)")
        }

        private func open(_ type: Character, _ contents: String) throws(DBusValueError) {
            try check(
                baton_sd_bus_message_open_container(message, code(type), contents),
                "cannot open a '\(type)' of \(quoted(contents))"
            )
        }

        private func close() throws(DBusValueError) {
            try check(baton_sd_bus_message_close_container(message), "cannot close a container")
        }

        private func code(_ type: Character) -> CChar { CChar(bitPattern: type.asciiValue ?? 0) }
    }
}

/// `text` quoted for an error message, cut if long (BatonCore's quoting).
func quoted(_ text: some StringProtocol) -> String {
    BatonCoreError.quoted(text)
}
