import Baton
import Foundation
import NotesKit
import Testing

@Suite("Notes' line editor, without files or agents")
struct NoteEditorTests {
    @Test("commands parse as typed; anything else is not a command")
    func parsing() {
        #expect(NoteCommand(parsing: "12") == .go(12))
        #expect(NoteCommand(parsing: " 3 ") == .go(3))
        #expect(NoteCommand(parsing: "p") == .print)
        #expect(NoteCommand(parsing: ",p") == .printAll)
        #expect(NoteCommand(parsing: "a Buy milk") == .append("Buy milk"))
        #expect(NoteCommand(parsing: "a") == .append(""))
        #expect(NoteCommand(parsing: "c  two spaces") == .change(" two spaces"))
        #expect(NoteCommand(parsing: "d") == .delete)
        #expect(NoteCommand(parsing: "w") == .write)
        #expect(NoteCommand(parsing: "q\r") == .quit)
        for nonsense in ["", "x", "-1", "ab", "pp", "quit"] { #expect(NoteCommand(parsing: nonsense) == nil, "\(nonsense)") }
    }

    @Test("moving keeps within the note; the title is the first line")
    func moving() {
        var editor = NoteEditor(text: "Groceries\nmilk\neggs\n", line: 9)
        #expect(editor.lines == ["Groceries", "milk", "eggs"] && editor.line == 3)
        #expect(editor.title == "Groceries")
        #expect(editor.perform(.go(0)).output == ["1: Groceries"])
        #expect(editor.perform(.go(2)).output == ["2: milk"])
        #expect(!editor.isModified)
        let empty = NoteEditor(text: "", line: 5)
        #expect(empty.line == 1 && empty.title == nil && empty.text == "")
    }

    @Test("editing marks the note modified; a first q is refused then, a second quits (as ed)")
    func editing() {
        var editor = NoteEditor(text: "one\ntwo\n", line: 1)
        #expect(editor.perform(.append("one and a half")).output == ["2: one and a half"])
        #expect(editor.perform(.change("1.5")).output == ["2: 1.5"])
        #expect(editor.text == "one\n1.5\ntwo\n" && editor.isModified)
        #expect(editor.perform(.delete).output == ["2: two"])
        #expect(editor.perform(.quit).action == .none, "unwritten changes: refused once")
        #expect(editor.perform(.quit).action == .quit)
        #expect(editor.perform(.write).action == .write)
        editor.written()
        #expect(editor.perform(.quit).action == .quit, "nothing unwritten: at once")
        var empty = NoteEditor(text: "")
        #expect(empty.perform(.append("first")).output == ["1: first"])
        #expect(empty.title == "first")
    }

    @Test("Examples/Notes.app declares the document types NotesKit uses, all one activity type (B5)")
    @MainActor
    func bundleDeclaresTheTypes() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        let application = BatonApplication()
        try application.loadDocumentTypes(fromInfoPlistAt: root.appendingPathComponent("Examples/Notes.app/Info.plist"))
        #expect(application.documentActivityTypes == notesDocumentActivityTypes)
        #expect(Set(notesDocumentActivityTypes.values) == [notesActivityType])
    }
}
