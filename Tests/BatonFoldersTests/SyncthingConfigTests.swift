import BatonFolders
import Foundation
import Testing

/// The reader of Syncthing's `config.xml` behind `baton folders syncthing` (C9): real files, escapes, the named
/// limits, and garbage (hostile input gets an error, never a trap; Fuzz/SyncthingConfigFuzzer.swift runs it longer).
@Suite("Syncthing config.xml reader (C9)")
struct SyncthingConfigTests {
    /// The seed in Fuzz/corpus-syncthing: what `syncthing generate` wrote (v1.x), with a second folder added whose
    /// label and path use every kind of escape.
    static func realConfig() throws -> Data {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try Data(contentsOf: root.appendingPathComponent("Fuzz/corpus-syncthing/config.xml"))
    }

    @Test("a generated config: its folders in order, the <defaults> template left out, entities unescaped")
    func realFile() throws {
        let config = try SyncthingConfig.decode(Self.realConfig())
        #expect(config.folders.map(\.id) == ["default", "abcd1-xyz23"])
        #expect(config.folders[0].path == "/home/alex/Sync" && config.folders[0].label == "Default Folder" && !config.folders[0].paused)
        #expect(config.folders[1].label == "Tom & Jerry's \"notes\" <2026> été")
        #expect(config.folders[1].path == "~/Notes & Plans")
    }

    @Test("single quotes, self-closing folders, comments, CDATA and a doctype are read or skipped")
    func shapes() throws {
        let text = """
            <?xml version="1.0"?><!DOCTYPE configuration><!-- <folder id="no" path="/no"> -->
            <configuration version='37'><folder id='a' path='/x' paused="true"/><gui><![CDATA[<folder id="no">]]></gui>
            <folder
              id="b" path="/y&#47;z"></folder></configuration>
            """
        let config = try SyncthingConfig.decode(Data(text.utf8))
        #expect(config.folders.map(\.id) == ["a", "b"] && config.folders[0].paused && config.folders[1].path == "/y/z")
    }

    @Test("malformed files: typed errors naming what is wrong")
    func malformed() {
        let cases = [
            "", "<configuration>", "<configuration></folder>", "<configuration><folder id=\"a\"></configuration>",
            "<configuration><folder id=\"a\" path=\"/x\" id=\"b\"/></configuration>", "<configuration><folder id=a/></configuration>",
            "<configuration><folder id=\"a&bogus;\" path=\"/\"/></configuration>", "<configuration><folder id=\"a\" path=\"/x&#0;\"/></configuration>",
            "<configuration><folder id=\"a\"/></configuration>", "<configuration/><configuration/>", "<!-- never ends", "text only",
            "<configuration><folder id=\"<\" path=\"/\"/></configuration>",
        ]
        for text in cases {
            #expect(throws: SyncthingConfigError.self, "\(text)") {
                do {
                    _ = try SyncthingConfig.decode(Data(text.utf8))
                } catch let error as SyncthingConfigError {
                    #expect(error.code == .malformed, "\(text): \(error)")
                    throw error
                }
            }
        }
    }

    @Test("the named limits: file size, folder count, attribute length, attributes, depth")
    func limits() {
        let small = SyncthingConfigLimits(maximumBytes: 300, maximumFolders: 2, maximumAttributeLength: 16, maximumAttributes: 3, maximumDepth: 3)
        let cases = [
            "<configuration>" + String(repeating: " ", count: 300) + "</configuration>",
            "<configuration>" + String(repeating: "<folder id=\"a\" path=\"/\"/>", count: 3) + "</configuration>",
            "<configuration><folder id=\"a\" path=\"/\(String(repeating: "x", count: 17))\"/></configuration>",
            "<configuration><folder id=\"a\" path=\"/\(String(repeating: "&amp;", count: 17))\"/></configuration>",
            "<configuration><folder id=\"a\" path=\"/\" b=\"1\" c=\"2\"/></configuration>",
            "<configuration><a><b><c></c></b></a></configuration>",
        ]
        for text in cases {
            #expect(throws: SyncthingConfigError.self, "\(text)") {
                do {
                    _ = try SyncthingConfig.decode(Data(text.utf8), limits: small)
                } catch let error as SyncthingConfigError {
                    #expect(error.code == .tooLarge, "\(text): \(error)")
                    throw error
                }
            }
        }
        #expect((try? SyncthingConfig.decode(Data("<configuration><folder id=\"a\" path=\"/x\"/></configuration>".utf8), limits: small))?.folders.count == 1)
    }

    @Test("garbage: 3,000 mutations of a real config and random bytes end in folders or a typed error, never a trap")
    func garbage() throws {
        let real = try [UInt8](Self.realConfig())
        var generator = SystemRandomNumberGenerator()
        var read = 0
        for round in 0..<3_000 {
            var bytes: [UInt8]
            if round % 10 == 0 {
                bytes = (0..<Int.random(in: 0..<512, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                bytes = real
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: bytes[index] = UInt8.random(in: 0...255, using: &generator)
                    case 1: bytes.remove(at: index)
                    case 2: bytes.insert(Array("<>&\"'/;#x".utf8).randomElement(using: &generator) ?? 0, at: index)
                    default: bytes = Array(bytes[..<index])
                    }
                    if bytes.isEmpty { break }
                }
            }
            do {
                let config = try SyncthingConfig.decode(Data(bytes))
                read += 1
                #expect(config.folders.count <= SyncthingConfigLimits.default.maximumFolders)
            } catch is SyncthingConfigError {
                continue
            }
        }
        #expect(read > 0, "some mutations stay readable")
    }
}
