import BatonCore

/// What one mapping has spent against its ``DBusMappingLimits``, and where in the value it is: both directions charge
/// the property-list values they read or make, the same way, so a value that maps one way fits the other way too.
/// Package-wide: the sd-bus message reader (BatonDBusMessages) charges what it reads off the wire with it, the same way
/// again, so a message it reads within the limits maps within them.
package struct MappingBudget {
    package let limits: DBusMappingLimits
    package let root: String
    /// The steps from the root to the value being mapped: pushed going down, popped coming back (after a throw it
    /// is left as it was, since the error already holds it).
    package var path: [DBusKeyPath.Component] = []
    package private(set) var values = 0
    package private(set) var bytes = 0

    package init(limits: DBusMappingLimits, root: String) {
        self.limits = limits
        self.root = root
    }

    /// An error at the current path.
    package func error(_ code: DBusValueError.Code, _ message: String) -> DBusValueError {
        DBusValueError(code, message, at: DBusKeyPath(root: root, path))
    }

    /// Charges one value and `payloadBytes` of its string or data.
    package mutating func charge(payloadBytes: Int = 0) throws(DBusValueError) {
        guard payloadBytes <= limits.maximumStringBytes else {
            throw error(.stringTooLong, "\(payloadBytes) bytes; the limit is \(limits.maximumStringBytes)")
        }
        values += 1
        bytes += 8 + payloadBytes
        guard values <= limits.maximumValues else {
            throw error(.tooManyValues, "more than \(limits.maximumValues) values in all")
        }
        guard bytes <= limits.maximumTotalBytes else {
            throw error(.tooLarge, "more than \(limits.maximumTotalBytes) bytes in all")
        }
    }

    /// Charges a dictionary key's bytes, at the key's own path.
    package mutating func chargeKey(_ key: String) throws(DBusValueError) {
        let count = key.utf8.count
        guard count <= limits.maximumStringBytes else {
            throw error(.stringTooLong, "a key of \(count) bytes; the limit is \(limits.maximumStringBytes)")
        }
        bytes += count
        guard bytes <= limits.maximumTotalBytes else {
            throw error(.tooLarge, "more than \(limits.maximumTotalBytes) bytes in all")
        }
    }

    /// Refuses a container of `count` elements before mapping any: each will be at least one value, so one over the
    /// limit costs nothing to find (a 100,000-element array is refused without reading its elements).
    package func reserve(_ count: Int) throws(DBusValueError) {
        guard count <= limits.maximumValues - values else {
            throw error(.tooManyValues, "\(count) elements, over the limit of \(limits.maximumValues) values in all")
        }
    }

    /// Refuses a value inside more than ``DBusMappingLimits/maximumDepth`` containers.
    package func checkDepth(_ depth: Int) throws(DBusValueError) {
        guard depth <= limits.maximumDepth else {
            throw error(.tooDeep, "inside more than \(limits.maximumDepth) D-Bus containers")
        }
    }

    /// Refuses a string D-Bus cannot carry or a property list should not hold: over the string limit, or with a NUL.
    package func checkString(_ text: String, _ what: String = "a string") throws(DBusValueError) {
        let count = text.utf8.count
        guard count <= limits.maximumStringBytes else {
            throw error(.stringTooLong, "\(what) of \(count) bytes; the limit is \(limits.maximumStringBytes)")
        }
        guard !text.utf8.contains(0) else {
            throw error(.invalidString, "\(what) holding a NUL, which a D-Bus string cannot")
        }
    }
}
