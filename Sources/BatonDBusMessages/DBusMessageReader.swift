import BatonCore
import BatonDBus
import CSystemd

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Reads an sd-bus message's arguments as ``DBusValue``s (issue 28 item 1), bounded while it reads: what an app sends
/// the agent over the session bus may be hostile, so the reader charges every value against ``limits`` as it goes (the
/// way ``DBusPropertyListMapping`` charges the property-list values they become, so what is read within the limits maps
/// within them) and stops at the first one over, having read no more than the limits allow: a 100,000-element array
/// is refused at element 65,537, a 2 MiB string before a `String` is made of it, variants nested 65 deep at the 65th.
///
/// Strings: sd-bus itself refuses a string, object path or signature that is not valid (a string that is not UTF-8 or
/// holds a NUL: `sd_bus_message_read_basic` checks it with its `validate_string`, and dbus-daemon checked the message
/// before), and this reader checks the UTF-8 again before making a `String`, so a message built past both is refused
/// all the same (``DBusValueError/Code/invalidString``).
///
/// File descriptors (`h`) are duplicated at once, close-on-exec, into the result's ``DBusMessageArguments/descriptors``
/// (the message closes its own with itself).
///
/// Every call must be made on the thread that owns the message's bus (sd-bus is not thread-safe).
public struct DBusMessageReader: Sendable {
    /// The bounds checked while reading.
    public var limits: DBusMappingLimits

    /// A reader within `limits`.
    public init(limits: DBusMappingLimits = .default) {
        self.limits = limits
    }

    /// All of `message`'s arguments, from the start of its body.
    /// - Parameter expecting: the signature the method takes; a message with other arguments is refused before any is
    ///   read.
    /// - Throws: ``DBusValueError``: `wrongSignature`, a limit's code (naming where: `arguments[0].photos[3]`),
    ///   `invalidString`, `invalidSignature`, or `messageFailed` when sd-bus cannot read it.
    public func arguments(
        of message: OpaquePointer,
        expecting: DBusSignature? = nil
    ) throws(DBusValueError) -> DBusMessageArguments {
        if let expecting {
            let signature = Self.signature(of: message)
            guard signature == expecting.description else {
                throw DBusValueError(
                    .wrongSignature,
                    "the arguments are \(quoted(signature.isEmpty ? "(none)" : signature)); the method takes \(quoted(expecting.description))"
                )
            }
        }
        let rewound = baton_sd_bus_message_rewind(message, 1)
        guard rewound >= 0 else { throw .sdBus("cannot go back to the message's first argument", rewound) }
        var walk = Walk(message: message, budget: MappingBudget(limits: limits, root: "arguments"))
        var values: [DBusValue] = []
        while let value = try walk.next(depth: 0, index: values.count) { values.append(value) }
        return DBusMessageArguments(values, descriptors: walk.descriptors)
    }

    /// The next argument of `message` (from where the last read stopped), and the descriptors its `h` values index; nil
    /// at the end of the body.
    /// - Throws: as ``arguments(of:expecting:)``; the message is then left partly read.
    public func nextArgument(
        of message: OpaquePointer,
        root: String = "argument"
    ) throws(DBusValueError) -> (DBusValue, DBusFileDescriptors)? {
        var walk = Walk(message: message, budget: MappingBudget(limits: limits, root: root))
        guard let value = try walk.next(depth: 0, index: nil) else { return nil }
        return (value, walk.descriptors)
    }

    /// The signature of `message`'s whole body ("" for none).
    public static func signature(of message: OpaquePointer) -> String {
        baton_sd_bus_message_get_signature(message, 1).map { String(cString: $0) } ?? ""
    }

    /// One read: the budget and the descriptors duplicated so far (closed with it if the read fails).
    private struct Walk {
        let message: OpaquePointer
        var budget: MappingBudget
        let descriptors = DBusFileDescriptors()

        init(message: OpaquePointer, budget: MappingBudget) {
            self.message = message
            self.budget = budget
        }

        /// sd-bus's refusal (a negative errno), or 0: the container ended where the signature promised a value.
        private func failure(_ what: String, _ result: Int32) -> DBusValueError {
            guard result < 0 else { return budget.error(.messageFailed, "\(what): the message ends there") }
            return .sdBus(what, result, at: DBusKeyPath(root: budget.root, budget.path))
        }

        /// The next complete value in the current container, inside `depth` containers; nil at the container's end.
        /// `index` names it in errors (nil: the value is the root itself).
        mutating func next(depth: Int, index: Int?) throws(DBusValueError) -> DBusValue? {
            var code: CChar = 0
            var contents: UnsafePointer<CChar>?
            let peeked = baton_sd_bus_message_peek_type(message, &code, &contents)
            guard peeked >= 0 else { throw failure("cannot read the next value's type", peeked) }
            guard peeked > 0 else { return nil }
            if let index { budget.path.append(.index(index)) }
            let value = try read(
                UInt8(bitPattern: code),
                contents: contents.map { String(cString: $0) } ?? "",
                depth: depth
            )
            if index != nil { budget.path.removeLast() }
            return value
        }

        private mutating func read(_ code: UInt8, contents: String, depth: Int) throws(DBusValueError) -> DBusValue {
            switch code {
            case UInt8(ascii: "y"): return .byte(try basic(code, UInt8(0)))
            case UInt8(ascii: "b"): return .boolean(try basic(code, Int32(0)) != 0)
            case UInt8(ascii: "n"): return .int16(try basic(code, Int16(0)))
            case UInt8(ascii: "q"): return .uint16(try basic(code, UInt16(0)))
            case UInt8(ascii: "i"): return .int32(try basic(code, Int32(0)))
            case UInt8(ascii: "u"): return .uint32(try basic(code, UInt32(0)))
            case UInt8(ascii: "x"): return .int64(try basic(code, Int64(0)))
            case UInt8(ascii: "t"): return .uint64(try basic(code, UInt64(0)))
            case UInt8(ascii: "d"): return .double(try basic(code, Double(0)))
            case UInt8(ascii: "s"): return .string(try string(code, "a string"))
            case UInt8(ascii: "o"): return .objectPath(try string(code, "an object path"))
            case UInt8(ascii: "g"): return .signature(try string(code, "a signature"))
            case UInt8(ascii: "h"):
                try budget.charge()
                var descriptor: Int32 = -1
                let result = baton_sd_bus_message_read_fd(message, &descriptor)
                guard result > 0 else { throw failure("cannot read a file descriptor", result) }
                return .unixFD(descriptors.append(descriptor))
            case UInt8(ascii: "a"): return try array(contents, depth: depth)
            case UInt8(ascii: "r"): return try structure(contents, depth: depth)
            case UInt8(ascii: "v"):
                try budget.checkDepth(depth + 1)
                try enter(code, contents)
                guard let inner = try next(depth: depth + 1, index: nil) else {
                    throw budget.error(.messageFailed, "an empty variant")
                }
                try exit()
                return .variant(inner)
            default:
                throw budget.error(.invalidSignature, "a value of type code \(code), which is no complete type here")
            }
        }

        private mutating func basic<Number: BitwiseCopyable>(
            _ code: UInt8,
            _ zero: Number
        ) throws(DBusValueError) -> Number {
            try budget.charge()
            var number = zero
            let result = baton_sd_bus_message_read_basic(message, CChar(bitPattern: code), &number)
            guard result > 0 else { throw failure("cannot read a '\(Character(Unicode.Scalar(code)))'", result) }
            return number
        }

        /// A string, object path or signature, charged as a value of its bytes.
        private mutating func string(_ code: UInt8, _ what: String) throws(DBusValueError) -> String {
            let read = try text(code, what)
            try budget.charge(payloadBytes: read.utf8.count)
            return read
        }

        /// The text of a string, object path or signature, not charged: its length found within the limit before
        /// anything is copied, its UTF-8 checked before a `String` is made.
        private func text(_ code: UInt8, _ what: String) throws(DBusValueError) -> String {
            var pointer: UnsafePointer<CChar>?
            let result = baton_sd_bus_message_read_basic(message, CChar(bitPattern: code), &pointer)
            guard result > 0, let pointer else { throw failure("cannot read \(what)", result) }
            let limit = budget.limits.maximumStringBytes
            let length = strnlen(pointer, limit + 1)
            guard length <= limit else {
                throw budget.error(.stringTooLong, "\(what) of more than \(limit) bytes; the limit is \(limit)")
            }
            guard let text = String(validating: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
            else {
                throw budget.error(.invalidString, "\(what) that is not UTF-8")
            }
            return text
        }

        private func enter(_ code: UInt8, _ contents: String) throws(DBusValueError) {
            let result = baton_sd_bus_message_enter_container(message, CChar(bitPattern: code), contents)
            guard result > 0 else {
                throw failure("cannot enter a '\(Character(Unicode.Scalar(code)))\(contents)'", result)
            }
        }

        private func exit() throws(DBusValueError) {
            let result = baton_sd_bus_message_exit_container(message)
            guard result >= 0 else { throw failure("cannot leave a container", result) }
        }

        /// The single complete type `signature` names (sd-bus checked it; parsed again, bounded at 255 bytes).
        private func type(_ signature: String) throws(DBusValueError) -> DBusType {
            do {
                let parsed = try DBusSignature(signature)
                if parsed.types.count == 1 { return parsed.types[0] }
            } catch let error as DBusValueError {
                throw budget.error(error.code, error.message)
            } catch {}
            throw budget.error(.invalidSignature, "\(quoted(signature)) is not a single complete type")
        }

        /// `aT`: bytes in one piece; a dictionary's entries; else each element, charged as it is read.
        private mutating func array(_ contents: String, depth: Int) throws(DBusValueError) -> DBusValue {
            if contents == "y" {
                try budget.checkDepth(depth + 1)
                var pointer: UnsafeRawPointer?
                var size = 0
                let result = baton_sd_bus_message_read_array(
                    message,
                    CChar(bitPattern: UInt8(ascii: "y")),
                    &pointer,
                    &size
                )
                guard result > 0 else { throw failure("cannot read an 'ay'", result) }
                // Charged before it is copied: over the limit, nothing is.
                try budget.charge(payloadBytes: size)
                guard size > 0, let pointer else { return .bytes(Data()) }
                return .bytes(Data(bytes: pointer, count: size))
            }
            let element: DBusType
            switch try type("a" + contents) {
            case .array(let type): element = type
            case .dictionary(let key, let value): return try dictionary(contents, key: key, value: value, depth: depth)
            default: throw budget.error(.invalidSignature, "\(quoted(contents)) is no array's element type")
            }
            try budget.checkDepth(depth + 1)
            try budget.charge()
            try enter(UInt8(ascii: "a"), contents)
            var elements: [DBusValue] = []
            while let value = try next(depth: depth + 1, index: elements.count) { elements.append(value) }
            try exit()
            return .array(element, elements)
        }

        /// `a{KV}`: two containers deep (the array, its entries), each string key charged as the mapping charges it.
        private mutating func dictionary(
            _ contents: String,
            key: DBusType,
            value: DBusType,
            depth: Int
        ) throws(DBusValueError) -> DBusValue {
            try budget.checkDepth(depth + 2)
            try budget.charge()
            try enter(UInt8(ascii: "a"), contents)
            let entry = String(contents.dropFirst().dropLast())
            var entries: [DBusDictionaryEntry] = []
            while true {
                var code: CChar = 0
                var inner: UnsafePointer<CChar>?
                let peeked = baton_sd_bus_message_peek_type(message, &code, &inner)
                guard peeked >= 0 else { throw failure("cannot read a dictionary entry", peeked) }
                guard peeked > 0 else { break }
                budget.path.append(.index(entries.count))
                try enter(UInt8(ascii: "e"), entry)
                let keyValue: DBusValue
                if key == .string || key == .objectPath || key == .signature {
                    // As the mapping charges a key: its bytes, not a value.
                    keyValue = try self.key(key)
                } else {
                    guard let read = try next(depth: depth + 2, index: nil) else {
                        throw budget.error(.messageFailed, "a dictionary entry without its key")
                    }
                    keyValue = read
                }
                if case .string(let text) = keyValue { budget.path[budget.path.count - 1] = .key(text) }
                guard let entryValue = try next(depth: depth + 2, index: nil) else {
                    throw budget.error(.messageFailed, "a dictionary entry without its value")
                }
                try exit()
                budget.path.removeLast()
                entries.append(DBusDictionaryEntry(keyValue, entryValue))
            }
            try exit()
            return .dictionary(key: key, value: value, entries)
        }

        /// A dictionary's string key (or a tag's): checked as a string, charged its bytes as the mapping charges a key.
        private mutating func key(_ type: DBusType) throws(DBusValueError) -> DBusValue {
            switch type {
            case .objectPath: return .objectPath(try charged(text(UInt8(ascii: "o"), "a key")))
            case .signature: return .signature(try charged(text(UInt8(ascii: "g"), "a key")))
            default: return .string(try charged(text(UInt8(ascii: "s"), "a key")))
            }
        }

        private mutating func charged(_ key: String) throws(DBusValueError) -> String {
            try budget.chargeKey(key)
            return key
        }

        /// `(…)`: each field; a tagged value `(sv)` charged as the mapping charges it (its tag as a key).
        private mutating func structure(_ contents: String, depth: Int) throws(DBusValueError) -> DBusValue {
            try budget.checkDepth(depth + 1)
            try enter(UInt8(ascii: "r"), contents)
            var fields: [DBusValue] = []
            if contents == "sv" {
                fields.append(try key(.string))
            } else {
                try budget.charge()
            }
            while let value = try next(depth: depth + 1, index: fields.count) { fields.append(value) }
            try exit()
            return .structure(fields)
        }
    }
}
