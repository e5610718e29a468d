/// Path text as the agent handles it, without Foundation's `NSString` path methods (the agent links
/// FoundationEssentials only: docs/ARCHITECTURE.md, "A lean agent").
enum FilePaths {
    /// `path` with empty and `.` components removed and, in an absolute path, `..` resolved in the text (no file
    /// system access, links not followed): `/run/user/1000/./baton/../baton` is `/run/user/1000/baton`. A relative
    /// path keeps its `..` (as `NSString.standardizingPath` does).
    static func standardized(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            switch part {
            case ".":
                continue
            case ".." where absolute:
                if !parts.isEmpty {
                    parts.removeLast()
                }
            default:
                parts.append(part)
            }
        }
        let joined = parts.joined(separator: "/")
        if absolute { return "/" + joined }
        return joined.isEmpty ? "." : joined
    }

    /// The folder that holds `path`: `/a/b` → `/a`, `/a` → `/`, `b` → `.`.
    static func parent(_ path: String) -> String {
        let standardized = standardized(path)
        guard let slash = standardized.lastIndex(of: "/") else { return "." }
        return slash == standardized.startIndex ? "/" : String(standardized[..<slash])
    }
}
