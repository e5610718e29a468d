import BatonCore

/// The key paths where two property lists differ, for readable failure messages.
func differences(_ lhs: PropertyList, _ rhs: PropertyList, path: String = "") -> [String] {
    switch (lhs, rhs) {
    case (.dictionary(let a), .dictionary(let b)):
        return Set(a.keys).union(b.keys).sorted().flatMap { key -> [String] in
            switch (a[key], b[key]) {
            case (let x?, let y?): differences(x, y, path: path + "." + key)
            case (nil, _): ["\(path).\(key): missing on the left"]
            case (_, nil): ["\(path).\(key): missing on the right"]
            }
        }
    case (.array(let a), .array(let b)) where a.count == b.count:
        return zip(a, b).enumerated().flatMap { differences($1.0, $1.1, path: path + "[\($0)]") }
    default:
        return lhs == rhs ? [] : ["\(path.isEmpty ? "top" : path): \(lhs) != \(rhs)"]
    }
}
