import BatonCore

/// A desktop entry's `Exec` value parsed by the Desktop Entry Specification's rules (1.5, "The Exec key"), and its
/// field codes expanded into argument vectors for `posix_spawn` (issue 27 item 2): never a shell command line, so
/// `;`, `|`, `$(…)` or a backtick in a quoted argument or a document's name stay one literal argument.
///
/// Strict where the specification is: an argument holding a reserved character (space, tab, newline, `"`, `'`, `\`,
/// `>`, `<`, `~`, `|`, `&`, `;`, `$`, `*`, `?`, `#`, `(`, `)`, `` ` ``) must be double-quoted; inside quotes a backslash
/// may only escape `"`, `` ` ``, `$` or `\`. A line that breaks a rule is refused, nothing is guessed: GLib reads such
/// lines with a shell's rules (single quotes too), so a few real desktop files run under GNOME and not here.
public struct ExecLine: Sendable, Hashable {
    /// The longest `Exec` value taken, in bytes: real ones are under 200; a wrapper script's line under 1 KiB.
    public static let maximumLength = 4096
    /// The most arguments one line may have, before expansion.
    public static let maximumArguments = 256
    /// The most documents given to one launch: a `%F`/`%U` application gets them all in one argument vector.
    public static let maximumDocuments = 256

    /// One piece of an argument.
    enum Piece: Sendable, Hashable {
        case text(String)
        /// `%f %F %u %U %i %c %k`.
        case code(Character)
    }

    /// The arguments, each a sequence of pieces, in order; the first is the program (text only).
    let arguments: [[Piece]]

    /// The program the line runs (its first argument): a name looked up in `PATH` or an absolute path.
    public var program: String {
        arguments.first.map { $0.map { if case .text(let text) = $0 { text } else { "" } }.joined() } ?? ""
    }

    /// Which documents the application takes: none, one per launch (`%f`, `%u`) or all in one launch (`%F`, `%U`), as
    /// local paths (`%f`, `%F`) or URLs (`%u`, `%U`).
    public var takes: (documents: Documents, asURLs: Bool) {
        for argument in arguments {
            for case .code(let code) in argument {
                switch code {
                case "f": return (.one, false)
                case "F": return (.many, false)
                case "u": return (.one, true)
                case "U": return (.many, true)
                default: continue
                }
            }
        }
        return (.none, false)
    }

    /// How many documents one launch takes.
    public enum Documents: Sendable, Hashable { case none, one, many }

    /// What `%i`, `%c` and `%k` expand to.
    public struct Context: Sendable, Hashable {
        /// The entry's `Icon` (`%i` gives `--icon ICON`, or nothing without one).
        public var icon: String?
        /// The entry's translated `Name` (`%c`).
        public var name: String
        /// Where the desktop file is, as a path or URL (`%k`).
        public var location: String

        public init(icon: String? = nil, name: String = "", location: String = "") {
            self.icon = icon
            self.name = name
            self.location = location
        }
    }

    /// Parses an `Exec` value (the key file's escapes already undone, as ``DesktopEntry/exec`` holds it).
    /// - Throws: ``ActivitySourceError`` `invalidExec` naming what is wrong: an unquoted reserved character, a quote
    ///   that never closes, a bad escape, an unknown field code, a field code inside quotes or in the program, `%F` or
    ///   `%U` or `%i` not standing alone, more than one of `%f %F %u %U`; `tooLarge` over the named limits.
    public init(_ exec: String) throws {
        guard exec.utf8.count <= Self.maximumLength else {
            throw ActivitySourceError(.tooLarge, "an Exec line of \(Clipping.grouped(exec.utf8.count)) bytes, more than \(Self.maximumLength)")
        }
        func invalid(_ what: String) -> ActivitySourceError {
            ActivitySourceError(.invalidExec, "the Exec line \(BatonCoreError.quoted(exec)) \(what); nothing is launched from it")
        }
        var arguments: [[Piece]] = []
        var pieces: [Piece] = []
        var text = ""
        var inArgument = false
        var quoted = false
        var dropped = false
        var fileCodes = 0
        func flushText() {
            if !text.isEmpty { pieces.append(.text(text)) }
            text = ""
        }
        func endArgument() throws {
            flushText()
            if inArgument, !(dropped && pieces.isEmpty) {
                guard arguments.count < Self.maximumArguments else {
                    throw ActivitySourceError(.tooLarge, "an Exec line of more than \(Self.maximumArguments) arguments")
                }
                arguments.append(pieces)
            }
            pieces = []
            inArgument = false
            dropped = false
        }
        var characters = exec.makeIterator()
        while let character = characters.next() {
            if quoted {
                switch character {
                case "\"":
                    quoted = false
                case "\\":
                    guard let escaped = characters.next(), "\"`$\\".contains(escaped) else {
                        throw invalid("escapes with a backslash something other than \", `, $ or \\ inside quotes")
                    }
                    text.append(escaped)
                case "%":
                    guard characters.next() == "%" else { throw invalid("has a field code inside quotes, where its meaning is undefined") }
                    text.append("%")
                default:
                    text.append(character)
                }
                continue
            }
            switch character {
            case " ", "\t":
                try endArgument()
            case "\"":
                quoted = true
                inArgument = true
            case "%":
                inArgument = true
                guard let code = characters.next() else { throw invalid("ends with a lone %") }
                switch code {
                case "%":
                    text.append("%")
                case "f", "F", "u", "U", "i", "c", "k":
                    flushText()
                    pieces.append(.code(code))
                    if "fFuU".contains(code) { fileCodes += 1 }
                case "d", "D", "n", "N", "v", "m":
                    // Deprecated: removed (and an argument of nothing else with it).
                    dropped = true
                default:
                    throw invalid("has the unknown field code %\(code)")
                }
            case "\n", "'", "\\", ">", "<", "~", "|", "&", ";", "$", "*", "?", "#", "(", ")", "`":
                throw invalid("has \(BatonCoreError.quoted(String(character))) outside quotes, where the specification reserves it")
            default:
                guard character.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
                    throw invalid("holds a control character")
                }
                inArgument = true
                text.append(character)
            }
        }
        guard !quoted else { throw invalid("has a \" that never closes") }
        try endArgument()
        guard let first = arguments.first, !first.isEmpty, first.allSatisfy({ if case .text = $0 { true } else { false } }) else {
            throw invalid("names no program (or a field code as the program)")
        }
        guard fileCodes <= 1 else { throw invalid("has more than one of %f, %F, %u and %U") }
        for argument in arguments where argument.count > 1 {
            for case .code(let code) in argument where "FUi".contains(code) {
                throw invalid("has %\(code) inside a longer argument, where it must stand alone")
            }
        }
        self.arguments = arguments
    }

    /// The argument vectors that open `documents`: one launch per document for `%f`/`%u`, one for all with `%F`/`%U`
    /// (or one with none of them given), one without them when the line takes no document.
    /// - Throws: ``ActivitySourceError`` `urlRefused` when the line takes local files (`%f`, `%F`) and a document is
    ///   not a `file:` URL; `tooLarge` for more than ``maximumDocuments`` documents.
    public func commands(opening documents: [ActivityURL], context: Context = Context()) throws -> [[String]] {
        guard documents.count <= Self.maximumDocuments else {
            throw ActivitySourceError(.tooLarge, "\(documents.count) documents at once, more than \(Self.maximumDocuments)")
        }
        let (taking, asURLs) = takes
        let values: [String] = try documents.map { document in
            if asURLs { return document.text }
            guard let path = document.filePath else {
                throw ActivitySourceError(.urlRefused, "\(program) opens local files only (%f or %F), and \(document.text.clipped(toBytes: 128)) is not one")
            }
            return path
        }
        switch taking {
        case .none, .many: return [expand(with: values, context: context)]
        case .one: return values.isEmpty ? [expand(with: [], context: context)] : values.map { expand(with: [$0], context: context) }
        }
    }

    /// One argument vector, each `%f %u` given `documents.first`, each `%F %U` all of them.
    private func expand(with documents: [String], context: Context) -> [String] {
        var argv: [String] = []
        for argument in arguments {
            if argument.count == 1, case .code(let code) = argument[0] {
                switch code {
                case "F", "U": argv += documents
                case "f", "u": argv += documents.prefix(1)
                case "i": if let icon = context.icon, !icon.isEmpty { argv += ["--icon", icon] }
                case "c": argv.append(context.name)
                default: argv.append(context.location)
                }
                continue
            }
            var text = ""
            for piece in argument {
                switch piece {
                case .text(let literal): text += literal
                case .code("f"), .code("u"): text += documents.first ?? ""
                case .code("c"): text += context.name
                case .code("k"): text += context.location
                case .code: break
                }
            }
            argv.append(text)
        }
        return argv
    }
}
