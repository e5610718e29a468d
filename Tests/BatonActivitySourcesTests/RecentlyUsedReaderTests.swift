import BatonActivitySources
import Foundation
import Testing

/// GTK's recently-used.xbel (issue 27 item 2): a file real GTK wrote, GLib's quoting and dates, the refusals of
/// issue 27 item 4 (DOCTYPE, entities, depth, size) and the named limits.
@Suite("recently-used.xbel reader (issue 27 items 2, 4)")
struct RecentlyUsedReaderTests {
    /// Fixtures/recently-used.xbel: written by Gtk.RecentManager (Debian's python3-gi, GTK 3.24) running
    /// Fixtures/make-recently-used.py under xvfb-run.
    static func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)"))
    }

    static func read(_ text: String, limits: RecentlyUsedReader.Limits = .default) throws -> [RecentlyUsedEntry] {
        try RecentlyUsedReader.read(Array(text.utf8), limits: limits)
    }

    static func code(_ text: String, limits: RecentlyUsedReader.Limits = .default) -> ActivitySourceError.Code? {
        do {
            _ = try read(text, limits: limits)
            return nil
        } catch let error as ActivitySourceError {
            return error.code
        } catch {
            Issue.record("untyped error \(error)")
            return nil
        }
    }

    static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <xbel version="1.0" xmlns:bookmark="http://www.freedesktop.org/standards/desktop-bookmarks" xmlns:mime="http://www.freedesktop.org/standards/shared-mime-info">
        """

    @Test("the file GTK wrote: every document, its type, its applications with GLib's quoting undone, its dates")
    func realGTKFile() throws {
        let entries = try RecentlyUsedReader.read(Self.fixture("recently-used.xbel"))
        #expect(entries.count == 4)
        let report = entries[0]
        #expect(report.url == "file:///tmp/xbelgen/home/alex/Sync/report.odt")
        #expect(report.mimeType == "application/vnd.oasis.opendocument.text")
        #expect(report.applications.map(\.name) == ["LibreOffice Writer", "org.gnome.TextEditor"])
        // Registered as "'soffice' --writer %u"; stored g_shell_quote'd; read back as registered.
        #expect(report.applications[0].exec == "'soffice' --writer %u")
        #expect(report.applications[1].exec == "gnome-text-editor %u")
        #expect(report.applications.allSatisfy { $0.count == 1 })
        // Added second by the same GTK run, so it is the last to use the document.
        #expect(report.lastApplication?.name == "org.gnome.TextEditor")
        let added = try #require(report.added)
        #expect(abs(added.timeIntervalSinceNow) < 366 * 86_400 * 50)
        #expect(try report.activityURL().filePath == "/tmp/xbelgen/home/alex/Sync/report.odt")

        let notes = entries[1]
        #expect(notes.url == "file:///tmp/xbelgen/home/alex/Sync/Tom%20&%20Jerry's%20notes%20%C3%A9t%C3%A9.txt")
        #expect(try notes.activityURL().filePath == "/tmp/xbelgen/home/alex/Sync/Tom & Jerry's notes été.txt")
        #expect(notes.mimeType == "text/plain" && notes.applications.map(\.exec) == ["gedit %u"])
        #expect(entries[2].applications.first?.exec == "mpv --player-operation-mode=pseudo-gui -- %U")
        #expect(entries[3].url == "https://example.org/page?a=1&b=2" && entries[3].mimeType == "application/octet-stream")
    }
}
