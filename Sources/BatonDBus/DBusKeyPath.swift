import BatonCore

/// Where a value sits inside a userInfo: a root name, then dictionary keys and array indices, printed as
/// `userInfo.photos[3].when`.
///
/// A key that is not a plain identifier is printed quoted and cut (`userInfo["a.b"]`), so a hostile 1 MB key, or one
/// holding a line break, still makes a short one-line message.
public struct DBusKeyPath: Sendable, Hashable, CustomStringConvertible {
    /// One step down into a container.
    public enum Component: Sendable, Hashable {
        /// A dictionary's value, by key.
        case key(String)
        /// An array's, set's or structure's element, by position from 0.
        case index(Int)
    }

    /// The name the path starts from, such as `userInfo`.
    public var root: String
    /// The steps from the root, outermost first.
    public var components: [Component]

    /// A path of `components` below `root`.
    public init(root: String, _ components: [Component] = []) {
        self.root = root
        self.components = components
    }

    public var description: String {
        var text = root
        for component in components {
            switch component {
            case .key(let key) where Self.isPlain(key): text += "." + key
            case .key(let key): text += "[\(quoted(key))]"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }

    /// Whether `key` prints bare: ASCII letters, digits, `_` and `-`, not starting with a digit, not too long.
    private static func isPlain(_ key: String) -> Bool {
        guard let first = key.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
            key.utf8.count <= BatonCoreError.maximumQuotedLength
        else { return false }
        return key.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }
}
