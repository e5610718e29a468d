import Baton
import Foundation

/// A note open in Notes: a document whose activity the framework manages (B5). Opening it makes its activity
/// current with the note's URL; the current line travels in `userInfo` (``notesLineKey``); closing it invalidates the
/// activity (B4, B5). On the continuing device the library opens it through the app's `documentOpener` and then
/// calls ``restoreUserActivityState(_:)`` (B6), which moves to the line that came with it.
@MainActor
public final class NoteDocument: ActivityDocument, UserActivityDelegate {
    /// The text and the current line.
    public private(set) var editor: NoteEditor
    /// Where the document reports what happens to it (the app sets it).
    public var report: (String) -> Void = { _ in }
    /// Called after a continued activity moved the note to its line (B6).
    public var restored: ((NoteDocument) -> Void)?

    /// The note at `fileURL`, read from its file (a file that does not exist yet is a new, empty note), at `line`.
    /// - Throws: `BatonCoreError` `invalidActivityType` for an extension no document type declares; the read's error
    ///   for a file that exists and cannot be read as UTF-8 text.
    public init(fileURL: URL, line: Int = 1, application: BatonApplication = .shared) throws {
        let exists = FileManager.default.fileExists(atPath: fileURL.path)
        editor = NoteEditor(text: exists ? try String(contentsOf: fileURL, encoding: .utf8) : "", line: line)
        try super.init(fileURL: fileURL, application: application)
    }

    /// Opens the note: its activity becomes current (B5), titled by the note's first line, and eligible for search
    /// under the note's path (G1), so `baton search` finds it and continues it.
    public override func open() throws {
        try super.open()
        guard let activity = userActivity else { return }
        activity.delegate = self
        activity.title = title
        activity.isEligibleForSearch = true
        activity.persistentIdentifier = fileURL.path
        // Current again, now that it is eligible: the search index gets this state at once (G1), not a second later.
        activity.becomeCurrent()
    }

    /// What other devices and search show: the first line, else the file's name.
    var title: String {
        editor.title ?? fileURL.lastPathComponent
    }

    /// Performs `command`; when the line or the text changed, the activity's state is out of date (A6) and its title
    /// follows the first line.
    public func perform(_ command: NoteCommand) -> NoteEditor.Outcome {
        let before = editor
        let outcome = editor.perform(command)
        if editor.line != before.line || editor.lines != before.lines { changed() }
        return outcome
    }

    /// Moves to `line` (kept within the note).
    public func go(to line: Int) {
        let before = editor.line
        editor.go(to: line)
        if editor.line != before { changed() }
    }

    func changed() {
        userActivity?.title = title
        userActivity?.needsSave = true
    }

    /// Writes the note to its file (atomically), and returns how many lines it has.
    /// - Throws: the write's error.
    @discardableResult
    public func write() throws -> Int {
        try Data(editor.text.utf8).write(to: fileURL, options: .atomic)
        editor.written()
        return editor.lines.count
    }

    /// B2: `userInfo` holds the note's URL again (ActivityDocument puts it back); add the current line.
    public override func updateUserActivityState(_ activity: UserActivity) {
        super.updateUserActivityState(activity)
        activity.userInfo[notesLineKey] = .integer(Int64(editor.line))
    }

    /// B6: the note was opened for a continued activity; move to the line it came with.
    public override func restoreUserActivityState(_ activity: UserActivity) {
        if let line = activity.userInfo[notesLineKey]?.integerValue {
            go(to: Int(clamping: line))
        }
        super.restoreUserActivityState(activity)
        restored?(self)
    }

    /// A8: another device continued the note. It stays open here: a note is not a draft that must close.
    public func userActivityWasContinued(_ userActivity: UserActivity) {
        report("\(fileURL.path) was continued on another device")
    }
}
