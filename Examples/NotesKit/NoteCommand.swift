/// One command of Notes' line editor, as typed on a line of standard input (ed's letters, so a test can drive it
/// through a pipe as a person would at a terminal).
public enum NoteCommand: Equatable, Sendable {
    /// `N`: go to line N and print it.
    case go(Int)
    /// `p`: print the current line.
    case print
    /// `,p`: print every line, numbered.
    case printAll
    /// `a TEXT`: add a line after the current one; it becomes the current line.
    case append(String)
    /// `c TEXT`: replace the current line.
    case change(String)
    /// `d`: delete the current line.
    case delete
    /// `w`: write the note to its file.
    case write
    /// `q`: close the note (twice when it has unwritten changes).
    case quit
    /// `h`: list the commands.
    case help

    /// What `h` prints.
    public static let summary =
        "commands: N (go to line N), p (print), ,p (print all), a TEXT (add after), c TEXT (change), d (delete), "
        + "w (write), q (quit)"

    /// The command on `line`, or nil when it is none.
    public init?(parsing line: String) {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        if let number = Int(trimmed.trimmingTrailingSpaces), number >= 0 {
            self = .go(number)
            return
        }
        let letter = trimmed.prefix(1)
        // The text after the letter and one space; "a" alone adds an empty line.
        let rest = trimmed.dropFirst().first == " " ? String(trimmed.dropFirst(2)) : String(trimmed.dropFirst())
        switch (letter, trimmed.trimmingTrailingSpaces) {
        case (_, ",p"): self = .printAll
        case (_, "p"): self = .print
        case (_, "d"): self = .delete
        case (_, "w"): self = .write
        case (_, "q"): self = .quit
        case (_, "h"): self = .help
        case ("a", _) where trimmed.count == 1 || trimmed.dropFirst().first == " ": self = .append(rest)
        case ("c", _) where trimmed.count == 1 || trimmed.dropFirst().first == " ": self = .change(rest)
        default: return nil
        }
    }
}

extension Substring {
    var trimmingTrailingSpaces: String {
        var text = self
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text.removeLast() }
        return String(text)
    }
}
