import BatonCore

/// GLib's `g_shell_unquote`, which bookmark files need: GLib stores an application's command line as
/// `g_shell_quote(exec)` (`'gedit %u'`) and reads it back unquoted. Only undoes quoting; never runs or expands anything.
enum ShellQuoting {
    /// `text` with its shell quoting removed: `'…'` taken literally; in `"…"` a backslash escapes `" \ $ `` ` `` and
    /// a newline (dropped); outside quotes a backslash escapes any character (a backslash-newline is dropped).
    /// - Throws: ``ActivitySourceError`` `invalidBookmark` for a quote that never closes or a trailing backslash.
    static func unquote(_ text: String) throws -> String {
        var output = ""
        var scalars = text.unicodeScalars.makeIterator()
        func unfinished(_ what: String) -> ActivitySourceError {
            ActivitySourceError(.invalidBookmark, "the command line \(BatonCoreError.quoted(text)) has \(what)")
        }
        while let scalar = scalars.next() {
            switch scalar {
            case "'":
                var closed = false
                while let inner = scalars.next() {
                    if inner == "'" {
                        closed = true
                        break
                    }
                    output.unicodeScalars.append(inner)
                }
                guard closed else { throw unfinished("a ' that never closes") }
            case "\"":
                var closed = false
                while let inner = scalars.next() {
                    if inner == "\"" {
                        closed = true
                        break
                    }
                    if inner == "\\" {
                        guard let escaped = scalars.next() else { break }
                        switch escaped {
                        case "\"", "\\", "$", "`": output.unicodeScalars.append(escaped)
                        case "\n": break
                        default: output.unicodeScalars.append(contentsOf: [inner, escaped])
                        }
                        continue
                    }
                    output.unicodeScalars.append(inner)
                }
                guard closed else { throw unfinished("a \" that never closes") }
            case "\\":
                guard let escaped = scalars.next() else { throw unfinished("a backslash at its end") }
                if escaped != "\n" { output.unicodeScalars.append(escaped) }
            default:
                output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}
