import BatonCore
import BatonProtocol
import Foundation
import Testing

/// C9: `file:` URLs in synced folders, from one device's path to the travel form to the other device's path; the
/// pure mapping, without files (the agents' part is in the CLI tests).
@Suite("Synced folders: file URLs between devices (C9)")
struct SyncedFoldersTests {
    static let laptop = SyncedFolders([try! SyncedFolder(id: "docs", path: "/home/me/Documents/Shared")])
    static let desktop = SyncedFolders([try! SyncedFolder(id: "docs", path: "/data/shared")])

    /// `url` as it leaves the laptop and arrives on the desktop.
    static func across(_ url: URL) -> SyncedFolders.Arrival {
        desktop.arriving(laptop.travelling(url))
    }

    @Test("C9: a file inside a folder travels as (id, relative path) and arrives in the other device's folder")
    func insideFolder() throws {
        let url = URL(fileURLWithPath: "/home/me/Documents/Shared/plans/2026.txt")
        let travelling = Self.laptop.travelling(url)
        #expect(travelling.absoluteString == "baton-folder://docs/plans/2026.txt")
        guard case .inFolder(let here, let folder, let relative) = Self.desktop.arriving(travelling) else {
            Issue.record("arrived as \(Self.desktop.arriving(travelling))")
            return
        }
        #expect(here == URL(fileURLWithPath: "/data/shared/plans/2026.txt"))
        #expect(here.isFileURL && folder.id == "docs" && relative == "plans/2026.txt")
        // The folder itself, and a folder inside it (a directory URL keeps its trailing slash).
        #expect(Self.across(URL(fileURLWithPath: "/home/me/Documents/Shared")) == .inFolder(url: URL(fileURLWithPath: "/data/shared", isDirectory: true), folder: try SyncedFolder(id: "docs", path: "/data/shared"), relativePath: ""))
        let subfolder = Self.laptop.travelling(URL(fileURLWithPath: "/home/me/Documents/Shared/plans", isDirectory: true))
        #expect(subfolder.absoluteString == "baton-folder://docs/plans/")
        guard case .inFolder(let arrived, _, _) = Self.desktop.arriving(subfolder) else {
            Issue.record("not in folder")
            return
        }
        #expect(arrived.hasDirectoryPath && arrived.path == "/data/shared/plans")
    }

    @Test("C9: paths are bytes: a non-ASCII folder name, a name starting with a combining mark, and a folder whose name is only canonically equal")
    func pathsAreBytes() throws {
        // A folder named with "é" (two bytes): the relative path was cut by the folder's byte count in Characters.
        let cafe = SyncedFolders([try SyncedFolder(id: "docs", path: "/home/me/Caf\u{E9} notes")])
        #expect(cafe.travelling(URL(fileURLWithPath: "/home/me/Caf\u{E9} notes/a.txt")).absoluteString == "baton-folder://docs/a.txt")
        // A file whose name starts with a combining mark: "/" and the mark are one Character, but the kernel splits at
        // the byte (found by the syncthing fuzzer).
        let marked = "\u{6ED}-"
        let arrived = Self.desktop.arriving(URL(string: "baton-folder://docs/%DB%AD-")!)
        #expect(arrived == .inFolder(url: URL(fileURLWithPath: "/data/shared/" + marked), folder: try SyncedFolder(id: "docs", path: "/data/shared"), relativePath: marked))
        #expect(SyncedFolders.relativePath(of: "/data/shared/" + marked, inside: "/data/shared") == marked)
        #expect(Self.desktop.travelling(URL(fileURLWithPath: "/data/shared/" + marked)).absoluteString == "baton-folder://docs/%DB%AD-")
        #expect(SyncedFolders.lexicallyStandardized("/data/shared/" + marked + "/../x") == "/data/shared/x")
        // "e" and a combining acute is another directory on disk than "é": not inside the folder.
        #expect(cafe.travelling(URL(fileURLWithPath: "/home/me/Cafe\u{301} notes/a.txt")).scheme == "file")
    }

    @Test("C9: a file outside every folder, a look-alike prefix, and other URLs pass unchanged")
    func outsideUnchanged() {
        for text in ["file:///home/me/Documents/SharedNot/x.txt", "file:///etc/hosts", "https://example.com/home/me/Documents/Shared/x", "mailto:me@example.com"] {
            let url = URL(string: text)!
            #expect(Self.laptop.travelling(url) == url, "\(text)")
            #expect(Self.desktop.arriving(url) == .unchanged, "\(text)")
        }
        #expect(SyncedFolders().travelling(URL(fileURLWithPath: "/home/me/Documents/Shared/a")) == URL(fileURLWithPath: "/home/me/Documents/Shared/a"), "no folders: nothing changes")
    }

    @Test("C9: nested userInfo (arrays, dictionaries, sets) and the document URL key are rewritten; other values are not")
    func nestedUserInfo() throws {
        let inside = URL(fileURLWithPath: "/home/me/Documents/Shared/a.txt")
        let outside = URL(fileURLWithPath: "/tmp/b.txt")
        let userInfo: [String: PropertyList] = [
            "NSUserActivityDocumentURL": .url(inside),
            "list": .array([.url(inside), .string("file:///home/me/Documents/Shared/a.txt"), .dictionary(["deep": .url(outside)])]),
            "set": .set([.url(inside)]),
            "count": 3,
        ]
        var payload = try ActivityPayload(activityType: "com.example.notes.document")
        payload.userInfo = userInfo
        let travelling = Self.laptop.travelling(payload)
        let form = PropertyList.url(URL(string: "baton-folder://docs/a.txt")!)
        #expect(travelling.userInfo["NSUserActivityDocumentURL"] == form)
        #expect(travelling.userInfo["list"] == .array([form, .string("file:///home/me/Documents/Shared/a.txt"), .dictionary(["deep": .url(outside)])]), "strings are not URLs")
        #expect(travelling.userInfo["set"] == .set([form]))
        #expect(travelling.userInfo["count"] == 3)
        // Through the wire encoding and back, as the agents do.
        let decoded = try ActivityPayload(decoding: travelling.encoded())
        let arrived = Self.desktop.arriving(.dictionary(decoded.userInfo))
        let here = PropertyList.url(URL(fileURLWithPath: "/data/shared/a.txt"))
        #expect(arrived.value["NSUserActivityDocumentURL"] == here)
        let foreign = PropertyList.url(URL(string: "baton-foreign:file:///tmp/b.txt")!)
        #expect(arrived.value["list"] == .array([here, .string("file:///home/me/Documents/Shared/a.txt"), .dictionary(["deep": foreign])]))
        #expect(arrived.documents.count == 3 && arrived.documents.allSatisfy { $0.relativePath == "a.txt" })
        #expect(arrived.unknown.isEmpty && arrived.invalid.isEmpty)
        #expect(arrived.foreign == [outside], "the file outside every folder is the other device's (issue 25 item 2)")
    }

    @Test("issue 25 item 2, C9, B6: a file URL outside every folder arrives in foreign form, at any depth; the library's unmarking gives back the URL as it came and lists it")
    func foreignFileURLsAreMarked() throws {
        let secret = URL(fileURLWithPath: "/etc/app/config")
        let upper = try #require(URL(string: "FILE:///home/me/.ssh/id_ed25519"))
        let web = try #require(URL(string: "https://example.com/a"))
        let userInfo: PropertyList = .dictionary([
            "NSUserActivityDocumentURL": .url(secret),
            "nested": .array([.set([.url(upper)]), .dictionary(["web": .url(web)])]),
        ])
        for folders in [Self.desktop, SyncedFolders()] {
            let arrived = folders.arriving(userInfo)
            #expect(Set(arrived.foreign) == [secret, upper], "with \(folders.folders.count) folders")
            #expect(arrived.value["NSUserActivityDocumentURL"] == .url(URL(string: "baton-foreign:file:///etc/app/config")!))
            // No file: URL is left in what the app is handed.
            #expect(!"\(arrived.value)".contains("url(file:"), "\(arrived.value)")
            let (unmarked, foreign) = SyncedFolders.unmarkingForeign(arrived.value)
            #expect(unmarked == userInfo, "the app sees the URLs unchanged (C9)")
            #expect(foreign == [secret, upper])
        }
        // A peer cannot make a file URL pass as local by sending the foreign form itself: it stays foreign, and a
        // foreign form of something other than a file URL stays marked.
        let forged = try #require(URL(string: "baton-foreign:https://example.com/x"))
        let (value, foreign) = SyncedFolders.unmarkingForeign(.array([.url(forged)]))
        #expect(value == .array([.url(forged)]) && foreign == [forged])
    }

    @Test("issue 26 item 5, C9: a state without a URL arrives and is unmarked as it came, with nothing to report; a URL at any depth is still found")
    func stateWithoutURLsArrivesAsItCame() throws {
        let items: [PropertyList] = (0..<40).map { index in
            .dictionary(["name": .string("item \(index)"), "file": .string("file:///etc/passwd"), "tags": .set([1, 2]), "when": .date(Date(timeIntervalSinceReferenceDate: 7e8))])
        }
        let userInfo = PropertyList.dictionary(["items": .array(items), "blob": .data(Data("file:".utf8)), "none": .null])
        for folders in [Self.desktop, SyncedFolders()] {
            let arrived = folders.arriving(userInfo)
            #expect(arrived.value == userInfo, "strings and data are not URLs")
            #expect(arrived.documents.isEmpty && arrived.unknown.isEmpty && arrived.invalid.isEmpty && arrived.foreign.isEmpty)
        }
        #expect(SyncedFolders.unmarkingForeign(userInfo) == (userInfo, []))
        // One URL, deep in a set inside an array inside a dictionary, and the whole value is walked as before.
        let secret = URL(fileURLWithPath: "/etc/app/config")
        var deep = items
        deep.append(.dictionary(["inner": .set([.url(secret)])]))
        let arrived = Self.desktop.arriving(.dictionary(["items": .array(deep)]))
        #expect(arrived.foreign == [secret])
        #expect(SyncedFolders.unmarkingForeign(arrived.value).foreign == [secret])
    }

    @Test("C9: overlapping folders: the longest matching path wins, on both sides")
    func longestPrefix() throws {
        let laptop = SyncedFolders([
            try SyncedFolder(id: "home", path: "/home/me"), try SyncedFolder(id: "photos", path: "/home/me/Pictures/Camera"),
        ])
        #expect(laptop.travelling(URL(fileURLWithPath: "/home/me/Pictures/Camera/1.jpg")).absoluteString == "baton-folder://photos/1.jpg")
        #expect(laptop.travelling(URL(fileURLWithPath: "/home/me/Pictures/other.jpg")).absoluteString == "baton-folder://home/Pictures/other.jpg")
        #expect(laptop.folder(containing: "/home/me/Pictures/Camera")?.folder.id == "photos")
    }

    @Test("C9, security: `..`, `.` and encoded slashes never leave the folder; on the way out `..` is resolved first")
    func dotDotNeverEscapes() {
        // Arriving: a peer (or a bug) sends paths that would climb out.
        for text in [
            "baton-folder://docs/../../etc/passwd", "baton-folder://docs/a/../../x", "baton-folder://docs/%2E%2E/etc/passwd",
            "baton-folder://docs/a%2F..%2F..%2Fetc", "baton-folder://docs/./a", "baton-folder://docs//a", "baton-folder://docs/a%00b",
            "baton-folder://../etc",
        ] {
            guard let url = URL(string: text) else { continue }
            guard case .invalid = Self.desktop.arriving(url) else {
                Issue.record("\(text) arrived as \(Self.desktop.arriving(url))")
                continue
            }
        }
        // A stray '%' is not an escape: URL(string:) encodes it, and it names a file called "a%zz".
        #expect(Self.desktop.arriving(URL(string: "baton-folder://docs/a%zz")!) == .inFolder(url: URL(fileURLWithPath: "/data/shared/a%zz"), folder: try! SyncedFolder(id: "docs", path: "/data/shared"), relativePath: "a%zz"))
        // Leaving: a path with `..` that only looks inside is standardized before matching, so it travels unchanged.
        let sneaky = URL(fileURLWithPath: "/home/me/Documents/Shared/../../../etc/passwd")
        #expect(Self.laptop.travelling(sneaky) == sneaky)
        let inside = URL(fileURLWithPath: "/home/me/Documents/Shared/a/../b.txt")
        #expect(Self.laptop.travelling(inside).absoluteString == "baton-folder://docs/b.txt")
    }

    @Test("issue 25 item 7, C9: only the lower-case scheme is the travel form, the bytes the continuing agent looks for")
    func schemeCaseMatchesTheAgentsByteCheck() throws {
        // The continuing agent used to decode a state only when it held the bytes `baton-folder:`; a parser that took
        // other cases resolved (or refused) URLs that agent never looked at. Other cases are ordinary URLs (and since
        // issue 25 item 2 every state is decoded on arrival).
        for text in ["BATON-FOLDER://docs/a.txt", "Baton-Folder://docs/plans/2026.txt", "BATON-FOLDER://docs/../../etc/passwd"] {
            let url = try #require(URL(string: text))
            #expect(Self.desktop.arriving(url) == .unchanged, "\(text)")
            let arrived = Self.desktop.arriving(.url(url))
            #expect(arrived.value == .url(url) && arrived.documents.isEmpty && arrived.invalid.isEmpty, "\(text)")
        }
        #expect(Self.desktop.arriving(URL(string: "baton-folder://docs/a.txt")!) != .unchanged)
    }

    @Test("C9: names with spaces, percent signs, '#', '?' and non-ASCII letters are percent-encoded and arrive intact")
    func percentEncoding() throws {
        for name in ["a b.txt", "100%.txt", "what?#.txt", "Grüße/été 2026.md", "semi;colon&amp=1", "%2F.txt"] {
            let url = URL(fileURLWithPath: "/home/me/Documents/Shared/" + name)
            let travelling = Self.laptop.travelling(url)
            #expect(travelling.scheme == "baton-folder", "\(name): \(travelling)")
            guard case .inFolder(let here, _, let relative) = Self.desktop.arriving(travelling) else {
                Issue.record("\(name) arrived as \(Self.desktop.arriving(travelling))")
                continue
            }
            #expect(relative == name && here.path == "/data/shared/" + name, "\(name)")
        }
        #expect(Self.laptop.travelling(URL(fileURLWithPath: "/home/me/Documents/Shared/a b.txt")).absoluteString == "baton-folder://docs/a%20b.txt")
    }

    @Test("C9: symbolic links: a path through a link to the folder is found by the resolved path the agent passes")
    func symbolicLinks() {
        // /home/me/Docs is a link to /home/me/Documents/Shared: the lexical path is in no folder, the resolved one is.
        let url = URL(fileURLWithPath: "/home/me/Docs/a.txt")
        let resolve: (String) -> String? = { $0.replacingOccurrences(of: "/home/me/Docs", with: "/home/me/Documents/Shared") }
        #expect(Self.laptop.travelling(url, resolve: resolve).absoluteString == "baton-folder://docs/a.txt")
        #expect(Self.laptop.travelling(url) == url, "without resolving, it is outside every folder")
        // A path already inside a folder is not resolved (a link inside the folder stays a link in the folder).
        let link = URL(fileURLWithPath: "/home/me/Documents/Shared/link-to-etc")
        #expect(Self.laptop.travelling(link, resolve: { _ in "/etc" }).absoluteString == "baton-folder://docs/link-to-etc")
    }

    @Test("C9: a folder the continuing device does not have is reported by id, and the URL is left as it came")
    func unknownFolder() {
        let url = URL(string: "baton-folder://photos/2026/beach.jpg")!
        #expect(Self.desktop.arriving(url) == .unknownFolder(id: "photos", relativePath: "2026/beach.jpg"))
        let arrived = Self.desktop.arriving(.array([.url(url)]))
        #expect(arrived.unknown == [SyncedFolders.UnknownFolderURL(id: "photos", relativePath: "2026/beach.jpg")])
        #expect(arrived.value == .array([.url(url)]) && arrived.documents.isEmpty)
    }

    @Test("folder ids: 1-64 of A-Za-z0-9._-; Syncthing's ids pass; paths must be absolute")
    func folderIDs() {
        for id in ["docs", "abcd1-xyz23", "My_Folder.2", String(repeating: "a", count: 64), "default"] {
            #expect((try? SyncedFolder.validate(id: id)) != nil, "\(id)")
        }
        for id in ["", ".", "..", "a/b", "a b", "ü", String(repeating: "a", count: 65), "a%2F"] {
            #expect(throws: BatonProtocolError.self, "\(id)") { try SyncedFolder.validate(id: id) }
        }
        #expect(throws: BatonProtocolError.self) { try SyncedFolder(id: "docs", path: "relative/path") }
        #expect((try? SyncedFolder(id: "docs", path: "/data//shared/./x/../"))?.path == "/data/shared")
    }

    @Test("docs/PROTOCOL.md §3.1 test vector: a payload with a document in folder docs, as it travels")
    func protocolVector() throws {
        var payload = try ActivityPayload(activityType: "com.example.notes.document")
        payload.userInfo = ["NSUserActivityDocumentURL": .url(URL(fileURLWithPath: "/home/me/Documents/Shared/Plans/été 1.note"))]
        let travelling = Self.laptop.travelling(payload)
        #expect(travelling.userInfo["NSUserActivityDocumentURL"] == .url(URL(string: "baton-folder://docs/Plans/%C3%A9t%C3%A9%201.note")!))
        let hex = try travelling.encoded().map { String(format: "%02x", $0) }.joined()
        #expect(hex == Self.vector, "\(hex)")
    }

    static let vector = "62706c6973743030d301030702040854747970655f101a636f6d2e6578616d706c652e6e6f7465732e646f63756d656e745875736572496e666fd105065f10194e53557365724163746976697479446f63756d656e7455524c0c5f10306261746f6e2d666f6c6465723a2f2f646f63732f506c616e732f25433325413974254333254139253230312e6e6f746551761001080f14313a3d598d8f0000000000000101000000000000000900000000000000000000000000000091"
}
