#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonCore

extension DBusPropertyListMapping {
    /// The containers around a value being read: all of them, for the total limit, and the arrays and structures
    /// since the last variant, which the specification limits to 32 each within one signature (a variant starts a new
    /// one). Counted from the value itself, since a structure's type is nowhere declared.
    struct Nesting {
        var total = 0
        var arrays = 0
        var structures = 0
    }

    /// D-Bus values to property lists, checking as it goes that each value is one a D-Bus message could carry: of its
    /// container's declared type, with valid strings, object paths and signatures.
    struct Reader {
        var budget: MappingBudget

        /// `expected` is the type the enclosing container declares for `value`, already checked; nil at the top and
        /// inside a variant, where the value's own declared types are checked instead.
        mutating func propertyList(_ value: DBusValue, expected: DBusType?, nesting: Nesting) throws -> PropertyList {
            if let expected, !value.isShallowly(expected) {
                throw budget.error(.typeMismatch, "a '\(value.shallowDescription)' where its container declares '\(expected)'")
            }
            switch value {
            case .byte(let number): return try integer(Int64(number))
            case .int16(let number): return try integer(Int64(number))
            case .uint16(let number): return try integer(Int64(number))
            case .int32(let number): return try integer(Int64(number))
            case .uint32(let number): return try integer(Int64(number))
            case .int64(let number): return try integer(number)
            case .uint64(let number):
                try budget.charge()
                // As the property-list decoders do: `.unsignedInteger` only above Int64.max.
                return Int64(exactly: number).map(PropertyList.integer) ?? .unsignedInteger(number)
            case .boolean(let flag):
                try budget.charge()
                return .bool(flag)
            case .double(let number):
                try budget.charge()
                return .real(number)
            case .string(let text):
                return .string(try string(text))
            case .objectPath(let text):
                let path = try string(text, "an object path")
                guard Self.isObjectPath(path) else {
                    throw budget.error(.invalidString, "\(quoted(path)) is not a D-Bus object path")
                }
                return .string(path)
            case .signature(let text):
                let signature = try string(text, "a signature")
                do {
                    _ = try DBusSignature(signature)
                } catch let error as DBusValueError {
                    throw budget.error(error.code, error.message)
                }
                return .string(signature)
            case .unixFD:
                throw budget.error(.unmappable, "a D-Bus 'h' (file descriptor) has no property-list type")
            case .bytes(let bytes):
                try budget.checkDepth(nesting.total + 1)
                try budget.charge(payloadBytes: bytes.count)
                return .data(bytes)
            case .array(let element, let elements):
                if expected == nil { try checkType(.array(element)) }
                return try array(element, elements, nesting: try entering(nesting, arrays: 1))
            case .dictionary(let keyType, let valueType, let entries):
                if expected == nil { try checkType(.dictionary(key: keyType, value: valueType)) }
                return try dictionary(keyType, valueType, entries, nesting: try entering(nesting, arrays: 1, structures: 1))
            case .structure(let fields):
                var types: [DBusType]?
                if case .structure(let declared) = expected { types = declared }
                return try structure(fields, types: types, nesting: try entering(nesting, structures: 1))
            case .variant(let inner):
                var within = try entering(nesting)
                within.arrays = 0
                within.structures = 0
                return try propertyList(inner, expected: nil, nesting: within)
            }
        }

        private mutating func integer(_ number: Int64) throws -> PropertyList {
            try budget.charge()
            return .integer(number)
        }

        /// A string's text, charged and checked.
        private mutating func string(_ text: String, _ what: String = "a string") throws -> String {
            try budget.checkString(text, what)
            try budget.charge(payloadBytes: text.utf8.count)
            return text
        }

        /// The nesting inside one more container (two for a dictionary: its array and its dict entries).
        private func entering(_ nesting: Nesting, arrays: Int = 0, structures: Int = 0) throws -> Nesting {
            var inner = nesting
            inner.total += max(1, arrays + structures)
            inner.arrays += arrays
            inner.structures += structures
            try budget.checkDepth(inner.total)
            guard inner.arrays <= DBusSignature.maximumArrayNesting, inner.structures <= DBusSignature.maximumStructureNesting else {
                throw budget.error(.tooDeep, "more than 32 arrays or 32 structures nested in one signature")
            }
            return inner
        }

        /// Refuses a declared type the specification does not allow, naming where it is.
        private func checkType(_ type: DBusType) throws {
            do {
                try type.validated()
            } catch let error as DBusValueError {
                throw budget.error(error.code, error.message)
            }
        }

        private mutating func array(_ element: DBusType, _ elements: [DBusValue], nesting: Nesting) throws -> PropertyList {
            if element == .byte {
                // An `ay` sent element by element is data all the same, charged as one value of its bytes.
                try budget.charge(payloadBytes: elements.count)
                var bytes = Data(capacity: elements.count)
                for (index, element) in elements.enumerated() {
                    guard case .byte(let byte) = element else {
                        budget.path.append(.index(index))
                        throw budget.error(.typeMismatch, "a '\(element.shallowDescription)' in an 'ay'")
                    }
                    bytes.append(byte)
                }
                return .data(bytes)
            }
            try budget.charge()
            return .array(try list(elements, types: nil, element: element, nesting: nesting))
        }

        /// The property-list values of `elements`, each of `types[i]` or else of `element` (nil: of any type).
        private mutating func list(_ elements: [DBusValue], types: [DBusType]?, element: DBusType?, nesting: Nesting) throws -> [PropertyList] {
            try budget.reserve(elements.count)
            var values: [PropertyList] = []
            values.reserveCapacity(elements.count)
            for (index, member) in elements.enumerated() {
                budget.path.append(.index(index))
                // `types` has one type a field: the structure matched its declared type's field count.
                let type = types.flatMap { index < $0.count ? $0[index] : nil } ?? element
                values.append(try propertyList(member, expected: type, nesting: nesting))
                budget.path.removeLast()
            }
            return values
        }

        private mutating func dictionary(
            _ keyType: DBusType, _ valueType: DBusType, _ entries: [DBusDictionaryEntry], nesting: Nesting
        ) throws -> PropertyList {
            guard [.string, .objectPath, .signature].contains(keyType) else {
                throw budget.error(.unmappable, "a dictionary keyed by '\(keyType)' has no property-list type (keys are strings)")
            }
            try budget.charge()
            try budget.reserve(entries.count)
            var result: [String: PropertyList] = [:]
            result.reserveCapacity(entries.count)
            for entry in entries {
                let key: String
                switch entry.key {
                case .string(let text) where keyType == .string: key = text
                case .objectPath(let text) where keyType == .objectPath && Self.isObjectPath(text): key = text
                case .signature(let text) where keyType == .signature && (try? DBusSignature(text)) != nil: key = text
                default:
                    throw budget.error(.typeMismatch, "a key '\(entry.key.shallowDescription)' that is not a valid '\(keyType)'")
                }
                budget.path.append(.key(key))
                try budget.checkString(key, "a key")
                try budget.chargeKey(key)
                guard result[key] == nil else { throw budget.error(.duplicateKey, "the key is there twice") }
                result[key] = try propertyList(entry.value, expected: valueType, nesting: nesting)
                budget.path.removeLast()
            }
            return .dictionary(result)
        }

        /// A structure: a tagged value `(sv)` if it is one, else an array of its fields.
        private mutating func structure(_ fields: [DBusValue], types: [DBusType]?, nesting: Nesting) throws -> PropertyList {
            guard !fields.isEmpty else {
                throw budget.error(.typeMismatch, "an empty structure, which D-Bus does not allow")
            }
            if fields.count == 2, case .string(let tag) = fields[0], case .variant(let payload) = fields[1],
                types == nil || types == [.string, .variant]
            {
                return try tagged(tag, payload, nesting: nesting)
            }
            try budget.charge()
            return .array(try list(fields, types: types, element: nil, nesting: nesting))
        }

        /// The property-list value a tagged structure carries.
        private mutating func tagged(_ tag: String, _ payload: DBusValue, nesting: Nesting) throws -> PropertyList {
            var within = try entering(nesting)
            within.arrays = 0
            within.structures = 0
            switch (tag, payload) {
            case (Tag.date, .double(let seconds)) where seconds.isFinite:
                try budget.charge()
                return .date(Date(timeIntervalSinceReferenceDate: seconds))
            case (Tag.url, .string(let text)):
                try budget.checkString(text, "a URL")
                try budget.charge(payloadBytes: text.utf8.count)
                guard let url = URL(string: text) else {
                    throw budget.error(.invalidTaggedValue, "\(quoted(text)) is not a URL")
                }
                return .url(url)
            case (Tag.uuid, .string(let text)):
                try budget.checkString(text, "a UUID")
                try budget.charge()
                guard let uuid = UUID(uuidString: text) else {
                    throw budget.error(.invalidTaggedValue, "\(quoted(text)) is not a UUID")
                }
                return .uuid(uuid)
            case (Tag.set, .array(let element, let members)):
                try checkType(.array(element))
                let inner = try entering(within, arrays: 1)
                try budget.charge()
                return .set(Set(try list(members, types: nil, element: element, nesting: inner)))
            case (Tag.null, _):
                try budget.charge()
                return .null
            case (Tag.date, _), (Tag.url, _), (Tag.uuid, _), (Tag.set, _):
                throw budget.error(
                    .invalidTaggedValue,
                    "a '\(tag)' holds \(Self.payloadTypes[tag] ?? "?"), not a '\(payload.shallowDescription)'"
                )
            default:
                throw budget.error(
                    .invalidTaggedValue,
                    "unknown tag \(quoted(tag)) in a structure '(sv)'; Baton's tags are \(Tag.all.joined(separator: ", "))"
                )
            }
        }

        /// What each tag's variant holds, for messages.
        private static let payloadTypes = [
            Tag.date: "a finite 'd' (seconds since 2001-01-01)", Tag.url: "an 's'", Tag.uuid: "an 's'", Tag.set: "an array",
        ]

        /// Whether `text` is an object path: `/`, or `/` then elements of `[A-Za-z0-9_]` separated by single slashes,
        /// no slash at the end.
        static func isObjectPath(_ text: String) -> Bool {
            let bytes = text.utf8
            guard bytes.first == UInt8(ascii: "/") else { return false }
            if bytes.count == 1 { return true }
            var previous = UInt8(ascii: "/")
            for byte in bytes.dropFirst() {
                switch byte {
                case UInt8(ascii: "/") where previous != UInt8(ascii: "/"): break
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "_"):
                    break
                default: return false
                }
                previous = byte
            }
            return previous != UInt8(ascii: "/")
        }
    }
}
