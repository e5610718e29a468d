import BatonActivitySources
import Foundation
import Testing

/// Desktop entries and their Exec lines (issue 27 items 2, 4): Debian's own desktop files, the key-file escapes,
/// the specification's quoting, field codes expanded into argument vectors, never a shell line.
@Suite("Desktop entries and Exec lines (issue 27 items 2, 4)")
struct DesktopEntryTests {
    static func url(_ text: String) throws -> ActivityURL { try ActivityURL(text) }

    @Test("Debian's vim.desktop: name, translations, types, Terminal, %F expanded into one launch of every file")
    func vim() throws {
        let entry = try DesktopEntry(RecentlyUsedReaderTests.fixture("vim.desktop"))
        #expect(entry.type == "Application" && entry.name == "Vim" && entry.terminal && entry.icon == "gvim")
        #expect(entry.localizedNames["de"] == "Vim")
        #expect(entry.mimeTypes.contains("text/plain") && entry.mimeTypes.count == 15)
        let exec = try #require(try entry.execLine())
        #expect(exec.program == "vim" && exec.takes.documents == .many && !exec.takes.asURLs)
        let argv = try exec.commands(opening: [Self.url("file:///home/a/x%20y.txt"), Self.url("file:///home/a/z.c")])
        #expect(argv == [["vim", "/home/a/x y.txt", "/home/a/z.c"]])
        // A web page is not a local file: vim is not launched for it.
        #expect(errorCode { _ = try exec.commands(opening: [Self.url("https://example.org/")]) } == .urlRefused)
    }

    @Test("Debian's chromium.desktop: %U takes URLs")
    func chromium() throws {
        let entry = try DesktopEntry(RecentlyUsedReaderTests.fixture("chromium.desktop"))
        #expect(entry.name == "Chromium Web Browser" && !entry.terminal && entry.keyFile.groupOrder == ["Desktop Entry"])
        let argv = try #require(try entry.execLine()).commands(opening: [Self.url("https://example.org/a?b=1")])
        #expect(argv == [["/usr/bin/chromium", "https://example.org/a?b=1"]])
    }

    @Test("every desktop file installed on this machine reads, or only its Exec line is refused")
    func installed() throws {
        let folder = URL(fileURLWithPath: "/usr/share/applications")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasSuffix(".desktop") {
            let data = try Data(contentsOf: folder.appendingPathComponent(name))
            // On this machine all read (9 files, Debian's); elsewhere a file that quotes as a shell does, not as the
            // specification says, is refused: typed, and never launched.
            let result = errorCode { _ = try DesktopEntry(data).execLine() }
            #expect(result == nil || result == .invalidExec, "\(name): \(String(describing: result))")
        }
    }

    @Test("%f and %u give one launch per document; %i %c %k, %% and deprecated codes")
    func fieldCodes() throws {
        let exec = try ExecLine("app --name=%c %i --file=%f %k 100%% %d %m")
        let context = ExecLine.Context(icon: "app-icon", name: "My App", location: "/usr/share/applications/app.desktop")
        let argv = try exec.commands(opening: [Self.url("file:///a/1.txt"), Self.url("file:///a/2.txt")], context: context)
        #expect(argv == [
            ["app", "--name=My App", "--icon", "app-icon", "--file=/a/1.txt", "/usr/share/applications/app.desktop", "100%"],
            ["app", "--name=My App", "--icon", "app-icon", "--file=/a/2.txt", "/usr/share/applications/app.desktop", "100%"],
        ])
        // No icon: %i gives nothing; no document: %f gives an empty piece.
        #expect(try exec.commands(opening: []) == [["app", "--name=", "--file=", "", "100%"]])
        #expect(try ExecLine("player %u").commands(opening: [Self.url("https://a.example/x"), Self.url("file:///b")]) == [["player", "https://a.example/x"], ["player", "file:///b"]])
        #expect(try ExecLine("viewer").commands(opening: [Self.url("file:///b")]) == [["viewer"]])
    }

    @Test("shell metacharacters stay literal: quoted in the line, or in a document's name, each one argument")
    func metacharacters() throws {
        let exec = try ExecLine(#"sh -c "echo \$HOME; rm -rf / | cat > x && \`id\` \"q\" \\ 'single'" %f"#)
        let document = try Self.url("file:///tmp/a%3B%20rm%20-rf%20~%20%24(id)%60x%60.txt")
        let argv = try exec.commands(opening: [document])
        #expect(argv == [["sh", "-c", #"echo $HOME; rm -rf / | cat > x && `id` "q" \ 'single'"#, "/tmp/a; rm -rf ~ $(id)`x`.txt"]])
    }

    @Test("invalid Exec lines are refused, with the code that says so", arguments: [
        "app; rm -rf ~", "app | cat", "app $HOME", "app `id`", "app 'quoted'", "app \"never closed", #"app "\n""#,
        "app %x", "app %", "%f", "app %f %u", "app --files=%F", "app \"%f\"", "app x%U", "", "   ", "app\u{7}",
        "app > out", "app ~/x", "app *", "app a\\ b",
    ])
    func invalid(_ line: String) {
        #expect(errorCode { _ = try ExecLine(line) } == .invalidExec, "\(line)")
    }

    @Test("the key file's escapes come before the Exec quoting; lists split on ';' but not '\\;'")
    func escapes() throws {
        let text = """
            # comment
            [Desktop Entry]
            Type=Application
            Name=Two\\sWords\\tTab
            Exec=app "a\\\\\\\\b" %U
            MimeType=text/plain;x-weird\\;type;
            NoDisplay=true

            [Desktop Action new]
            Name=New
            """
        let entry = try DesktopEntry(Array(text.utf8))
        #expect(entry.name == "Two Words\tTab" && entry.noDisplay && !entry.hidden)
        #expect(entry.mimeTypes == ["text/plain", "x-weird;type"])
        // The file's `\\\\` is the Exec line's `\\`, which is one backslash inside quotes.
        #expect(try entry.execLine()?.commands(opening: []) == [["app", #"a\b"#]])
    }

    @Test("malformed desktop files and the key file's limits")
    func malformed() {
        let cases = [
            "Name=x\n[Desktop Entry]", "[Desktop Entry]\nType=Application", "[Desktop Entry]\nName=x", "[Other]\nType=Link\nName=x",
            "[Desktop Entry]\nType=A\nName=x\nName=y", "[Desktop Entry]\nType=A\nName=x\n[Desktop Entry]", "[Desktop Entry\nType=A",
            "[Desktop Entry]\nType=A\nName=x\\q", "[Desktop Entry]\nType=A\nName=x\nNoDisplay=yes", "[Desktop Entry]\nType=A\nName=x\njunk",
            "[Desktop Entry]\nType=A\nN ame=x", "[Desktop Entry]\nType=A\nName[de=x",
        ]
        for text in cases {
            #expect(errorCode { _ = try DesktopEntry(Array(text.utf8)) } == .malformedDesktopEntry, "\(text)")
        }
        #expect(errorCode { _ = try DesktopEntry([0x5B, 0xFF]) } == .malformedDesktopEntry)
        let small = KeyFile.Limits(maximumBytes: 200, maximumLineLength: 40, maximumGroups: 2, maximumKeys: 3)
        let over = [
            String(repeating: "#", count: 201), "[Desktop Entry]\nName=" + String(repeating: "x", count: 40),
            "[A]\n[B]\n[C]", "[Desktop Entry]\nA=1\nB=2\nC=3\nD=4",
        ]
        for text in over {
            #expect(errorCode { _ = try KeyFile(Array(text.utf8), limits: small) } == .tooLarge, "\(text)")
        }
    }

    @Test("desktop file ids: what a player's DesktopEntry may name")
    func ids() {
        #expect(DesktopEntry.isValidID("org.gnome.TextEditor") && DesktopEntry.isValidID("vlc") && DesktopEntry.isValidID("libreoffice-writer"))
        for bad in ["", "../../bin/sh", "a/b", ".hidden", "-x", "a b", String(repeating: "a", count: 256), "é"] {
            #expect(!DesktopEntry.isValidID(bad), "\(bad)")
        }
    }

    @Test("KDE's recent document: $HOME expanded, the display path percent-encoded, the application named")
    func kde() throws {
        let document = try KDERecentDocument(RecentlyUsedReaderTests.fixture("kde-report.odt.desktop"), home: "/home/alex")
        #expect(document.url.text == "file:///home/alex/Sync/report%20draft%20100%25.odt")
        #expect(document.url.filePath == "/home/alex/Sync/report draft 100%.odt")
        #expect(document.name == "report draft 100%.odt" && document.lastOpenedWith == "libreoffice-writer")
        let plain = "[Desktop Entry]\nType=Link\nName=p\nURL=https://example.org/x\nX-KDE-LastOpenedWith=../evil"
        let web = try KDERecentDocument(Array(plain.utf8), home: "/h")
        #expect(web.url.scheme == .https && web.lastOpenedWith == nil)
        #expect(try KDERecentDocument(Array("[Desktop Entry]\nType=Link\nName=p\nURL[$e]=${HOME}/a$$b".utf8), home: "/h").url.filePath == "/h/a$b")
    }

    @Test("KDE's recent documents that are refused: other variables, commands, other schemes, '..', not a link")
    func kdeRefused() {
        let cases: [(String, ActivitySourceError.Code)] = [
            ("URL[$e]=file://$(rm -rf ~)/x", .malformedDesktopEntry), ("URL[$e]=$USER/x", .malformedDesktopEntry),
            ("URL[$e]=$HOMEX/x", .malformedDesktopEntry), ("URL=javascript:alert(1)", .urlRefused),
            ("URL[$e]=$HOME/../../etc/passwd", .urlRefused), ("URL=smb://server/share", .urlRefused),
        ]
        for (line, code) in cases {
            let text = "[Desktop Entry]\nType=Link\nName=x\n" + line
            #expect(errorCode { _ = try KDERecentDocument(Array(text.utf8), home: "/home/a") } == code, "\(line)")
        }
        #expect(errorCode { _ = try KDERecentDocument(Array("[Desktop Entry]\nType=Application\nName=x\nURL=/a".utf8), home: "/") } == .malformedDesktopEntry)
        #expect(errorCode { _ = try KDERecentDocument(Array("[Desktop Entry]\nType=Link\nName=x".utf8), home: "/") } == .malformedDesktopEntry)
    }

    @Test("garbage: mutated desktop files, KDE entries and Exec lines never trap; every error is typed; argv starts with the program")
    func garbage() throws {
        var generator = SystemRandomNumberGenerator()
        let seeds = try ["vim.desktop", "chromium.desktop", "kde-report.odt.desktop"].map { try Array(RecentlyUsedReaderTests.fixture($0)) }
        let pieces = Array(#"%fFuUickdm"\ ;|$`'[]=#~"#.utf8) + [0x0A, 0x09, 0x20, 0x00, 0xFF]
        var read = 0
        for round in 0..<3000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...10, using: &generator) where !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[at] = pieces.randomElement(using: &generator) ?? 0
                case 1: bytes.remove(at: at)
                default: bytes.insert(pieces.randomElement(using: &generator) ?? 0, at: at)
                }
            }
            if let entry = try? DesktopEntry(bytes) { read += 1; _ = entry.name }
            _ = errorCode { _ = try KDERecentDocument(bytes, home: "/home/a") }
            let line = String(decoding: bytes.prefix(Int.random(in: 0...80, using: &generator)), as: UTF8.self)
            var exec: ExecLine?
            let code = errorCode { exec = try ExecLine(line) }
            #expect(code == nil || code == .invalidExec || code == .tooLarge)
            if let exec, let commands = try? exec.commands(opening: [Self.url("file:///a"), Self.url("https://b.example/")]) {
                #expect(!commands.isEmpty && commands.allSatisfy { $0.first == exec.program && !exec.program.isEmpty })
            }
        }
        #expect(read > 100)
    }
}
