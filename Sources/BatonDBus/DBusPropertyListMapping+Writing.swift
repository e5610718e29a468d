#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonCore

extension DBusPropertyListMapping {
    /// Property lists to D-Bus values. `depth` is how many D-Bus containers are around the value being written, as
    /// the message will nest them, so the limit is the specification's.
    struct Writer {
        var budget: MappingBudget

        mutating func value(_ value: PropertyList, depth: Int) throws -> DBusValue {
            switch value {
            case .string(let text):
                try budget.checkString(text)
                try budget.charge(payloadBytes: text.utf8.count)
                return .string(text)
            case .integer(let number):
                try budget.charge()
                return .int64(number)
            case .unsignedInteger(let number):
                try budget.charge()
                return .uint64(number)
            case .real(let number):
                try budget.charge()
                return .double(number)
            case .bool(let flag):
                try budget.charge()
                return .boolean(flag)
            case .data(let bytes):
                try budget.charge(payloadBytes: bytes.count)
                return .bytes(bytes)
            case .array(let elements):
                return .array(.variant, try variants(elements, depth: depth))
            case .dictionary(let entries):
                return try dictionary(entries, depth: depth)
            case .date(let date):
                let seconds = date.timeIntervalSinceReferenceDate
                guard seconds.isFinite else {
                    throw budget.error(.invalidTaggedValue, "a date of \(seconds) seconds, which is no time")
                }
                return try tagged(Tag.date, .double(seconds), depth: depth)
            case .url(let url):
                let text = url.absoluteString
                try budget.checkString(text, "a URL")
                return try tagged(Tag.url, .string(text), depth: depth, payloadBytes: text.utf8.count)
            case .uuid(let uuid):
                return try tagged(Tag.uuid, .string(uuid.uuidString.lowercased()), depth: depth)
            case .null:
                return try tagged(Tag.null, .string(""), depth: depth)
            case .set(let members):
                // `(sv)` holding an `av`: the members are inside a structure, a variant, an array and a variant.
                try budget.checkDepth(depth + 4)
                try budget.charge()
                try budget.reserve(members.count)
                var elements: [DBusValue] = []
                elements.reserveCapacity(members.count)
                for (index, member) in members.enumerated() {
                    budget.path.append(.index(index))
                    elements.append(.variant(try self.value(member, depth: depth + 4)))
                    budget.path.removeLast()
                }
                return .structure([.string(Tag.set), .variant(.array(.variant, elements))])
            }
        }

        /// A dictionary as `a{sv}`, keys sorted: its values are inside an array, a dict entry and a variant.
        mutating func dictionary(_ entries: [String: PropertyList], depth: Int) throws -> DBusValue {
            try budget.checkDepth(depth + 3)
            try budget.charge()
            try budget.reserve(entries.count)
            var written: [DBusDictionaryEntry] = []
            written.reserveCapacity(entries.count)
            for (key, member) in entries.sorted(by: { $0.key < $1.key }) {
                budget.path.append(.key(key))
                try budget.checkString(key, "a key")
                try budget.chargeKey(key)
                written.append(DBusDictionaryEntry(.string(key), .variant(try value(member, depth: depth + 3))))
                budget.path.removeLast()
            }
            return .dictionary(key: .string, value: .variant, written)
        }

        /// An array's elements as an `av`'s: inside an array and a variant.
        private mutating func variants(_ elements: [PropertyList], depth: Int) throws -> [DBusValue] {
            try budget.checkDepth(depth + 2)
            try budget.charge()
            try budget.reserve(elements.count)
            var written: [DBusValue] = []
            written.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                budget.path.append(.index(index))
                written.append(.variant(try value(element, depth: depth + 2)))
                budget.path.removeLast()
            }
            return written
        }

        /// `(sv)` of `tag` and a basic `payload`, inside a structure and a variant.
        private mutating func tagged(_ tag: String, _ payload: DBusValue, depth: Int, payloadBytes: Int = 0) throws -> DBusValue {
            try budget.checkDepth(depth + 2)
            try budget.charge(payloadBytes: payloadBytes)
            return .structure([.string(tag), .variant(payload)])
        }
    }
}
