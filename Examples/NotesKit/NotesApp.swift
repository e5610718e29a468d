import Baton
import Foundation

/// Notes, the app: at most one open note, the commands typed at it, and continuations (C5, B6). The `notes`
/// executable feeds it lines of standard input and ends when ``handle(_:)`` says so.
@MainActor
public final class NotesApp: BatonApplicationDelegate {
    /// The application object Notes runs on.
    public let application: BatonApplication
    /// The open note, if any.
    public private(set) var document: NoteDocument?
    /// Where the app reports what happens (status lines a person reads and a test waits for).
    public let report: (String) -> Void

    /// Notes on `application`: its delegate, and the opener of continued notes (B6).
    public init(application: BatonApplication = .shared, report: @escaping (String) -> Void) {
        self.application = application
        self.report = report
        if application.documentActivityTypes.isEmpty { application.documentActivityTypes = notesDocumentActivityTypes }
        application.delegate = self
        application.documentOpener = { [weak self] url in self?.openContinued(url) }
    }

    /// Opens the note at `path` at `line` (B5: its activity becomes current), closing the one open before, and says
    /// so: "opened PATH at line N".
    /// - Throws: what ``NoteDocument/init(fileURL:line:application:)`` and ``NoteDocument/open()`` throw.
    public func open(_ path: String, line: Int = 1) throws {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let note = try NoteDocument(fileURL: url, line: line, application: application)
        show(note)
        try note.open()
        report("opened \(url.path) at line \(note.editor.line)")
    }

    /// B6: the library asks for the note of a continued activity, then restores it (which moves it to its line, and
    /// says "opened PATH at line N" from ``NoteDocument/restored``). The note is opened first, so it is current here
    /// as on the first device (B5). A note that is not here (a file outside every synced folder arrives with the
    /// other device's path, C9) is reported, not opened as a new empty one.
    func openContinued(_ url: URL) -> ActivityDocument? {
        guard url.isFileURL else {
            report("cannot open \(url): not a file")
            return nil
        }
        guard FileManager.default.fileExists(atPath: url.path) else {
            report("cannot open \(url.path): no such file here (C9: not in a folder synced here, or not synced yet)")
            return nil
        }
        do {
            let note = try NoteDocument(fileURL: url, application: application)
            show(note)
            try note.open()
            note.restored = { [weak self] note in
                self?.report("opened \(note.fileURL.path) at line \(note.editor.line)")
            }
            return note
        } catch {
            report("cannot open \(url.path): \(error)")
            return nil
        }
    }

    func show(_ note: NoteDocument) {
        close()
        note.report = report
        document = note
    }

    /// Closes the open note: its activity is invalidated, so other devices stop offering it (B4, B5).
    public func close() {
        guard let note = document else { return }
        document = nil
        note.close()
        let unwritten = note.editor.isModified ? " (its unwritten changes are lost)" : ""
        report("closed \(note.fileURL.path)\(unwritten)")
    }

    /// Performs one line of input; returns false when the app should end (`q`).
    public func handle(_ line: String) -> Bool {
        guard let command = NoteCommand(parsing: line) else {
            report("? \(line): \(NoteCommand.summary)")
            return true
        }
        guard let note = document else {
            if command == .quit { return false }
            report("no note is open (notes PATH opens one; a continued note opens itself)")
            return true
        }
        let outcome = note.perform(command)
        for output in outcome.output { report(output) }
        switch outcome.action {
        case .none:
            return true
        case .write:
            do {
                let count = try note.write()
                report("wrote \(count) lines to \(note.fileURL.path)")
            } catch {
                report("cannot write \(note.fileURL.path): \(error)")
            }
            return true
        case .quit:
            close()
            return false
        }
    }

    // MARK: Continuations (C5, B6)

    /// C5: a continuation starts; the note is on its way.
    public func application(
        _ application: BatonApplication,
        willContinueUserActivityWithType userActivityType: String
    ) -> Bool {
        report("will continue \(userActivityType)")
        return true
    }

    /// Notes does not handle the activity itself: the library opens the note (``openContinued(_:)``) and restores it
    /// (B6). Returning false here is what sends it there. A note whose file is on the other device, outside every
    /// folder synced with this one (C9, issue 25 item 2), is refused here: the same path on this device is some other
    /// file, which Notes never reads, titles, advertises or saves for search.
    public func application(
        _ application: BatonApplication,
        continue userActivity: UserActivity,
        restorationHandler: @escaping @MainActor ([UserActivityResponder]) -> Void
    ) -> Bool {
        guard case .url(let url) = userActivity.userInfo[NSUserActivityDocumentURLKey], userActivity.isForeignFileURL(url) else {
            return false
        }
        let path = String(url.path(percentEncoded: false).prefix(256))
        report(
            "cannot open the note \(path): it is on the device it came from, not in a folder synced here; "
                + "add its folder on both devices with `baton folders add ID PATH` (C9)"
        )
        return true
    }

    /// C5, C8: the continuation failed; says why.
    public func application(
        _ application: BatonApplication,
        didFailToContinueUserActivityWithType userActivityType: String,
        error: Error
    ) {
        report("failed to continue \(userActivityType): \(error)")
    }
}
