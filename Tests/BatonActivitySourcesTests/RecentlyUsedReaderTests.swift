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
        errorCode { _ = try read(text, limits: limits) }
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

    @Test("GLib's other shapes: older dates, legacy timestamps, a title, groups, private, foreign metadata ignored")
    func shapes() throws {
        let text = Self.header + """
            <bookmark href="file:///a/b.txt" added="2009-03-04T05:06:07Z" modified="2009-03-04T06:06:07+01:00" visited="2009-03-04T05:06:07.5Z">
              <title>The &lt;b&gt; file</title>
              <info>
                <metadata owner="http://example.org/other"><mime:mime-type type="wrong/type"/></metadata>
                <metadata owner="http://freedesktop.org">
                  <mime:mime-type type="text/plain"/>
                  <bookmark:groups><bookmark:group>Editors</bookmark:group></bookmark:groups>
                  <bookmark:applications>
                    <bookmark:application name="old" exec="&apos;old %f&apos;" timestamp="1236143167" count="3"/>
                  </bookmark:applications>
                  <bookmark:private/>
                </metadata>
              </info>
            </bookmark>
            <!-- a comment --><bookmark href="https://x.example/"><![CDATA[ ignored ]]></bookmark>
            </xbel>
            """
        let entries = try Self.read(text)
        #expect(entries.count == 2)
        let entry = entries[0]
        #expect(entry.title == "The <b> file" && entry.mimeType == "text/plain" && entry.groups == ["Editors"] && entry.isPrivate)
        #expect(entry.added == Date(timeIntervalSince1970: 1_236_143_167) && entry.modified == entry.added)
        #expect(entry.visited == Date(timeIntervalSince1970: 1_236_143_167.5))
        #expect(entry.applications == [.init(name: "old", exec: "old %f", modified: Date(timeIntervalSince1970: 1_236_143_167), count: 3)])
        #expect(entry.lastUsed == entry.visited)
        #expect(entries[1].applications.isEmpty && entries[1].mimeType == nil && entries[1].lastUsed == nil)
    }

    @Test("entities are never expanded: a DOCTYPE, an entity declaration, an unknown entity are refused (billion laughs)")
    func entities() {
        let laughs = """
            <?xml version="1.0"?><!DOCTYPE xbel [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
            <xbel><bookmark href="&lol2;"/></xbel>
            """
        #expect(Self.code(laughs) == .entityRefused)
        #expect(Self.code("<!ENTITY x \"y\"><xbel/>") == .entityRefused)
        #expect(Self.code("<xbel><bookmark href=\"&lol;\"/></xbel>") == .entityRefused)
        #expect(Self.code("<xbel><bookmark href=\"a\"><title>&xxe;</title></bookmark></xbel>") == .entityRefused)
        #expect(Self.code("<xbel><!DOCTYPE x></xbel>") == .entityRefused)
    }

    @Test("malformed XML and bookmark files GLib would not write: typed errors")
    func malformed() {
        let xml = [
            "", "   ", "<xbel>", "<xbel></bookmark>", "<xbel><bookmark href=\"a\"></xbel>", "<xbel a=b/>", "<xbel a=\"1\" a=\"2\"/>",
            "<xbel/><xbel/>", "text<xbel/>", "<xbel/>text", "<xbel a=\"<\"/>", "<xbel a=\"&#0;\"/>", "<xbel a=\"&amp\"/>", "<!-- never",
            "<xbel><![CDATA[ never</xbel>", "<xbel a=\"1\"b=\"2\"/>", "<1xbel/>", "<xbel><!ELEMENT x></xbel>",
        ]
        for text in xml {
            #expect(Self.code(text) == .malformedXML, "\(text)")
        }
        #expect(Self.code([0x3C, 0x78, 0x62, 0x65, 0x6C, 0x20, 0x61, 0x3D, 0x22, 0xFF, 0x22, 0x2F, 0x3E]) == .malformedXML)
        let bookmarks = [
            "<rss/>", "<xbel><bookmark/></xbel>", "<xbel><bookmark href=\"\"/></xbel>", "<xbel><bookmark href=\"a\" added=\"yesterday\"/></xbel>",
            "<xbel><bookmark href=\"a\" added=\"2026-02-30T00:00:00Z\"/></xbel>",
            Self.header + "<bookmark href=\"a\"><info><metadata owner=\"http://freedesktop.org\"><bookmark:applications><bookmark:application name=\"x\"/></bookmark:applications></metadata></info></bookmark></xbel>",
            Self.header + "<bookmark href=\"a\"><info><metadata owner=\"http://freedesktop.org\"><bookmark:applications><bookmark:application name=\"x\" exec=\"&apos;x\"/></bookmark:applications></metadata></info></bookmark></xbel>",
            Self.header + "<bookmark href=\"a\"><info><metadata owner=\"http://freedesktop.org\"><bookmark:applications><bookmark:application name=\"x\" exec=\"x\" count=\"many\"/></bookmark:applications></metadata></info></bookmark></xbel>",
        ]
        for text in bookmarks {
            #expect(Self.code(text) == .invalidBookmark, "\(text)")
        }
    }

    static func code(_ bytes: [UInt8]) -> ActivitySourceError.Code? {
        errorCode { _ = try RecentlyUsedReader.read(bytes) }
    }

    @Test("the named limits: size, entries, depth, attribute length, attributes, text, applications")
    func limits() {
        let small = RecentlyUsedReader.Limits(
            maximumBytes: 4096, maximumEntries: 2, maximumApplicationsPerEntry: 1, maximumDepth: 4, maximumAttributeLength: 32,
            maximumAttributes: 3, maximumTextLength: 16
        )
        let application = "<bookmark:application name=\"x\" exec=\"x\"/>"
        let over = [
            "<xbel>" + String(repeating: " ", count: 4096) + "</xbel>",
            "<xbel><bookmark href=\"a\"/><bookmark href=\"b\"/><bookmark href=\"c\"/></xbel>",
            "<xbel><a><b><c><d></d></c></b></a></xbel>",
            "<xbel><bookmark href=\"" + String(repeating: "a", count: 33) + "\"/></xbel>",
            "<xbel><bookmark href=\"" + String(repeating: "&amp;", count: 33) + "\"/></xbel>",
            "<xbel a=\"1\" b=\"2\" c=\"3\" d=\"4\"/>",
            "<xbel><bookmark href=\"a\"><title>" + String(repeating: "t", count: 17) + "</title></bookmark></xbel>",
            "<xbel xmlns:bookmark=\"http://www.freedesktop.org/standards/desktop-bookmarks\"><bookmark href=\"a\"><info><metadata owner=\"http://freedesktop.org\"><bookmark:applications>\(application)\(application)</bookmark:applications></metadata></info></bookmark></xbel>",
        ]
        for text in over {
            #expect(Self.code(text, limits: small) == .tooLarge, "\(text.prefix(120))")
        }
        // A name of 300 bytes, and a deep nesting under the default limits.
        #expect(Self.code("<" + String(repeating: "n", count: 300) + "/>") == .tooLarge)
        #expect(Self.code(String(repeating: "<xbel>", count: 10_000)) == .tooLarge)
    }

    @Test("a hostile file of 8 MiB less a byte is read in bounded time; one byte more is refused before reading")
    func huge() throws {
        let entry = "<bookmark href=\"file:///s/x\" added=\"2026-11-26T14:04:26Z\"/>\n"
        var text = "<xbel>"
        while text.utf8.count + entry.utf8.count + 7 < RecentlyUsedReader.Limits.default.maximumBytes { text += entry }
        text += "</xbel>"
        let clock = ContinuousClock()
        let start = clock.now
        #expect(Self.code(text) == .tooLarge) // over the 20,000 entries
        #expect(clock.now - start < .seconds(20))
        #expect(Self.code(Array(repeating: 0x20, count: RecentlyUsedReader.Limits.default.maximumBytes + 1)) == .tooLarge)
    }

    @Test("garbage: random and mutated files never trap, and every error is typed")
    func garbage() throws {
        let real = try Array(Self.fixture("recently-used.xbel"))
        var generator = SystemRandomNumberGenerator()
        var typed = 0
        for round in 0..<2000 {
            var bytes: [UInt8]
            if round % 4 == 0 {
                bytes = (0..<Int.random(in: 0..<300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                bytes = real
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    let at = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: bytes[at] = UInt8.random(in: 0...255, using: &generator)
                    case 1: bytes.remove(at: at)
                    case 2: bytes.insert(contentsOf: Array("<>&;\"'/![".utf8).shuffled(using: &generator).prefix(2), at: at)
                    default: bytes.removeSubrange(at..<min(bytes.count, at + 40))
                    }
                    if bytes.isEmpty { break }
                }
            }
            do {
                let entries = try RecentlyUsedReader.read(bytes)
                #expect(entries.count <= 4)
            } catch is ActivitySourceError {
                typed += 1
            }
        }
        #expect(typed > 100)
    }
}
