/// A note's text and the line being edited: the pure part of Notes, with no file, activity or terminal. One
/// `mutating func` per command; it says what to print and what the app should do next.
public struct NoteEditor: Sendable, Equatable {
    /// What the app does after a command, besides printing.
    public enum Action: Sendable, Equatable {
        case none
        /// Write the note to its file.
        case write
        /// Close the note and end.
        case quit
    }

    /// What a command printed and asks for.
    public struct Outcome: Sendable, Equatable {
        /// The lines to print.
        public var output: [String]
        /// What to do next.
        public var action: Action
    }

    /// The note's lines (no line ends).
    public private(set) var lines: [String]
    /// The current line, from 1; 1 in an empty note.
    public private(set) var line: Int
    /// Whether the text changed since it was read or written.
    public private(set) var isModified = false
    /// Whether the last command was a `q` refused for unwritten changes (a second `q` then quits, as in ed).
    var quitRefused = false

    /// The note `text` at `line` (kept within the note).
    public init(text: String, line: Int = 1) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        self.lines = lines
        self.line = 1
        go(to: line)
    }

    /// The note as it is written to its file: every line ends with a newline.
    public var text: String {
        lines.map { $0 + "\n" }.joined()
    }

    /// The note's title: its first line, or nil while that is empty (search and other devices show it).
    public var title: String? {
        let first = lines.first.map { String($0.drop { $0 == " " || $0 == "\t" }) } ?? ""
        return first.isEmpty ? nil : first
    }

    /// Moves to `number`, kept within the note (line 1 of an empty note).
    public mutating func go(to number: Int) {
        line = min(max(number, 1), max(lines.count, 1))
    }

    /// The text was written: nothing is unwritten any more.
    public mutating func written() {
        isModified = false
    }

    /// Performs `command`.
    public mutating func perform(_ command: NoteCommand) -> Outcome {
        let refusedBefore = quitRefused
        quitRefused = false
        switch command {
        case .go(let number):
            go(to: number)
            return Outcome(output: [current], action: .none)
        case .print:
            return Outcome(output: [current], action: .none)
        case .printAll:
            return Outcome(output: lines.enumerated().map { "\($0.offset + 1): \($0.element)" }, action: .none)
        case .append(let text):
            let index = lines.isEmpty ? 0 : line
            lines.insert(text, at: index)
            line = index + 1
            isModified = true
            return Outcome(output: [current], action: .none)
        case .change(let text):
            if lines.isEmpty { lines = [text] } else { lines[line - 1] = text }
            isModified = true
            return Outcome(output: [current], action: .none)
        case .delete:
            guard !lines.isEmpty else { return Outcome(output: ["the note is empty"], action: .none) }
            lines.remove(at: line - 1)
            go(to: line)
            isModified = true
            return Outcome(output: [lines.isEmpty ? "the note is empty" : current], action: .none)
        case .write:
            return Outcome(output: [], action: .write)
        case .quit:
            if isModified, !refusedBefore {
                quitRefused = true
                return Outcome(output: ["unwritten changes: w writes them, q again quits without them"], action: .none)
            }
            return Outcome(output: [], action: .quit)
        case .help:
            return Outcome(output: [NoteCommand.summary], action: .none)
        }
    }

    /// The current line as printed: "3: text".
    var current: String {
        lines.isEmpty ? "\(line): (empty note)" : "\(line): \(lines[line - 1])"
    }
}
